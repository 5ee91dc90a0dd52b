//! Workspace-level end-to-end tests live in this package's test targets;
//! fixtures are under `tests/fixtures/`. The library itself is empty.
#![forbid(unsafe_code)]
