//! # agent-json
//!
//! agentctx's own JSON value: exact numbers, ordered members, bounded
//! depth — without asking anything of serde_json's features. agent-core
//! re-exports this crate as `agent_core::json`.
//!
//! Every layer of agentctx holds this value (D58: own JSON value; D66: serde_json defaults), and
//! asks nothing of serde_json's features, so a program's own serde_json
//! code behaves as serde_json's defaults say. It is checked against
//! serde_json *with* its exact and ordered features
//! (`tests/outside/json-oracle`): the same text reads to the same value and
//! writes back to the same bytes, and a bad text fails with the same
//! message at the same place.
//!
//! - [`Value`], [`Map`], [`Array`], [`Number`]: the value, 32 bytes a
//!   node. An object or array the reader finds inside sixteen or more
//!   containers is kept as its text until something asks for what it holds
//!   (D85: held objects; D86: held arrays): a deep value costs about its text, and prints without
//!   being built.
//! - [`from_str`], [`from_str_within`]: reading, with the depth limit
//!   (R33) as the reader's own check, without recursion;
//!   [`from_str_compact_within`] also says whether the text read is the
//!   value's compact text, so a caller keeping that text need not write it.
//! - [`CompactObject`]: an object's members found in its compact text
//!   without building their values, for a caller deciding what a text is
//!   before reading all of it.
//! - [`to_string`], [`to_string_pretty`]: writing, without recursion.
//! - [`within_depth`] and [`MAX_DEPTH`]: how deep a value nests, counted
//!   one way everywhere, without recursion and without reading a held
//!   container.
//! - [`drop_deep`]: dropping a value of any depth without recursion.
//!   Dropping, cloning and comparing a value otherwise recurse, as
//!   serde_json's do: a value the reader returns is at most its limit deep
//!   (128 by default), which any stack holds; one read with a far larger
//!   limit should be dropped with `drop_deep`.
//! - [`json!`]: a value from JSON-like syntax, keys in the
//!   order written.
//! - [`to_value`] and [`from_value`]: serde types into and out of a value,
//!   numbers exactly.
//!
//! ```
//! use agent_json::{self as json, Value};
//! let text = r#"{"id": 123456789012345678901234567890, "price": 1.10}"#;
//! let value = json::from_str(text)?;
//! assert_eq!(json::to_string(&value), r#"{"id":123456789012345678901234567890,"price":1.10}"#);
//! // `1.10` is not `1.1`: a number is its text (R3).
//! assert_ne!(value["price"], agent_json::json!(1.1));
//! assert_eq!(value["id"], agent_json::json!(123456789012345678901234567890u128));
//! # Ok::<(), json::ParseError>(())
//! ```

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod array;
mod de;
mod depth;
mod held;
mod held_serde;
mod lexeme;
mod macros;
mod map;
mod number;
mod parse;
mod scan;
mod ser;
mod serde_impl;
mod value;
mod write;

pub use array::Array;
pub use de::from_value;
pub use depth::{MAX_DEPTH, within_depth};
pub use map::{Entry, IntoIter, Iter, IterMut, Map};
pub use number::Number;
pub use parse::{ParseError, from_str, from_str_compact_within, from_str_within};
pub use scan::CompactObject;
#[doc(hidden)]
pub use ser::__to_value;
pub use ser::to_value;
pub use value::drop_deep;
pub use value::{Index, Value};
pub use write::{Style, to_string, to_string_pretty, write_into, write_object_within, write_str};

#[doc(hidden)]
pub use std::vec as __vec;
