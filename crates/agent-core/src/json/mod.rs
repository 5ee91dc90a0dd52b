//! agentctx's own JSON value: exact numbers, ordered members, bounded
//! depth — without asking anything of serde_json's features.
//!
//! The rest of the stack still folds `serde_json::Value` with the
//! workspace's serde_json features (decision D58 says why this module
//! exists and how the layers move onto it). What is here is complete on
//! its own and checked against serde_json with those features: the same
//! text reads to the same value and writes back to the same bytes, and a
//! bad text fails with the same message at the same place.
//!
//! - [`Value`], [`Map`], [`Number`]: the value, 32 bytes a node.
//! - [`from_str`], [`from_str_within`]: reading, with the depth limit
//!   (R33) as the reader's own check, without recursion.
//! - [`to_string`], [`to_string_pretty`]: writing, without recursion.
//! - [`drop_deep`]: dropping a value of any depth without recursion.
//!   Dropping, cloning and comparing a value otherwise recurse, as
//!   serde_json's do: a value the reader returns is at most its limit deep
//!   (128 by default), which any stack holds; one read with a far larger
//!   limit should be dropped with `drop_deep`.
//! - [`json!`](crate::json!): a value from JSON-like syntax.
//!
//! ```
//! use agent_core::json::{self, Value};
//! let text = r#"{"id": 123456789012345678901234567890, "price": 1.10}"#;
//! let value = json::from_str(text)?;
//! assert_eq!(json::to_string(&value), r#"{"id":123456789012345678901234567890,"price":1.10}"#);
//! // `1.10` is not `1.1`: a number is its text (R3).
//! assert_ne!(value["price"], agent_core::json!(1.1));
//! assert_eq!(value["id"], agent_core::json!(123456789012345678901234567890u128));
//! # Ok::<(), json::ParseError>(())
//! ```

mod lexeme;
mod map;
mod number;
mod parse;
mod serde_impl;
mod value;
mod write;

pub use map::{Iter, IterMut, Map};
pub use number::Number;
pub use parse::{ParseError, from_str, from_str_within};
pub use value::drop_deep;
pub use value::{Index, Value};
pub use write::{to_string, to_string_pretty};

#[doc(hidden)]
pub use serde_json as __serde_json;

/// A [`Value`] from JSON-like syntax, as serde_json's `json!` (whose
/// numbers it keeps exactly: it is that macro, converted).
///
/// ```
/// let v = agent_core::json!({"a": [1, "two", null], "b": 2.50});
/// assert_eq!(v.to_string(), r#"{"a":[1,"two",null],"b":2.5}"#);
/// ```
#[macro_export]
macro_rules! json {
    ($($json:tt)+) => {
        $crate::json::Value::from($crate::json::__serde_json::json!($($json)+))
    };
}
