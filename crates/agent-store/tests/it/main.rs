//! agent-store's tests: file stores, PostgreSQL (a real server), the memory store.
//! The files of `tests/` are modules of this one binary, linked once;
//! `cargo xtask ci` runs each module as a job of its own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod support;

mod calls;
mod chain_pg;
mod files;
mod first_sight;
mod head_record;
mod keys_files;
mod keys_pg;
mod linearizable;
mod memory;
mod names_pg;
mod pg_timeouts;
mod pool;
mod pooled;
mod postgres;
mod sidecars;
mod snapshots_pg;
