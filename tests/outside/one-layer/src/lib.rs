//! A crate using one layer; what it checks is in `tests/merge.rs`.
