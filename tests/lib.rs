//! Workspace-level test and benchmark support for agentctx.
//!
//! The end-to-end tests live in this package's test targets (fixtures
//! under `tests/fixtures/`, golden renders under `tests/golden/`); the
//! [`workloads`] are the generated inputs of the benchmark suite
//! (`cargo xtask bench`), built from a fixed seed so every run measures the
//! same thing; [`interleave`] runs a workload and its baseline in turns,
//! for ratios a busy machine cannot skew; [`pg_scratch`] is what the
//! PostgreSQL benchmarks share.
#![forbid(unsafe_code)]

pub mod interleave;
pub mod pg_scratch;
pub mod workloads;
