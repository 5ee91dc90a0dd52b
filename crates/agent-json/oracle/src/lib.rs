//! The oracle is its test (`tests/oracle.rs`).
