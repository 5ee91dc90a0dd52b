//! agent-json's tests: the reader, held containers, the map, serde.
//! The files of `tests/` are modules of this one binary, linked once;
//! `cargo xtask ci` runs each module as a job of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod support;

mod compact_text;
mod held;
mod json_serde;
mod map;
