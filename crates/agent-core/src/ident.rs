//! Kinds and instance ids: the two halves of a data message's identity (R2, R4).

use crate::{Error, Result};
use std::fmt;

/// The `kind` of a data message (`state`, `input`, `user`, …).
///
/// Always matches `[A-Za-z_][A-Za-z0-9_-]*`; construction validates (R2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind(String);

impl Kind {
    /// Validates `kind` and wraps it.
    ///
    /// ```
    /// use agent_core::Kind;
    /// assert!(Kind::new("state").is_ok());
    /// assert!(Kind::new("9lives").is_err());
    /// ```
    pub fn new(kind: impl Into<String>) -> Result<Self> {
        let kind = kind.into();
        if kind_len(&kind) == kind.len() && !kind.is_empty() {
            Ok(Kind(kind))
        } else {
            Err(Error::InvalidKind { kind })
        }
    }

    /// The default kind of a data message without one: `data`.
    pub fn data() -> Self {
        Kind("data".to_owned())
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

/// The `_instance` of a data message or call: a non-empty string (R2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Instance(String);

impl Instance {
    /// Validates `id` (non-empty) and wraps it.
    ///
    /// ```
    /// use agent_core::Instance;
    /// assert_eq!(Instance::new("①").unwrap().as_str(), "①");
    /// assert!(Instance::new("").is_err());
    /// ```
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        if id.is_empty() {
            Err(Error::InvalidInstance)
        } else {
            Ok(Instance(id))
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
    fn from_str(s: &str) -> Result<Self> {
        Instance::new(s)
    }
}

// `Hash` and `Eq` are derived from the inner `String`, so they agree with
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
                Err(Error::InvalidKind { kind: bad.into() }),
                "{bad}"
            );
        }
    }

    #[test]
    fn r2_instance_is_non_empty() {
        assert_eq!(Instance::new(""), Err(Error::InvalidInstance));
        assert_eq!(
            Instance::new("employee_A").unwrap().to_string(),
            "employee_A"
        );
    }
}
