//! An object deep inside a text, kept as that text until something asks
//! for its members: what lets a deeply nested value cost about its text
//! rather than a node per level (decision D85).
//!
//! The reader holds an object this way when it is nested inside
//! [`HELD_FROM`] or more containers. Reading the members, through any of
//! [`Map`](super::Map)'s methods, builds them once and keeps them. The
//! writers copy a compact held text as it stands (the pretty writer
//! re-indents it) and serde walks it (`held_serde.rs`); any other held
//! text they read into a value of their own, write and drop. So printing
//! a deep view never keeps the whole of it built.

use std::sync::OnceLock;

use super::map::Members;
use super::{Map, Value};

/// An object inside this many containers or more is held as its text.
/// Ordinary data nests far less, so only deep values change shape.
pub(crate) const HELD_FROM: usize = 16;

/// An object's text as the reader read it, and its members once read.
pub(crate) struct Held {
    /// The object's text, `{` to `}`, exactly as it stood in the text read
    /// (it may hold whitespace and escapes the writer would not write).
    text: Box<str>,
    /// The text is what the compact writer writes for the object.
    compact: bool,
    /// How many containers deep the object nests, itself the first;
    /// `None` when a key repeats inside it (the value it replaced may have
    /// been the deepest).
    depth: Option<usize>,
    read: OnceLock<Members>,
}

/// A copy holds the text alone: a view copied out of a message keeps its
/// deep parts as small as the message's.
impl Clone for Held {
    fn clone(&self) -> Held {
        Held {
            text: self.text.clone(),
            compact: self.compact,
            depth: self.depth,
            read: OnceLock::new(),
        }
    }
}

impl Held {
    pub(crate) fn new(text: &str, compact: bool, depth: Option<usize>) -> Held {
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

    /// The members, read on the first call and kept.
    pub(crate) fn members(&self) -> &Members {
        self.read.get_or_init(|| read(&self.text))
    }

    /// The members, as an owned value (read unless they already were).
    pub(crate) fn into_members(self) -> Members {
        match self.read.into_inner() {
            Some(members) => members,
            None => read(&self.text),
        }
    }

    /// The members read into an object of their own, unless they were
    /// read already: `None` then, and [`Held::members`] is free.
    pub(crate) fn read_apart(&self) -> Option<Map> {
        match self.read.get() {
            Some(_) => None,
            None => Some(Map::from_members(read(&self.text))),
        }
    }

    /// How deep the object nests, itself the first, when known.
    pub(crate) fn depth(&self) -> Option<usize> {
        self.depth
    }

    /// True until the members are read.
    pub(crate) fn is_unread(&self) -> bool {
        self.read.get().is_none()
    }

    /// True when the object has no members, told from its text.
    pub(crate) fn is_empty(&self) -> bool {
        match self.read.get() {
            Some(members) => members.is_empty(),
            None => self
                .text
                .get(1..)
                .is_some_and(|inner| inner.trim_start().starts_with('}')),
        }
    }
}

/// Reads a held object's text, all of it built. The reader held exactly
/// this text after reading it as an object within its depth limit, so it
/// reads again as the same object; no limit is applied the second time.
fn read(text: &str) -> Members {
    match super::parse::from_str_unheld(text) {
        Ok(Value::Object(map)) => map.into_members(),
        // Not reached (see above); an empty object rather than a panic.
        _ => {
            debug_assert!(false, "a held object's text did not read back");
            Members::default()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use super::super::{Map, Value, from_str, to_string, to_string_pretty};

    /// `text` inside 20 arrays, read; and the object 20 levels down.
    fn read_deep(text: &str) -> Value {
        from_str(&format!("{}{text}{}", "[".repeat(20), "]".repeat(20))).unwrap()
    }

    fn deep_object(value: &Value) -> &Map {
        let mut at = value;
        for _ in 0..20 {
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
        // Twenty arrays around an object holding an array holding an object.
        let value = read_deep(r#"{"a":[{"b":1}],"c":2}"#);
        assert!(crate::within_depth(&value, 23));
        assert!(!crate::within_depth(&value, 22));
        assert!(deep_object(&value).is_unread());
        let _ = deep_object(&value).len();
        assert!(crate::within_depth(&value, 23));
        assert!(!crate::within_depth(&value, 22));
    }

    #[test]
    fn d85_a_changed_held_object_is_an_ordinary_one() {
        let mut value = read_deep(r#"{"a":1}"#);
        let mut at = &mut value;
        for _ in 0..20 {
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
