//! The naive reference model of the fold and the generators of data
//! messages, shared by the property tests (`props.rs`, `batch.rs`,
//! `reload.rs`): `agent_data::testing`, which users get with the
//! `proptest` feature.

#![allow(unused_imports, dead_code)] // each test file uses a part

pub use agent_data::testing::*;

use agent_data::{Context, DataMessage};
use proptest::strategy::Strategy;

/// [`data_message`] under the name these tests use.
pub fn message(kinds: &'static [&'static str]) -> impl Strategy<Value = DataMessage> {
    data_message(kinds)
}

/// [`agent_data::testing::to_context`], which generated logs never fail.
#[allow(clippy::unwrap_used)] // test support
pub fn to_context(messages: Vec<DataMessage>) -> Context {
    agent_data::testing::to_context(messages).unwrap()
}
