//! Activities from the command line: `--activity NAME=COMMAND` runs tool
//! NAME through `sh -c COMMAND` (shared by `run` and `loop`).

use crate::Failure;
use agent_core::quoted;
use agent_core::{json, json::Value};
use agent_output::Outcome;
use agent_plan::{Activities, Activity, Stop};
use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// The activities `--activity NAME=COMMAND` arguments register.
pub(crate) fn activities(specs: &[String], limits: Limits) -> Result<Activities, Failure> {
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
                limits,
            },
        );
    }
    Ok(activities)
}

/// The activities of `--activity NAME=COMMAND`, `--mcp COMMAND` and
/// `--mcp-http URL`, each bounded by `timeout` seconds; the MCP servers
/// started, which must outlive the activities' use.
pub(crate) fn activities_with_mcp(
    specs: &[String],
    mcp: &[String],
    mcp_http: &[String],
    timeout: u64,
) -> Result<(Activities, Option<crate::mcp::client::McpServers>), Failure> {
    let mut activities = activities(specs, Limits::with_timeout(timeout))?;
    let servers = crate::mcp::client::start(
        mcp,
        mcp_http,
        std::time::Duration::from_secs(timeout),
        &mut activities,
    )?;
    Ok((activities, servers))
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
    limits: Limits,
}

/// What an activity may print on stdout, and on stderr, before it is
/// stopped: far more than any JSON result, far less than memory.
pub(crate) const MAX_OUTPUT_BYTES: usize = 64 << 20;

/// How long an activity may run and how much it may print, so a hung or
/// flooding activity cannot hold `run` forever or exhaust its memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Seconds before the activity's whole process group is killed.
    pub(crate) timeout_secs: u64,
    /// Bytes it may print on stdout, and on stderr, before it is killed.
    pub(crate) max_output: usize,
}

impl Limits {
    /// `timeout_secs`, and [`MAX_OUTPUT_BYTES`] of output.
    pub(crate) fn with_timeout(timeout_secs: u64) -> Limits {
        Limits {
            timeout_secs,
            max_output: MAX_OUTPUT_BYTES,
        }
    }
}

/// What a bounded command left behind.
struct Finished {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// Why it was stopped, when it was.
    stopped: Option<String>,
}

/// Runs `sh -c COMMAND` in a process group of its own with `input` on
/// stdin, killing the whole group when it runs past the timeout, prints
/// past the cap, or exits leaving children behind (they would hold its
/// output open).
fn run_bounded(
    command: &str,
    input: String,
    limits: Limits,
    stop: &Stop,
) -> Result<Finished, String> {
    use std::os::unix::process::CommandExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    let group = child.id();
    let stdin = child.stdin.take();
    // Write from another thread so a command that prints before reading
    // all its input cannot deadlock against us.
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(input.as_bytes());
        }
    });
    let overflow = Arc::new(AtomicBool::new(false));
    let reader = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        let overflow = Arc::clone(&overflow);
        let cap = limits.max_output;
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let Some(mut pipe) = pipe else { return kept };
            let mut chunk = [0u8; 65536];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                if kept.len() + n > cap {
                    overflow.store(true, Ordering::SeqCst);
                    break;
                }
                kept.extend_from_slice(&chunk[..n]);
            }
            kept
        })
    };
    let stdout = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let stderr = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let started = std::time::Instant::now();
    let timeout = std::time::Duration::from_secs(limits.timeout_secs);
    let mut stopped = None;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for the command failed: {e}")),
        }
        if stop.is_stopped() {
            stopped = Some("stopped: its result is no longer wanted".to_owned());
        } else if overflow.load(Ordering::SeqCst) {
            stopped = Some(format!("printed more than {} bytes", limits.max_output));
        } else if started.elapsed() >= timeout {
            stopped = Some(format!("timed out after {} s", limits.timeout_secs));
        }
        if stopped.is_some() {
            kill_group(group);
            match child.wait() {
                Ok(status) => break status,
                Err(e) => return Err(format!("waiting for the command failed: {e}")),
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    // Children it left running would hold its output open: end them too.
    kill_group(group);
    let _ = writer.join();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if stopped.is_none() && overflow.load(Ordering::SeqCst) {
        stopped = Some(format!("printed more than {} bytes", limits.max_output));
    }
    Ok(Finished {
        status,
        stdout,
        stderr,
        stopped,
    })
}

/// Sends SIGKILL to every process of group `group` (none left is fine).
pub(crate) fn kill_group(group: u32) {
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{group}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The failure of a command that could not be run at all.
fn not_run(text: String) -> Outcome {
    Outcome::Failure(json!({ "error": text }))
}

impl Activity for ShellActivity {
    fn run(&self, call: &Value) -> Outcome {
        self.run_until(call, &Stop::new())
    }

    /// The command's process group is killed as soon as `stop` is set (a
    /// worker's claim taken over), as it is at the timeout.
    fn run_until(&self, call: &Value, stop: &Stop) -> Outcome {
        let out = match run_bounded(&self.command, call.to_string(), self.limits, stop) {
            Ok(out) => out,
            Err(e) => return not_run(e),
        };
        if let Some(reason) = out.stopped {
            return Outcome::Failure(json!({
                "error": reason,
                "stderr": tail(&out.stderr, STDERR_TAIL_BYTES),
            }));
        }
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
        match agent_core::json::from_str(&stdout) {
            Ok(value) => Outcome::Success(value),
            // What it printed, its start, says more than where parsing stopped.
            Err(e) => Outcome::Failure(json!({
                "exitStatus": 0,
                "error": format!("stdout is not JSON: {e}"),
                "stdout": head(&out.stdout, STDOUT_HEAD_BYTES),
                "stderr": tail(&out.stderr, STDERR_TAIL_BYTES),
            })),
        }
    }
}

/// How much of a non-JSON stdout a failure quotes: its start.
const STDOUT_HEAD_BYTES: usize = 200;

/// The first `max` bytes of `bytes` as text, trimmed, ending at a
/// character boundary; `…` marks a cut.
fn head(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn r34d_a_stopped_activity_has_its_process_group_killed_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        // A child of the shell that would outlive it, and write, if left.
        let command = format!("(sleep 2; touch '{}') & sleep 30", marker.display());
        let stop = Stop::new();
        let stopper = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            stopper.stop();
        });
        let started = std::time::Instant::now();
        let out = run_bounded(&command, "{}".into(), Limits::with_timeout(60), &stop).unwrap();
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            out.stopped.as_deref(),
            Some("stopped: its result is no longer wanted")
        );
        std::thread::sleep(std::time::Duration::from_millis(2500));
        assert!(!marker.exists(), "the whole group was killed");
    }
}
