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

pub(crate) mod thread;

use sha2::block_api::compress256;

/// A digest of the chain: 32 bytes, shown as 64 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The digest before the first message: 32 zero bytes.
    pub const GENESIS: Digest = Digest([0; 32]);

    /// The digest after a message whose compact JSON is `message_json`,
    /// following `self`.
    pub fn next(&self, message_json: &[u8]) -> Digest {
        // SHA-256 by its compression function: a message is short (two or
        // three blocks), and a fresh hasher's buffering cost about half as
        // much again as compressing it.
        let mut state = SHA256_IV;
        let total = (32 + message_json.len()) as u64;
        let mut first = [0u8; 64];
        let (head, rest) = first.split_at_mut(32);
        head.copy_from_slice(&self.0);
        let Some((start, more)) = message_json.split_at_checked(32) else {
            // Digest and message together are shorter than a block.
            let (start, _) = rest.split_at_mut(message_json.len());
            start.copy_from_slice(message_json);
            let (tail, _) = first.split_at(32 + message_json.len());
            return Digest(finish(state, tail, total));
        };
        rest.copy_from_slice(start);
        compress256(&mut state, &[first]);
        let (blocks, tail) = more.as_chunks::<64>();
        compress256(&mut state, blocks);
        Digest(finish(state, tail, total))
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

/// SHA-256's initial state (FIPS 180-4, 5.3.3).
const SHA256_IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// Compresses the last bytes of a message, `tail` (shorter than a block),
/// with SHA-256's padding for a message of `total` bytes, and gives the
/// digest.
fn finish(mut state: [u32; 8], tail: &[u8], total: u64) -> [u8; 32] {
    let mut blocks = [[0u8; 64]; 2];
    let flat = blocks.as_flattened_mut();
    let used = tail.len().min(63);
    let (start, after) = flat.split_at_mut(used);
    start.copy_from_slice(tail.get(..used).unwrap_or_default());
    if let Some(marker) = after.first_mut() {
        *marker = 0x80;
    }
    // The bit length ends the last block: the first, unless the tail
    // leaves less than the 9 bytes of marker and length in it.
    let count = if used + 9 <= 64 { 1 } else { 2 };
    let end = 64 * count;
    if let Some(length) = flat.get_mut(end - 8..end) {
        length.copy_from_slice(&total.wrapping_mul(8).to_be_bytes());
    }
    compress256(&mut state, blocks.get(..count).unwrap_or_default());
    let mut digest = [0u8; 32];
    for (out, word) in digest.chunks_exact_mut(4).zip(state) {
        out.copy_from_slice(&word.to_be_bytes());
    }
    digest
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
