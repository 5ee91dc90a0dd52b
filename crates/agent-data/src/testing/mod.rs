//! Property-test support (the `proptest` feature): the generators of data
//! messages and the naive reference model of the fold that this
//! repository's own property tests use, so a downstream property test of
//! merge semantics takes a few lines.
//!
//! ```
//! use agent_data::testing::{every_read, log, naive_view, to_context};
//! use proptest::prelude::*;
//!
//! proptest!(|(messages in log(12))| {
//!     let ctx = to_context(messages).unwrap();
//!     for (kind, instance) in every_read() {
//!         let (expected, _skipped) = naive_view(&ctx, &kind, instance.as_ref());
//!         prop_assert_eq!(ctx.view(&kind, instance.as_ref()).cloned(), expected);
//!     }
//! });
//! ```
//!
//! The model is deliberately slow: it copies the view at every write and
//! refolds the whole log for each read.

mod model;
mod strategy;

pub use model::{
    Skipped, naive_combine, naive_erase, naive_fold, naive_merge, naive_view, naive_write,
};
pub use strategy::{
    INSTANCES, KINDS, data_message, every_read, log, method, path, to_context, value, views,
};
