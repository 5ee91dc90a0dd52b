//! agent-data's tests: loading, the fold, layers, snapshots, the chain.
//! The files of `tests/` are modules of this one binary, linked once;
//! `cargo xtask ci` runs each module as a job of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod support;

mod batch;
mod chain;
mod erase;
mod first_writes;
mod fold;
mod growth;
mod load;
mod prefix;
mod prepare;
mod props;
mod reload;
mod snapshot;
