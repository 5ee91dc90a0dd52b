//! Activities from the command line: `--activity NAME=COMMAND` runs tool
//! NAME through `sh -c COMMAND` (shared by `run` and `loop`).

use crate::Failure;
use agent_core::quoted;
use agent_output::Outcome;
use agent_plan::{Activities, Activity};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

/// The activities `--activity NAME=COMMAND` arguments register.
pub(crate) fn activities(specs: &[String]) -> Result<Activities, Failure> {
    let mut activities = Activities::new();
    for spec in specs {
        let (name, command) = spec.split_once('=').ok_or_else(|| {
            Failure::usage(format!(
                "--activity {}: expected NAME=COMMAND",
                quoted(spec)
            ))
        })?;
        activities.register(
            name,
            ShellActivity {
                tool: name.to_owned(),
                command: command.to_owned(),
            },
        );
    }
    Ok(activities)
}

/// How much of a failed command's stderr its failure value keeps: the end,
/// where the error usually is.
const STDERR_TAIL_BYTES: usize = 2000;

/// An activity that runs a shell command: the resolved call as JSON on
/// stdin, the result as JSON on stdout. A non-zero exit is a failure whose
/// value is `{"exitStatus": N, "stderr": "…"}` (the end of its stderr).
struct ShellActivity {
    tool: String,
    command: String,
}

/// The failure of a command that could not be run at all.
fn not_run(text: String) -> Outcome {
    Outcome::Failure(json!({ "error": text }))
}

impl Activity for ShellActivity {
    fn run(&self, call: &Value) -> Outcome {
        let child = Command::new("sh")
            .args(["-c", &self.command])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => return not_run(format!("cannot start sh: {e}")),
        };
        let input = call.to_string();
        let stdin = child.stdin.take();
        // Write from another thread so a command that prints before reading
        // all its input cannot deadlock against us.
        let writer = std::thread::spawn(move || {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(input.as_bytes());
            }
        });
        let out = match child.wait_with_output() {
            Ok(out) => out,
            Err(e) => return not_run(format!("waiting for the command failed: {e}")),
        };
        let _ = writer.join();
        if !out.status.success() {
            return Outcome::Failure(json!({
                // A command killed by a signal has no exit code.
                "exitStatus": out.status.code(),
                "stderr": tail(&out.stderr, STDERR_TAIL_BYTES),
            }));
        }
        // A command that succeeds may still say something: pass it on,
        // each line marked with the tool it came from.
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            eprintln!("{}: {line}", self.tool);
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.trim().is_empty() {
            return Outcome::Success(Value::Null);
        }
        match serde_json::from_str(&stdout) {
            Ok(value) => Outcome::Success(value),
            Err(e) => Outcome::Failure(json!({
                "exitStatus": 0,
                "error": format!("stdout is not JSON: {e}"),
                "stderr": tail(&out.stderr, STDERR_TAIL_BYTES),
            })),
        }
    }
}

/// The last `max` bytes of `bytes` as text, trimmed, starting at a
/// character boundary; `…` marks a cut.
fn tail(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}
