//! Running the `agentctx` binary from integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // each test file uses a part

use std::process::{Child, Command, Output, Stdio};

/// A push onto `†state.items`: the call most concurrency tests race with.
pub const PUSH: &str = r#"{"_tool":"t","_outputPath":"†state.items","_outputMethod":"push"}"#;

/// A finished `agentctx` process.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().expect("exited, not killed by a signal"),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }
}

/// `agentctx ARGS` with stdin closed and its output captured.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentctx"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `agentctx ARGS` to the end.
pub fn agentctx(args: &[&str]) -> Run {
    command(args).output().unwrap().into()
}

/// Starts `agentctx ARGS`.
pub fn spawn(args: &[&str]) -> Child {
    command(args).spawn().unwrap()
}
