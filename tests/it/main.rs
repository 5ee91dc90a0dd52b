//! The workspace's end-to-end tests: the spec's worked examples, golden
//! renders, hostile inputs across layers, memory near the data's size.
//! The files here are modules of this one binary, linked once;
//! `cargo xtask ci` runs each module as a job of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod golden;
mod hostile;
mod memory;
mod spec_examples;
