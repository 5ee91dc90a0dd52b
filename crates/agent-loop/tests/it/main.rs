//! agent-loop's tests: providers over real HTTP, streaming, the turn engine.
//! The files of `tests/` are modules of this one binary, linked once;
//! `cargo xtask ci` runs each module as a job of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod common;

mod hostile_server;
mod plans;
mod prompt_cache;
mod providers;
mod rules;
mod same_as_run;
mod stream_dispatch;
mod streaming;
mod turns;
mod typos;
mod untrusted;
