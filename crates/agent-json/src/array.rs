//! [`Array`]: a JSON array's items, in order.

use std::ops::{Deref, DerefMut};

use super::Value;
use super::held::Held;

/// A JSON array: its items in order, read and changed as the `Vec<Value>`
/// it dereferences to (`items.len()`, `items.push(…)`, `&items[..]`).
///
/// ```
/// use agent_json::{Array, Value};
/// let mut items = Array::from(vec![Value::from(1)]);
/// items.push(Value::from(2));
/// assert_eq!(items.len(), 2);
/// let back: Vec<Value> = items.into_vec();
/// assert_eq!(back, [Value::from(1), Value::from(2)]);
/// ```
///
/// An array the reader found nested 16 or more containers deep is kept
/// as its text until something asks for its items (D86: held arrays): reading them
/// builds them once; changing them makes the array an ordinary one.
#[derive(Clone)]
pub struct Array(Items);

#[derive(Clone)]
enum Items {
    Built(Vec<Value>),
    /// Items not read yet, or read and kept beside the text.
    Held(Box<Held<Vec<Value>>>),
}

impl Array {
    /// An empty array.
    pub fn new() -> Array {
        Array(Items::Built(Vec::new()))
    }

    /// An empty array with room for `capacity` items.
    pub fn with_capacity(capacity: usize) -> Array {
        Array(Items::Built(Vec::with_capacity(capacity)))
    }

    /// True when the array has no items; a held array's is told from its
    /// text, without reading it.
    pub fn is_empty(&self) -> bool {
        match &self.0 {
            Items::Built(items) => items.is_empty(),
            Items::Held(held) => held.is_empty(),
        }
    }

    /// The items, owned.
    pub fn into_vec(self) -> Vec<Value> {
        match self.0 {
            Items::Built(items) => items,
            Items::Held(held) => held.into_members(),
        }
    }

    /// An array held as its text `[…]`, which the reader has just read as
    /// a nonempty array `depth` containers deep (`None`: not known),
    /// `compact` or not (D86: held arrays).
    pub(crate) fn held(text: &str, compact: bool, depth: Option<usize>) -> Array {
        Array(Items::Held(Box::new(Held::new(text, compact, depth))))
    }

    fn held_part(&self) -> Option<&Held<Vec<Value>>> {
        match &self.0 {
            Items::Held(held) => Some(held),
            Items::Built(_) => None,
        }
    }

    /// How deep a held array nests, itself the first; `None` for any
    /// other array, and for a held one holding a repeated key.
    pub(crate) fn held_depth(&self) -> Option<usize> {
        self.held_part().and_then(Held::depth)
    }

    /// A held array's compact text and depth, while it is unread.
    pub(crate) fn compact_text(&self) -> Option<(&str, usize)> {
        self.held_part().and_then(Held::compact_text)
    }

    /// A held array's items read into an array of their own, when they
    /// have not been read in place: for a writer that drops them once
    /// written. `None` for any other array.
    pub(crate) fn read_apart(&self) -> Option<Array> {
        self.held_part()
            .and_then(Held::read_apart)
            .map(|items| Array(Items::Built(items)))
    }

    /// True for a held array whose items have not been read.
    pub(crate) fn is_unread(&self) -> bool {
        self.held_part().is_some_and(|held| held.is_unread())
    }
}

impl Default for Array {
    fn default() -> Array {
        Array::new()
    }
}

impl Deref for Array {
    type Target = Vec<Value>;
    /// The items; a held array's read on first use and kept.
    fn deref(&self) -> &Vec<Value> {
        match &self.0 {
            Items::Built(items) => items,
            Items::Held(held) => held.members(),
        }
    }
}

impl DerefMut for Array {
    /// The items to change: a held array becomes an ordinary one.
    fn deref_mut(&mut self) -> &mut Vec<Value> {
        if let Items::Held(_) = self.0 {
            let items = std::mem::take(self).into_vec();
            self.0 = Items::Built(items);
        }
        match &mut self.0 {
            Items::Built(items) => items,
            // Made ordinary just above (as `Cow::to_mut` does).
            Items::Held(_) => unreachable!("a held array was made ordinary"),
        }
    }
}

impl From<Vec<Value>> for Array {
    fn from(items: Vec<Value>) -> Array {
        Array(Items::Built(items))
    }
}

impl From<Array> for Vec<Value> {
    fn from(items: Array) -> Vec<Value> {
        items.into_vec()
    }
}

/// Equal when they hold equal items in the same order.
impl PartialEq for Array {
    fn eq(&self, other: &Array) -> bool {
        **self == **other
    }
}
impl Eq for Array {}

impl PartialEq<Vec<Value>> for Array {
    fn eq(&self, other: &Vec<Value>) -> bool {
        **self == *other
    }
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl FromIterator<Value> for Array {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Array {
        Array(Items::Built(iter.into_iter().collect()))
    }
}

impl Extend<Value> for Array {
    fn extend<I: IntoIterator<Item = Value>>(&mut self, iter: I) {
        (**self).extend(iter);
    }
}

impl IntoIterator for Array {
    type Item = Value;
    type IntoIter = std::vec::IntoIter<Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Array {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Array {
    type Item = &'a mut Value;
    type IntoIter = std::slice::IterMut<'a, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}
