//! A single reference `†kind.path` (R15): the unit both reads and writes name.

use crate::ident::kind_len;
use crate::{Error, Kind, Path, Result};
use std::fmt;

/// The dagger that starts a reference (U+2020).
pub const DAGGER: char = '†';

/// The expression `text` was most likely meant to be, when it is a
/// reference missing its `†`: written bare (`state.x`), or with a
/// character standing in for it (`$state.x` as in templates and shells,
/// `+state.x`, which looks like it). `None` when `text` does not look like
/// one (D104: one spelling, the mistyped ones named).
///
/// ```
/// use agent_core::dagger_meant;
/// assert_eq!(dagger_meant("$state.x").as_deref(), Some("†state.x"));
/// assert_eq!(dagger_meant("state.x").as_deref(), Some("†state.x"));
/// assert_eq!(dagger_meant("†state.x"), None);
/// assert_eq!(dagger_meant("42"), None);
/// ```
pub fn dagger_meant(text: &str) -> Option<String> {
    let text = text.trim();
    let bare = text.strip_prefix(['$', '+']).unwrap_or(text);
    bare.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        .then(|| format!("{DAGGER}{bare}"))
}

/// A reference to a path in the view of a kind: `†state.user.name`.
///
/// This is one operand of an expression; `||` and `&&` live in `agent-vars`.
///
/// ```
/// use agent_core::Reference;
/// let r: Reference = "†state.user[\"first name\"]".parse()?;
/// assert_eq!(r.kind.as_str(), "state");
/// assert_eq!(r.to_string(), "†state.user[\"first name\"]");
/// # Ok::<(), agent_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    /// Which view is read or written.
    pub kind: Kind,
    /// Where inside that view.
    pub path: Path,
}

impl Reference {
    /// Builds a reference from its parts.
    pub fn new(kind: Kind, path: Path) -> Self {
        Reference { kind, path }
    }

    /// Parses exactly one reference filling all of `text` (no blanks).
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`](crate::Error::Syntax) when `text` is not exactly one
    /// reference.
    pub fn parse(text: &str) -> Result<Self> {
        let (reference, used) = Self::parse_prefix(text, 0)?;
        match text[used..].chars().next() {
            None => Ok(reference),
            Some(c) => Err(Error::Syntax {
                offset: used,
                reason: format!("unexpected {c:?} after reference"),
            }),
        }
    }

    /// Parses the reference at the start of `text`, returning it and the
    /// number of bytes used; error offsets are shifted by `base`.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`](crate::Error::Syntax) when `text` does not start with a
    /// reference; its offset counts from `base`.
    pub fn parse_prefix(text: &str, base: usize) -> Result<(Self, usize)> {
        let Some(rest) = text.strip_prefix(DAGGER) else {
            return Err(Error::Syntax {
                offset: base,
                reason: "expected a reference starting with '†'".into(),
            });
        };
        let start = DAGGER.len_utf8();
        let len = kind_len(rest);
        if len == 0 {
            return Err(Error::Syntax {
                offset: base + start,
                reason: "expected a kind ([A-Za-z_][A-Za-z0-9_-]*) after '†'".into(),
            });
        }
        let kind = Kind::new(&rest[..len])?;
        let (path, path_len) = Path::parse_prefix(&rest[len..], base + start + len)?;
        Ok((Reference { kind, path }, start + len + path_len))
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{DAGGER}{}{}", self.kind, self.path)
    }
}

impl std::str::FromStr for Reference {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Reference::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r15_reference_kind_then_path() {
        let r = Reference::parse("†data.user.status").unwrap();
        assert_eq!(r.kind.as_str(), "data");
        assert_eq!(r.path.to_string(), ".user.status");
        assert!(Reference::parse("†state").unwrap().path.is_empty());
        assert_eq!(Reference::parse("†s[0]").unwrap().to_string(), "†s[0]");
    }

    #[test]
    fn r15_reference_errors_have_offsets() {
        let offset = |t: &str| match Reference::parse(t) {
            Err(Error::Syntax { offset, .. }) => offset,
            other => panic!("{t}: {other:?}"),
        };
        assert_eq!(offset("state.x"), 0);
        assert_eq!(offset("†"), 3);
        assert_eq!(offset("†9x"), 3);
        assert_eq!(offset("†st.x y"), 7);
        assert_eq!(offset("†st."), 6);
    }
}
