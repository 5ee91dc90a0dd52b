//! Running the `agentctx` binary from integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)] // each test file uses a part

use agent_core::json::Value;
use std::process::{Child, Command, Stdio};

/// A push onto `†state.items`: the call most concurrency tests race with.
pub const PUSH: &str = r#"{"_tool":"t","_outputPath":"†state.items","_outputMethod":"push"}"#;

pub use test_support::process::{Run, on_terminal};

/// What [`Run`] leaves of stderr.
pub trait Stderr {
    /// stderr without `append`'s line `appended N message(s); CONTEXT now
    /// has M message(s)` (D65: machine-readable output): what is left is warnings and errors.
    fn stderr_without_count(&self) -> String;
}

impl Stderr for Run {
    fn stderr_without_count(&self) -> String {
        self.stderr
            .lines()
            .filter(|line| !(line.starts_with("appended ") && line.contains(" now has ")))
            .map(|line| format!("{line}\n"))
            .collect()
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

/// Every process's `assign --write` lands in instances of its own: ids are
/// chosen against the file as it is when the inputs land, not as it was read.
pub fn assigners_never_share_an_instance(context: &str) {
    const PROCESSES: usize = 6;
    const EACH: usize = 5;
    let children: Vec<Child> = (0..PROCESSES)
        .map(|p| {
            let inputs: Vec<Value> = (0..EACH)
                .map(|i| agent_core::json!({"process": p, "item": i}))
                .collect();
            spawn(&[
                "assign",
                context,
                &Value::from(inputs).to_string(),
                "--write",
            ])
        })
        .collect();
    let mut printed = Vec::new();
    for child in children {
        let run = Run::from(child.wait_with_output().unwrap());
        assert_eq!(run.code, 0, "{}", run.stderr);
        printed.extend(run.stdout.lines().map(str::to_owned));
    }
    let ids = agentctx(&["instances", context]);
    let ids: Vec<String> = serde_json::from_str(&ids.stdout).unwrap();
    assert_eq!(ids.len(), PROCESSES * EACH, "{ids:?}");
    // Each instance holds exactly the one input its assigner printed.
    for line in printed {
        let message: Value = agent_core::json::from_str(&line).unwrap();
        let id = message["_instance"].as_str().unwrap();
        let view = agentctx(&["view", context, "input", "--instance", id]);
        let view: Value = agent_core::json::from_str(&view.stdout).unwrap();
        assert_eq!(view, message["data"], "instance {id}");
    }
}

/// `base` with `context=cli-NAME-…` added, unique to this test run.
pub fn with_context(base: &str, name: &str) -> String {
    test_support::database::with_context(base, &test_support::database::unique_name("cli", name))
}

/// A fresh context on the test server; fails with instructions when no
/// server answers.
pub fn fresh(name: &str) -> String {
    let url = with_context(&test_support::database::url(), name);
    let probe = agentctx(&["check", &url]);
    assert!(
        probe.stderr.ends_with("no such context\n"),
        "{}\n{}",
        probe.stderr,
        test_support::database::HOW_TO_PROVIDE
    );
    url
}

pub mod inspect;
