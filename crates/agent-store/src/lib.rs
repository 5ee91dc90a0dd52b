//! # agent-store
//!
//! Where contexts live (work in progress).
#![forbid(unsafe_code)]
