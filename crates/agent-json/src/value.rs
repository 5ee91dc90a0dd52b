//! [`Value`]: one JSON value, exact and ordered.

use super::{Array, Map, Number};

/// Any JSON value: numbers exact ([`Number`]), object members in written
/// order ([`Map`]). 32 bytes, a third of serde_json's value with its exact
/// and ordered features; an integer that fits `i64` costs nothing more.
///
/// The accessors are serde_json's, so code reads the same.
///
/// ```
/// use agent_json::{self as json, Value};
/// let value = json::from_str(r#"{"user": {"name": "Alex", "ids": [1, 2]}}"#)?;
/// assert_eq!(value["user"]["name"], "Alex");
/// assert_eq!(value["user"]["ids"][1].as_i64(), Some(2));
/// assert!(value["user"]["missing"].is_null());
/// assert_eq!(value.pointer("/user/ids/0"), Some(&Value::from(1)));
/// # Ok::<(), json::ParseError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Value {
    /// `null`.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, exactly as written.
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Array),
    /// An object.
    Object(Map),
}

static NULL: Value = Value::Null;

impl Value {
    /// True for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    /// True for `true` and `false`.
    pub fn is_boolean(&self) -> bool {
        matches!(self, Value::Bool(_))
    }
    /// True for a number.
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Number(_))
    }
    /// True for a string.
    pub fn is_string(&self) -> bool {
        matches!(self, Value::String(_))
    }
    /// True for an array.
    pub fn is_array(&self) -> bool {
        matches!(self, Value::Array(_))
    }
    /// True for an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }
    /// True for a number that fits `i64` ([`Number::as_i64`]).
    pub fn is_i64(&self) -> bool {
        self.as_number().is_some_and(Number::is_i64)
    }
    /// True for a number that fits `u64` ([`Number::as_u64`]).
    pub fn is_u64(&self) -> bool {
        self.as_number().is_some_and(Number::is_u64)
    }
    /// True for a number that is neither ([`Number::is_f64`]).
    pub fn is_f64(&self) -> bool {
        self.as_number().is_some_and(Number::is_f64)
    }

    /// `Some(())` for `null`.
    pub fn as_null(&self) -> Option<()> {
        self.is_null().then_some(())
    }
    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// The number, if this is one.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }
    /// The number as `i64` ([`Number::as_i64`]).
    pub fn as_i64(&self) -> Option<i64> {
        self.as_number().and_then(Number::as_i64)
    }
    /// The number as `u64` ([`Number::as_u64`]).
    pub fn as_u64(&self) -> Option<u64> {
        self.as_number().and_then(Number::as_u64)
    }
    /// The number as `f64` ([`Number::as_f64`]).
    pub fn as_f64(&self) -> Option<f64> {
        self.as_number().and_then(Number::as_f64)
    }
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    /// The array, if this is one.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The array, mutably, if this is one.
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }
    /// The object, mutably, if this is one.
    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// A member of an object (`&str`) or an element of an array (`usize`);
    /// `None` when there is none.
    pub fn get<I: Index>(&self, index: I) -> Option<&Value> {
        index.index_into(self)
    }

    /// As [`get`](Self::get), mutably.
    pub fn get_mut<I: Index>(&mut self, index: I) -> Option<&mut Value> {
        index.index_into_mut(self)
    }

    /// The value at a JSON Pointer (RFC 6901: `/a/0`, `~1` for `/`, `~0`
    /// for `~`); `""` is the value itself.
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').try_fold(self, |value, token| {
            let token = token.replace("~1", "/").replace("~0", "~");
            match value {
                Value::Object(map) => map.get(&token),
                Value::Array(items) => pointer_index(&token).and_then(|i| items.get(i)),
                _ => None,
            }
        })
    }

    /// The JSON type's name, as errors say it: `null`, `a boolean`, …
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }

    /// Takes the value out, leaving `null`.
    pub fn take(&mut self) -> Value {
        std::mem::take(self)
    }

    /// A held container's compact text and depth, while it is unread
    /// (D85: held objects; D86: held arrays): a writer can copy it instead of reading it.
    pub(crate) fn held_compact_text(&self) -> Option<(&str, usize)> {
        match self {
            Value::Array(items) => items.compact_text(),
            Value::Object(map) => map.compact_text(),
            _ => None,
        }
    }

    /// How deep a held container nests, itself the first, when known.
    pub(crate) fn held_depth(&self) -> Option<usize> {
        match self {
            Value::Array(items) => items.held_depth(),
            Value::Object(map) => map.held_depth(),
            _ => None,
        }
    }

    /// A held container read into a value of its own, when it has not
    /// been read in place: for a writer that drops it once written.
    pub(crate) fn read_apart(&self) -> Option<Value> {
        match self {
            Value::Array(items) => items.read_apart().map(Value::Array),
            Value::Object(map) => map.read_apart().map(Value::Object),
            _ => None,
        }
    }

    /// True for a held container not read yet.
    pub(crate) fn is_unread(&self) -> bool {
        match self {
            Value::Array(items) => items.is_unread(),
            Value::Object(map) => map.is_unread(),
            _ => false,
        }
    }
}

/// Drops `value` without recursion, however deep it nests: its arrays and
/// objects are taken apart on a heap stack first.
pub fn drop_deep(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            // An unread held container is its text: nothing to take apart.
            value if value.is_unread() => {}
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// An array index as a JSON Pointer writes it: digits, no leading zero.
fn pointer_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

/// What [`Value::get`] and `value[…]` accept: `&str` for objects, `usize`
/// for arrays. Sealed.
pub trait Index: private::Sealed {
    #[doc(hidden)]
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value>;
    #[doc(hidden)]
    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value>;
    #[doc(hidden)]
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value;
}

mod private {
    pub trait Sealed {}
    impl Sealed for usize {}
    impl Sealed for str {}
    impl Sealed for String {}
    impl<T: Sealed + ?Sized> Sealed for &T {}
}

impl Index for usize {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        value.as_array().and_then(|a| a.get(*self))
    }
    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        value.as_array_mut().and_then(|a| a.get_mut(*self))
    }
    #[allow(clippy::panic)] // `IndexMut`'s contract, as a slice's and serde_json's
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        match value {
            Value::Array(items) => {
                let len = items.len();
                match items.get_mut(*self) {
                    Some(item) => item,
                    None => panic!("cannot access index {self} of JSON array of length {len}"),
                }
            }
            other => panic!("cannot access index {self} of JSON {}", other.type_name()),
        }
    }
}

impl Index for str {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        value.as_object().and_then(|m| m.get(self))
    }
    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        value.as_object_mut().and_then(|m| m.get_mut(self))
    }
    #[allow(clippy::panic)] // `IndexMut`'s contract, as serde_json's
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        if value.is_null() {
            *value = Value::Object(Map::new());
        }
        match value {
            Value::Object(map) => map.get_or_insert_with(self.to_owned(), || Value::Null),
            other => panic!("cannot access key {self:?} in JSON {}", other.type_name()),
        }
    }
}

impl Index for String {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        self.as_str().index_into(value)
    }
    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        self.as_str().index_into_mut(value)
    }
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        self.as_str().index_or_insert(value)
    }
}

impl<T: Index + ?Sized> Index for &T {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        (**self).index_into(value)
    }
    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        (**self).index_into_mut(value)
    }
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        (**self).index_or_insert(value)
    }
}

/// `value["key"]`, `value[0]`: `null` where there is nothing, never a
/// panic.
impl<I: Index> std::ops::Index<I> for Value {
    type Output = Value;
    fn index(&self, index: I) -> &Value {
        index.index_into(self).unwrap_or(&NULL)
    }
}

/// `value["key"] = …`, as serde_json's: a missing key is inserted as
/// `null`, and `null` becomes an object first.
///
/// # Panics
///
/// On a key into anything but an object or `null`, and on an index into
/// anything but an array or past its end, as a slice does. Library code
/// uses [`Value::get_mut`] and [`Map::entry`], which cannot panic.
impl<I: Index> std::ops::IndexMut<I> for Value {
    fn index_mut(&mut self, index: I) -> &mut Value {
        index.index_or_insert(self)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
impl From<Number> for Value {
    fn from(n: Number) -> Value {
        Value::Number(n)
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_owned())
    }
}
impl From<Map> for Value {
    fn from(m: Map) -> Value {
        Value::Object(m)
    }
}
impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(items: Vec<T>) -> Value {
        Value::Array(items.into_iter().map(Into::into).collect())
    }
}
impl From<()> for Value {
    fn from((): ()) -> Value {
        Value::Null
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(option: Option<T>) -> Value {
        option.map_or(Value::Null, Into::into)
    }
}
/// A non-finite float becomes `null`, as serde_json's `json!` does.
impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// A non-finite float becomes `null`; a finite one is written as the
/// shortest text that reads back as that `f32`.
impl From<f32> for Value {
    fn from(f: f32) -> Value {
        Number::from_f32(f).map_or(Value::Null, Value::Number)
    }
}

macro_rules! from_integer {
    ($($t:ty)*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Value {
                Value::Number(Number::from(n))
            }
        }
        impl PartialEq<$t> for Value {
            fn eq(&self, other: &$t) -> bool {
                // As serde_json compares: by value, so `-0 == 0`.
                match i64::try_from(*other) {
                    Ok(n) => self.as_i64() == Some(n),
                    Err(_) => u64::try_from(*other).is_ok_and(|n| self.as_u64() == Some(n)),
                }
            }
        }
    )*};
}
from_integer!(i8 i16 i32 i64 isize u8 u16 u32 u64 usize);

impl<T: Into<Value>> FromIterator<T> for Value {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Value {
        Value::Array(iter.into_iter().map(Into::into).collect())
    }
}

impl PartialEq<str> for Value {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}
impl PartialEq<&str> for Value {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}
impl PartialEq<String> for Value {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == Some(other.as_str())
    }
}
impl PartialEq<bool> for Value {
    fn eq(&self, other: &bool) -> bool {
        self.as_bool() == Some(*other)
    }
}
