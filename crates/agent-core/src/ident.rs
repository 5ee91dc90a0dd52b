//! Kinds and instance ids: the two halves of a data message's identity (R2, R4).

use crate::{Error, InvalidKind, Result};
use std::fmt;
use std::sync::Arc;

/// The `kind` of a data message (`state`, `input`, `user`, …).
///
/// Always matches `[A-Za-z_][A-Za-z0-9_-]*`; construction validates (R2).
///
/// Cloning is cheap and shares the text: a context of many instances keeps
/// one copy of each kind for all its layers. One pointer wide,
/// as every layer key holds one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind(Arc<String>);

impl Kind {
    /// Validates `kind` and wraps it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKind`](crate::Error::InvalidKind) when `kind` is empty or
    /// not a name (R2).
    ///
    /// ```
    /// use agent_core::Kind;
    /// assert!(Kind::new("state").is_ok());
    /// assert!(Kind::new("9lives").is_err());
    /// ```
    pub fn new(kind: impl Into<String>) -> Result<Self> {
        let kind = kind.into();
        if kind_len(&kind) == kind.len() && !kind.is_empty() {
            Ok(Kind(Arc::new(kind)))
        } else {
            Err(InvalidKind { kind }.into())
        }
    }

    /// The default kind of a data message without one: `data`.
    pub fn data() -> Self {
        Kind(Arc::new("data".to_owned()))
    }

    /// The kind as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Length in bytes of the longest prefix of `s` that is a valid kind
/// (0 when `s` does not start with one).
pub(crate) fn kind_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    match bytes.first() {
        Some(b) if b.is_ascii_alphabetic() || *b == b'_' => {}
        _ => return 0,
    }
    bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-'))
        .unwrap_or(bytes.len())
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Kind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Kind::new(s)
    }
}

/// The longest instance id, in characters (R2).
pub const MAX_INSTANCE_CHARS: usize = 128;

/// The `_instance` of a data message or call (R2): 1 to
/// [`MAX_INSTANCE_CHARS`] characters, none of them a control character or a
/// line or paragraph separator, and no blank at either end. The model sees
/// ids in block headers (`## Data: … (instance ID)`), so an id must not be
/// able to end a header and forge another.
///
/// Cloning is cheap: an id of up to 15 bytes is held inline, with no
/// allocation (ids are many, mostly distinct and mostly short), and a
/// longer one shares its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Instance(ecow::EcoString);

impl Instance {
    /// Validates `id` (R2) and wraps it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInstance`](crate::Error::InvalidInstance) for an id R2
    /// refuses: empty, over [`MAX_INSTANCE_CHARS`](crate::MAX_INSTANCE_CHARS)
    /// characters, blanks at either end, control or line-separator characters.
    ///
    /// ```
    /// use agent_core::Instance;
    /// assert_eq!(Instance::new("①").unwrap().as_str(), "①");
    /// assert!(Instance::new("").is_err());
    /// assert!(Instance::new("a\n## Data: state").is_err());
    /// ```
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        match refusal(&id) {
            None => Ok(Instance(id.as_str().into())),
            Some(reason) => Err(Error::InvalidInstance {
                id: shown(&id),
                reason,
            }),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Instance {
    type Err = Error;
    /// [`Instance::new`], copying `s` once (into the shared allocation).
    fn from_str(s: &str) -> Result<Self> {
        match refusal(s) {
            None => Ok(Instance(s.into())),
            Some(reason) => Err(Error::InvalidInstance {
                id: shown(s),
                reason,
            }),
        }
    }
}

/// Why `id` is not a valid instance id (R2), if it is not.
fn refusal(id: &str) -> Option<&'static str> {
    if plainly_valid(id) {
        return None;
    }
    let separator = |c: char| c.is_control() || c == '\u{2028}' || c == '\u{2029}';
    if id.is_empty() {
        Some("it is empty")
    } else if id.len() > MAX_INSTANCE_CHARS && id.chars().count() > MAX_INSTANCE_CHARS {
        // (No more characters than bytes: a short id is not counted.)
        Some("it is longer than 128 characters")
    } else if id.chars().any(separator) {
        Some("it contains a control character or a line or paragraph separator")
    } else if id.starts_with(char::is_whitespace) || id.ends_with(char::is_whitespace) {
        Some("it starts or ends with a blank")
    } else {
        None
    }
}

/// True for most ids, told without decoding characters: printable ASCII,
/// at most [`MAX_INSTANCE_CHARS`] bytes, no blank at either end. Every such
/// id is one [`refusal`] accepts.
fn plainly_valid(id: &str) -> bool {
    match id.as_bytes() {
        [first, .., last] | [first @ last] => {
            id.len() <= MAX_INSTANCE_CHARS
                && *first != b' '
                && *last != b' '
                && id.bytes().all(|b| b.is_ascii_graphic() || b == b' ')
        }
        [] => false,
    }
}

/// `id` as a JSON string, shortened to 40 characters: safe to print.
fn shown(id: &str) -> String {
    let short: String = id.chars().take(40).collect();
    let mut quoted = String::with_capacity(short.len() + 2);
    agent_json::write_str(&mut quoted, &short);
    if short.len() < id.len() {
        format!("{quoted}…")
    } else {
        quoted
    }
}

// `Hash` and `Eq` are derived from the inner `str`, so they agree with
// `str`'s: maps keyed by these types can be looked up with plain strings.
impl std::borrow::Borrow<str> for Kind {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Instance {
    fn borrow(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r2_kind_grammar() {
        for ok in ["state", "input", "_x", "a-b_c9", "Z"] {
            assert!(Kind::new(ok).is_ok(), "{ok}");
        }
        for bad in ["", "9a", "-a", "a.b", "a b", "ä", "st†"] {
            assert_eq!(
                Kind::new(bad),
                Err(InvalidKind { kind: bad.into() }.into()),
                "{bad}"
            );
        }
        assert_eq!(
            Kind::new("a\"b").unwrap_err().to_string(),
            r#"invalid kind "a\"b": a kind matches [A-Za-z_][A-Za-z0-9_-]*"#,
            "quoted once, as JSON"
        );
    }

    #[test]
    fn r2_instance_ids_cannot_forge_a_block_header() {
        let refused = |id: &str| Instance::new(id).unwrap_err().to_string();
        assert_eq!(refused(""), "invalid instance id \"\": it is empty");
        assert_eq!(
            refused("a\n## Data: x"),
            "invalid instance id \"a\\n## Data: x\": it contains a control character or a line or paragraph separator"
        );
        assert_eq!(
            refused("a\u{2028}b"),
            "invalid instance id \"a\u{2028}b\": it contains a control character or a line or paragraph separator"
        );
        assert_eq!(
            refused(" a"),
            "invalid instance id \" a\": it starts or ends with a blank"
        );
        assert_eq!(
            refused("a\u{3000}"),
            "invalid instance id \"a\u{3000}\": it starts or ends with a blank"
        );
        let long = "é".repeat(129);
        assert_eq!(
            refused(&long),
            format!(
                "invalid instance id \"{}\"…: it is longer than 128 characters",
                "é".repeat(40)
            )
        );
        assert!(Instance::new("é".repeat(128)).is_ok());
        assert!(Instance::new("employee A").is_ok());
        assert_eq!(
            Instance::new("employee_A").unwrap().to_string(),
            "employee_A"
        );
    }

    /// The rule spelled out, character by character: what [`refusal`]
    /// answers whether or not its quick test takes the id.
    fn refusal_by_characters(id: &str) -> bool {
        let chars: Vec<char> = id.chars().collect();
        let separator = |c: &char| c.is_control() || *c == '\u{2028}' || *c == '\u{2029}';
        chars.is_empty()
            || chars.len() > MAX_INSTANCE_CHARS
            || chars.iter().any(separator)
            || chars.first().is_some_and(|c| c.is_whitespace())
            || chars.last().is_some_and(|c| c.is_whitespace())
    }

    proptest::proptest! {
        #[test]
        fn r2_the_quick_test_accepts_only_ids_the_rule_accepts(
            id in proptest::prop_oneof![
                "[ -~]{0,130}",
                "[ \t\n\u{7f}-\u{a0}a-c\u{2028}\u{3000}é]{0,6}",
                proptest::string::string_regex("[ -~]{127,129}").unwrap(),
            ]
        ) {
            proptest::prop_assert_eq!(refusal(&id).is_some(), refusal_by_characters(&id), "{:?}", id);
            if plainly_valid(&id) {
                proptest::prop_assert!(!refusal_by_characters(&id), "{:?}", id);
            }
        }
    }
}
