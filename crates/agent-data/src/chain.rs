//! The chain of digests over a log: what lets a store, `verify`, or anyone
//! with a SHA-256 tool tell a log from an edited copy of it.
//!
//! The digest after message `k` (one position per message, as [`Context`]
//! numbers them) is `SHA-256(digest after k-1 ‖ message k's compact JSON)`,
//! the JSON being exactly [`Context::message_json`] (one JSONL line without
//! its newline); before the first message it is 32 zero bytes. So a file,
//! a JSON array, a PostgreSQL context and a copy of any of them have the
//! same chain. SHA-256 because anyone can recompute it with a standard
//! tool, and because it runs at memory speed on CPUs with SHA extensions.
//! A chain is unkeyed: it proves a log unchanged only against a head kept
//! where its writer cannot reach (`verify --expect`); docs/store.md says
//! what each check proves.
//!
//! [`Context`]: crate::Context
//! [`Context::message_json`]: crate::Context::message_json

use sha2::{Digest as _, Sha256};

/// A digest of the chain: 32 bytes, shown as 64 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The digest before the first message: 32 zero bytes.
    pub const GENESIS: Digest = Digest([0; 32]);

    /// The digest after a message whose compact JSON is `message_json`,
    /// following `self`.
    pub fn next(&self, message_json: &[u8]) -> Digest {
        let mut hasher = Sha256::new();
        hasher.update(self.0);
        hasher.update(message_json);
        Digest(hasher.finalize().into())
    }

    /// The chain over `messages` (compact JSON each), from the genesis.
    pub fn of<'a>(messages: impl IntoIterator<Item = &'a [u8]>) -> Digest {
        messages
            .into_iter()
            .fold(Digest::GENESIS, |digest, json| digest.next(json))
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// From 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Digest {
        Digest(bytes)
    }

    /// From a slice of exactly 32 bytes (a stored digest); `None` for any
    /// other length.
    pub fn from_slice(bytes: &[u8]) -> Option<Digest> {
        <[u8; 32]>::try_from(bytes).ok().map(Digest)
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Digest({self})")
    }
}

/// A digest that is not 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is not a chain digest (64 hex digits)", agent_core::quoted(.0))]
pub struct BadDigest(pub String);

impl std::str::FromStr for Digest {
    type Err = BadDigest;

    fn from_str(text: &str) -> Result<Digest, BadDigest> {
        let bad = || BadDigest(text.to_owned());
        let hex = text.as_bytes();
        if hex.len() != 64 {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
            let digit = |c: u8| (c as char).to_digit(16).ok_or_else(bad);
            *byte = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).map_err(|_| bad())?;
        }
        Ok(Digest(bytes))
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Digest, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
