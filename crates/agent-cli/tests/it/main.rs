//! The `agentctx` binary's tests: every command, run as a user would.
//! The files of `tests/` are modules of this one binary, linked once;
//! `cargo xtask ci` runs each module as a job of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod support;

mod activity_limits;
mod approvals;
mod arguments;
mod clean_reads;
mod cli;
mod concepts;
mod concurrency;
mod durability;
mod erase;
mod hostile_cli;
mod hostile_files;
mod inspect;
mod inspect_about;
mod inspect_pages;
mod keys;
mod log;
mod r#loop;
mod loop_server;
mod machine;
mod mcp_pg;
mod pg_credentials;
mod postgres;
mod progress;
mod readable;
mod setup;
mod typos;
mod verify;
mod workers;
mod workers_outcomes;
