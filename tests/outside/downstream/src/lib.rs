//! A downstream crate; what it checks is in `tests/beside.rs`.
