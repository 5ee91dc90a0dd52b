//! serde for a held container's compact text, without building it (D85:
//! held objects; D86: held arrays): the same calls to the serializer, in the same order, as the
//! container read into a value would make, driven by one pass over the
//! text that finds where each container ends.

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

/// A held container's compact text and, for each of its containers in the
/// order they open, where it ends, how many members or items it has, and
/// the number of containers opened before it ends.
pub(crate) struct Outline<'t> {
    text: &'t str,
    containers: Vec<Container>,
}

#[derive(Clone, Copy, Default)]
struct Container {
    /// The byte after its `}` or `]`.
    end: usize,
    members: usize,
    /// The position in `containers` of the first container after it.
    after: usize,
}

impl<'t> Outline<'t> {
    /// The outline of `text`, compact JSON text the reader accepted.
    pub(crate) fn new(text: &'t str) -> Outline<'t> {
        let bytes = text.as_bytes();
        let mut containers: Vec<Container> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        let mut at = 0;
        while let Some(&byte) = bytes.get(at) {
            at += 1;
            match byte {
                b'"' => at = string_end(bytes, at),
                b'{' | b'[' => {
                    let empty = matches!(bytes.get(at), Some(b'}' | b']'));
                    open.push(containers.len());
                    containers.push(Container {
                        members: usize::from(!empty),
                        ..Container::default()
                    });
                }
                b',' => {
                    if let Some(c) = open.last().and_then(|&k| containers.get_mut(k)) {
                        c.members += 1;
                    }
                }
                b'}' | b']' => {
                    let after = containers.len();
                    if let Some(c) = open.pop().and_then(|k| containers.get_mut(k)) {
                        c.end = at;
                        c.after = after;
                    }
                }
                _ => {}
            }
        }
        Outline { text, containers }
    }

    /// The whole container, to serialise.
    pub(crate) fn root(&self) -> Node<'_, 't> {
        Node {
            outline: self,
            start: 0,
            container: 0,
        }
    }
}

/// The byte after the string whose content starts at `at`.
fn string_end(bytes: &[u8], mut at: usize) -> usize {
    while let Some(&byte) = bytes.get(at) {
        at += if byte == b'\\' { 2 } else { 1 };
        if byte == b'"' {
            break;
        }
    }
    at
}

/// One container of an [`Outline`]: where it starts, and its position.
pub(crate) struct Node<'o, 't> {
    outline: &'o Outline<'t>,
    start: usize,
    container: usize,
}

/// One value inside a container: a container, or a scalar's text.
enum Item<'o, 't> {
    Container(Node<'o, 't>),
    Scalar(&'t str),
}

impl<'o, 't> Node<'o, 't> {
    fn text(&self, range: std::ops::Range<usize>) -> Option<&'t str> {
        self.outline.text.get(range)
    }

    /// The value starting at `at`, the first container at or after it
    /// being `next`; with where it ends and the next container after it.
    fn item(&self, at: usize, next: usize) -> Option<(Item<'o, 't>, usize, usize)> {
        let bytes = self.outline.text.as_bytes();
        match bytes.get(at)? {
            b'{' | b'[' => {
                let c = self.outline.containers.get(next)?;
                let node = Node {
                    outline: self.outline,
                    start: at,
                    container: next,
                };
                Some((Item::Container(node), c.end, c.after))
            }
            b'"' => {
                let end = string_end(bytes, at + 1);
                Some((Item::Scalar(self.text(at..end)?), end, next))
            }
            _ => {
                let len = bytes
                    .get(at..)?
                    .iter()
                    .position(|b| matches!(b, b',' | b'}' | b']'))?;
                Some((Item::Scalar(self.text(at..at + len)?), at + len, next))
            }
        }
    }
}

impl Serialize for Item<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Item::Container(node) => node.serialize(serializer),
            // A scalar is read as the reader reads it, and written as such.
            Item::Scalar(text) => super::from_str(text)
                .map_err(S::Error::custom)?
                .serialize(serializer),
        }
    }
}

impl Serialize for Node<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let broken = || S::Error::custom("a held container's text is not what was read");
        let c = *self
            .outline
            .containers
            .get(self.container)
            .ok_or_else(broken)?;
        let bytes = self.outline.text.as_bytes();
        let object = bytes.get(self.start) == Some(&b'{');
        // Past the opening; containers inside start after this one.
        let (mut at, mut next) = (self.start + 1, self.container + 1);
        if object {
            let mut map = serializer.serialize_map(Some(c.members))?;
            for _ in 0..c.members {
                let key_end = string_end(bytes, at + 1);
                let quoted = self.text(at..key_end).ok_or_else(broken)?;
                let (item, end, after) = self.item(key_end + 1, next).ok_or_else(broken)?;
                // A key without escapes is its text between the quotes.
                match quoted.get(1..quoted.len().saturating_sub(1)) {
                    Some(key) if !key.contains('\\') => map.serialize_entry(key, &item)?,
                    _ => {
                        let key = super::from_str(quoted).map_err(S::Error::custom)?;
                        map.serialize_entry(&key, &item)?;
                    }
                }
                (at, next) = (end + 1, after);
            }
            map.end()
        } else {
            let mut seq = serializer.serialize_seq(Some(c.members))?;
            for _ in 0..c.members {
                let (item, end, after) = self.item(at, next).ok_or_else(broken)?;
                seq.serialize_element(&item)?;
                (at, next) = (end + 1, after);
            }
            seq.end()
        }
    }
}
