//! agent-output's tests: the write methods, fan-out, erasure, growth.
//! The files of `tests/` are modules of this one binary, linked once;
//! `cargo xtask ci` runs each module as a job of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod erase;
mod growth;
mod props;
mod ran;
mod rules;
