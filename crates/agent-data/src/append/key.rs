//! Idempotency keys: an append made with a key lands at most once, however
//! often it is sent ([`Append::append_once`](crate::Append::append_once)).

use crate::AppendError;
use std::ops::Range;

type Result<T> = std::result::Result<T, AppendError>;

/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 128;

/// The key of an idempotent append: 1 to [`MAX_KEY_BYTES`] bytes of
/// printable ASCII without spaces (`!` to `~`), so it can be passed as a
/// command-line argument and shown in a message as it is.
///
/// ```
/// use agent_data::AppendKey;
/// let key: AppendKey = "job-42/step-1".parse()?;
/// assert_eq!(key.as_str(), "job-42/step-1");
/// assert!("has space".parse::<AppendKey>().is_err());
/// assert_eq!(key.derive("call-3")?.as_str(), "job-42/step-1/call-3");
/// # Ok::<(), agent_data::AppendError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AppendKey(String);

impl AppendKey {
    /// Checks `key`: [`AppendError::InvalidKey`] saying what is wrong with it.
    ///
    /// # Errors
    /// [`AppendError::InvalidKey`] when `key` is empty, longer than [`MAX_KEY_BYTES`] bytes, or holds
    /// a character that is not printable ASCII (a space, say).
    pub fn new(key: impl Into<String>) -> Result<AppendKey> {
        let key = key.into();
        let reason = if key.is_empty() {
            Some("it is empty".to_owned())
        } else if key.len() > MAX_KEY_BYTES {
            Some(format!(
                "it has {} bytes, more than {MAX_KEY_BYTES}",
                key.len()
            ))
        } else {
            key.char_indices()
                .find(|(_, c)| !c.is_ascii_graphic())
                .map(|(at, c)| {
                    format!("byte {at} is {c:?}: a key is printable ASCII without spaces (! to ~)")
                })
        };
        match reason {
            Some(reason) => Err(AppendError::InvalidKey { key, reason }),
            None => Ok(AppendKey(key)),
        }
    }

    /// A fresh random key (128 bits from the operating system, as 32 hex
    /// digits): unique without coordination.
    ///
    /// # Errors
    /// [`AppendError::NoRandomness`] when the operating system gives no random bytes.
    pub fn generate() -> Result<AppendKey> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| AppendError::NoRandomness {
            reason: e.to_string(),
        })?;
        Ok(AppendKey(
            bytes.iter().map(|b| format!("{b:02x}")).collect(),
        ))
    }

    /// The key `self/part`: one key per step of a larger job (the commits
    /// of a plan's calls, say), each as idempotent as `self`. Fails when
    /// the result is not a valid key (too long, or `part` holds a space).
    ///
    /// # Errors
    /// [`AppendError::InvalidKey`] when `self/part` is not a valid key: longer than [`MAX_KEY_BYTES`]
    /// bytes, or `part` holds a character that is not printable ASCII.
    pub fn derive(&self, part: &str) -> Result<AppendKey> {
        AppendKey::new(format!("{}/{part}", self.0))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for AppendKey {
    type Err = AppendError;

    fn from_str(key: &str) -> Result<AppendKey> {
        AppendKey::new(key)
    }
}

impl std::fmt::Display for AppendKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an append with a key did ([`Append::append_once`](crate::Append::append_once)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyedOutcome {
    /// This append landed: the index range of its messages.
    Appended(Range<usize>),
    /// An earlier append with the same key had landed, and nothing was
    /// appended now: the index range of the messages it wrote.
    Already(Range<usize>),
}

impl KeyedOutcome {
    /// The messages' index range, whichever append wrote them.
    pub fn range(&self) -> Range<usize> {
        match self {
            KeyedOutcome::Appended(range) | KeyedOutcome::Already(range) => range.clone(),
        }
    }

    /// True when an earlier append with the key had landed.
    pub fn is_already(&self) -> bool {
        matches!(self, KeyedOutcome::Already(_))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn keys_are_checked() {
        assert!(AppendKey::new("a").is_ok());
        assert!(AppendKey::new("~!".repeat(64)).is_ok());
        for bad in ["", "a b", "tab\t", "é", &"x".repeat(129)] {
            let error = AppendKey::new(bad).unwrap_err();
            assert!(matches!(error, AppendError::InvalidKey { .. }), "{bad:?}");
        }
        let a = AppendKey::generate().unwrap();
        let b = AppendKey::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 32);
        assert!(
            AppendKey::new("x".repeat(125))
                .unwrap()
                .derive("c-1")
                .is_err()
        );
    }
}
