//! An object or array deep inside a text, kept as that text until
//! something asks for its members or items: what lets a deeply nested
//! value cost about its text rather than a node per level (decisions D85
//! and D86).
//!
//! The reader holds a container this way when it is nested inside
//! [`HELD_FROM`] or more containers. Reading what it holds, through any of
//! [`Map`](super::Map)'s or [`Array`](super::Array)'s methods, builds it
//! once and keeps it. The writers copy a compact held text as it stands
//! (the pretty writer re-indents it) and serde walks it (`held_serde.rs`);
//! any other held text they read into a value of their own, write and
//! drop. So printing a deep view never keeps the whole of it built.

use std::sync::OnceLock;

use super::Value;
use super::map::Members;

/// A container inside this many containers or more is held as its text.
/// Ordinary data nests far less, so only deep values change shape.
pub(crate) const HELD_FROM: usize = 16;

/// What a held text reads into: an object's members or an array's items.
pub(crate) trait Contents: Sized {
    /// Reads `text`, which the reader held after reading it as this kind
    /// of container within its depth limit: it reads again the same, so no
    /// limit is applied the second time.
    fn read(text: &str) -> Self;
    /// True when nothing is held.
    fn is_empty(&self) -> bool;
}

impl Contents for Members {
    fn read(text: &str) -> Members {
        read_back(text, |value| match value {
            Value::Object(map) => Some(map.into_members()),
            _ => None,
        })
    }
    fn is_empty(&self) -> bool {
        Members::is_empty(self)
    }
}

impl Contents for Vec<Value> {
    fn read(text: &str) -> Vec<Value> {
        read_back(text, |value| match value {
            Value::Array(items) => Some(items.into_vec()),
            _ => None,
        })
    }
    fn is_empty(&self) -> bool {
        <[Value]>::is_empty(self)
    }
}

/// Reads a held text back and takes what it holds out of the value read.
fn read_back<T: Default>(text: &str, take: impl FnOnce(Value) -> Option<T>) -> T {
    match super::parse::from_str_unheld(text).ok().and_then(take) {
        Some(read) => read,
        // Not reached (see `Contents::read`): nothing rather than a panic.
        None => {
            debug_assert!(false, "a held text did not read back");
            T::default()
        }
    }
}

/// A container's text as the reader read it, and what it holds once read.
pub(crate) struct Held<T> {
    /// The container's text, `{` to `}` or `[` to `]`, exactly as it stood
    /// in the text read (it may hold whitespace and escapes the writer
    /// would not write).
    text: Box<str>,
    /// The text is what the compact writer writes for the container.
    compact: bool,
    /// How many containers deep the container nests, itself the first;
    /// `None` when a key repeats inside it (the value it replaced may have
    /// been the deepest).
    depth: Option<usize>,
    read: OnceLock<T>,
}

/// A copy holds the text alone: a view copied out of a message keeps its
/// deep parts as small as the message's.
impl<T> Clone for Held<T> {
    fn clone(&self) -> Held<T> {
        Held {
            text: self.text.clone(),
            compact: self.compact,
            depth: self.depth,
            read: OnceLock::new(),
        }
    }
}

impl<T: Contents> Held<T> {
    pub(crate) fn new(text: &str, compact: bool, depth: Option<usize>) -> Held<T> {
        Held {
            text: Box::from(text),
            compact,
            depth,
            read: OnceLock::new(),
        }
    }

    /// The compact text and its depth, while the members are unread and
    /// the text is compact: a writer can copy it instead of reading it.
    pub(crate) fn compact_text(&self) -> Option<(&str, usize)> {
        let depth = self.depth.filter(|_| self.compact && self.is_unread())?;
        Some((&self.text, depth))
    }

    /// What the text holds, read on the first call and kept.
    pub(crate) fn members(&self) -> &T {
        self.read.get_or_init(|| T::read(&self.text))
    }

    /// What the text holds, owned (read unless it already was).
    pub(crate) fn into_members(self) -> T {
        match self.read.into_inner() {
            Some(members) => members,
            None => T::read(&self.text),
        }
    }

    /// What the text holds, read into a value of its own, unless it was
    /// read already: `None` then, and [`Held::members`] is free.
    pub(crate) fn read_apart(&self) -> Option<T> {
        match self.read.get() {
            Some(_) => None,
            None => Some(T::read(&self.text)),
        }
    }

    /// How deep the container nests, itself the first, when known.
    pub(crate) fn depth(&self) -> Option<usize> {
        self.depth
    }

    /// True until what the text holds is read.
    pub(crate) fn is_unread(&self) -> bool {
        self.read.get().is_none()
    }

    /// True when the container holds nothing, told from its text.
    pub(crate) fn is_empty(&self) -> bool {
        match self.read.get() {
            Some(members) => members.is_empty(),
            None => is_empty_text(&self.text),
        }
    }
}

/// True for the text of an empty container, `{}` or `[]` with any
/// whitespace between.
pub(crate) fn is_empty_text(text: &str) -> bool {
    text.get(1..)
        .is_some_and(|inner| inner.trim_start().starts_with(['}', ']']))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use super::super::{Map, Value, from_str, to_string, to_string_pretty};

    /// `text` inside 16 arrays (the innermost inside 15 containers, so
    /// not held itself), read; and the object 16 levels down.
    fn read_deep(text: &str) -> Value {
        from_str(&format!("{}{text}{}", "[".repeat(16), "]".repeat(16))).unwrap()
    }

    fn deep_object(value: &Value) -> &Map {
        let mut at = value;
        for _ in 0..16 {
            at = &at[0];
        }
        at.as_object().unwrap()
    }

    #[test]
    fn d85_writing_a_deep_value_leaves_its_held_objects_unread() {
        for text in [
            r#"{"a":{"b":[1,"x\n"]}}"#,
            r#"{ "a" : { "b" : [ 1 , "\u0078\n" ] } }"#,
        ] {
            let value = read_deep(text);
            assert!(deep_object(&value).is_unread(), "{text}");
            let compact = to_string(&value);
            let pretty = to_string_pretty(&value);
            let serde = serde_json::to_string_pretty(&value).unwrap();
            let copy = value.clone();
            assert!(deep_object(&value).is_unread(), "{text}");
            assert!(deep_object(&copy).is_unread(), "{text}");
            assert_eq!(pretty, serde);
            assert!(compact.contains(r#"{"a":{"b":[1,"x\n"]}}"#), "{compact}");
            // Asking for a member reads the object, once.
            assert_eq!(deep_object(&value).len(), 1);
            assert!(!deep_object(&value).is_unread());
            assert_eq!(to_string(&value), compact);
            assert_eq!(to_string_pretty(&value), pretty);
        }
    }

    #[test]
    fn d85_only_a_compact_held_text_is_copied_as_it_stands() {
        let compact = read_deep(r#"{"a":[{"b":2}]}"#);
        assert_eq!(
            deep_object(&compact).compact_text(),
            Some((r#"{"a":[{"b":2}]}"#, 3))
        );
        let spaced = read_deep(r#"{"a": [{"b":2}]}"#);
        assert_eq!(deep_object(&spaced).compact_text(), None);
        let repeated = read_deep(r#"{"a":1,"a":2}"#);
        assert_eq!(deep_object(&repeated).compact_text(), None);
        assert_eq!(to_string(&repeated).matches(r#"{"a":2}"#).count(), 1);
        // Past sixteen keys, repeats are found by sorting them.
        let keys: Vec<String> = (0..20).map(|i| format!(r#""k{i}":{i}"#)).collect();
        let many = format!("{{{}}}", keys.join(","));
        assert!(deep_object(&read_deep(&many)).compact_text().is_some());
        let again = format!(r#"{{{},"k3":0}}"#, keys.join(","));
        assert_eq!(deep_object(&read_deep(&again)).compact_text(), None);
    }

    #[test]
    fn d85_depth_of_a_held_object_is_known_without_reading_it() {
        // Sixteen arrays around an object holding an array holding an object.
        let value = read_deep(r#"{"a":[{"b":1}],"c":2}"#);
        assert!(crate::within_depth(&value, 19));
        assert!(!crate::within_depth(&value, 18));
        assert!(deep_object(&value).is_unread());
        let _ = deep_object(&value).len();
        assert!(crate::within_depth(&value, 19));
        assert!(!crate::within_depth(&value, 18));
    }

    /// The array 16 containers down in `value`, not read.
    fn deep_array(value: &Value) -> &super::super::Array {
        let mut at = value;
        for _ in 0..16 {
            at = &at[0];
        }
        match at {
            Value::Array(items) => items,
            other => panic!("not an array: {other}"),
        }
    }

    #[test]
    fn d86_a_deep_array_is_held_until_its_items_are_read() {
        // Eighteen arrays: the innermost two are inside 16 and 17.
        let text = format!("{}1,\"x\"{}", "[".repeat(18), "]".repeat(18));
        let value = super::super::from_str(&text).unwrap();
        assert_eq!(deep_array(&value).compact_text(), Some((r#"[[1,"x"]]"#, 2)));
        assert_eq!(to_string(&value), text);
        assert_eq!(serde_json::to_string(&value).unwrap(), text);
        assert_eq!(
            to_string_pretty(&value),
            serde_json::to_string_pretty(
                &serde_json::from_str::<serde_json::Value>(&text).unwrap()
            )
            .unwrap()
        );
        assert!(crate::within_depth(&value, 18));
        assert!(!crate::within_depth(&value, 17));
        let copy = value.clone();
        assert!(deep_array(&value).is_unread());
        assert!(deep_array(&copy).is_unread());
        // Emptiness is told from the text.
        assert!(!deep_array(&value).is_empty());
        assert!(deep_array(&value).is_unread());
        // Asking for an item reads the array, once, and keeps it.
        assert_eq!(deep_array(&value)[0][1], Value::from("x"));
        assert!(!deep_array(&value).is_unread());
        assert_eq!(deep_array(&value).compact_text(), None);
        assert_eq!(to_string(&value), text);
        assert_eq!(value, copy);
        super::super::drop_deep(copy);
    }

    #[test]
    fn d86_a_changed_held_array_is_an_ordinary_one() {
        let text = format!("{}1{}", "[".repeat(18), "]".repeat(18));
        let mut value = super::super::from_str(&text).unwrap();
        let mut at = &mut value;
        for _ in 0..16 {
            at = at.get_mut(0).unwrap();
        }
        at.as_array_mut().unwrap().push(Value::from(2));
        assert!(!deep_array(&value).is_unread());
        assert_eq!(deep_array(&value).held_depth(), None);
        assert!(to_string(&value).contains("[[1],2]"));
        assert!(crate::within_depth(&value, 18));
    }

    #[test]
    fn d85_a_changed_held_object_is_an_ordinary_one() {
        let mut value = read_deep(r#"{"a":1}"#);
        let mut at = &mut value;
        for _ in 0..16 {
            at = at.get_mut(0).unwrap();
        }
        at.as_object_mut()
            .unwrap()
            .insert("b".into(), Value::from(2));
        assert!(!deep_object(&value).is_unread());
        assert_eq!(deep_object(&value).compact_text(), None);
        assert!(to_string(&value).contains(r#"{"a":1,"b":2}"#));
    }
}
