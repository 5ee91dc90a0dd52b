//! Running the `agentctx` binary from integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)] // each test file uses a part

use agent_core::json::Value;
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

impl Run {
    /// stderr without `append`'s line `appended N message(s); CONTEXT now
    /// has M message(s)` (D65: machine-readable output): what is left is warnings and errors.
    pub fn stderr_without_count(&self) -> String {
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

/// The test server: `AGENTCTX_TEST_DATABASE_URL`, else the one
/// `cargo xtask ci` provides.
pub fn database() -> String {
    std::env::var("AGENTCTX_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://root@127.0.0.1:5432/test".to_owned())
}

/// `base` with `context=cli-NAME-…` added, unique to this test run.
pub fn with_context(base: &str, name: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let sep = if base.contains('?') { '&' } else { '?' };
    format!(
        "{base}{sep}context=cli-{name}-{}-{nanos}-{n}",
        std::process::id()
    )
}

/// A fresh context on the test server; fails with instructions when no
/// server answers.
pub fn fresh(name: &str) -> String {
    let url = with_context(&database(), name);
    let probe = agentctx(&["check", &url]);
    assert!(
        probe.stderr.ends_with("no such context\n"),
        "{}\nthese tests need PostgreSQL: run `cargo xtask ci` (it finds or starts one), or set \
         AGENTCTX_TEST_DATABASE_URL to a server's URL (default postgres://root@127.0.0.1:5432/test)",
        probe.stderr
    );
    url
}

/// Runs `args` (the program first) on a pseudo-terminal through `script`,
/// which copies what the command wrote, both streams, to its own stdout.
pub fn on_terminal(args: &[&str]) -> Output {
    let words: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    Command::new("script")
        .args(["-qec", &words.join(" "), "/dev/null"])
        .output()
        .unwrap()
}
pub mod inspect;
