//! agent-plan's tests: dependency order and the one readiness rule.
//! The files of `tests/` are modules of this one binary, linked once;
//! `cargo xtask ci` runs each module as a job of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod growth;
mod incremental;
mod plan;
mod readiness;
mod schedule;
