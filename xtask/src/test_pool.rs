//! The workspace's tests, built once and run several binaries at a time.
//!
//! `cargo test --workspace` runs its test binaries one after another, and
//! most of their time is spent waiting — on child processes, on
//! PostgreSQL, on leases running out — with a core idle. Here they are
//! built by one `cargo test --no-run` and run [`JOBS`] at a time, the
//! slowest first, each exactly as cargo would run it (from its package's
//! directory, with the harness's own threads), its output kept in a file
//! and shown when it fails. The doc tests run as one more job. Every
//! binary is bounded in time ([`LIMIT`]): one that hangs fails the run.
//! Binaries that time themselves ([`ALONE`]) run last, one at a time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Binaries run at once: the tests wait more than they compute, so a
/// third one fills the cores the waiting leave idle.
const JOBS: usize = 3;

/// The longest any one binary may run.
const LIMIT: Duration = Duration::from_secs(15 * 60);

/// The binaries that took longest in earlier runs, slowest first: started
/// first so the run does not end waiting for one of them. Only an order;
/// a name missing here runs after these, the largest binary first.
const SLOWEST: [&str; 10] = [
    "concurrency",
    "postgres",
    "workers",
    "first_writes",
    "snapshots_pg",
    "hostile_cli",
    "memory",
    "durability",
    "props",
    "hostile",
];

/// Binaries that time themselves (linear growth checked as a ratio of
/// times): run after the others, one at a time, with nothing beside them.
const ALONE: [&str; 1] = ["growth"];

/// One test binary to run.
struct Job {
    /// `package/target` for messages (`agent-cli/concurrency`).
    name: String,
    /// What runs it.
    command: Command,
}

/// Builds every test of the workspace, then runs them `JOBS` at a time.
pub(crate) fn run(env: &[(&str, &str)]) -> Result<(), String> {
    let started = Instant::now();
    let binaries = build()?;
    let out_dir = crate::bench::target_dir()?.join("ci-tests");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let mut jobs: Vec<Job> = Vec::new();
    // The doc tests compile as they run: the longest job, started first.
    let mut doc = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    doc.args(["test", "--workspace", "--doc"])
        .envs(env.iter().copied());
    jobs.push(Job {
        name: "doc tests".into(),
        command: doc,
    });
    let mut alone: Vec<Job> = Vec::new();
    for binary in binaries {
        let mut command = Command::new(&binary.path);
        command.current_dir(&binary.dir).envs(env.iter().copied());
        let job = Job {
            name: binary.name,
            command,
        };
        if ALONE.contains(&job.name.rsplit('/').next().unwrap_or_default()) {
            alone.push(job);
        } else {
            jobs.push(job);
        }
    }
    let count = jobs.len() + alone.len();
    let mut failed = run_all(jobs, &out_dir, JOBS);
    failed.extend(run_all(alone, &out_dir.join("alone"), 1));
    eprintln!(
        "xtask: {count} test jobs, {JOBS} at a time, took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("tests failed: {}", failed.join(", ")))
    }
}

/// A built test binary.
struct Binary {
    name: String,
    path: PathBuf,
    /// Its package's directory, where cargo runs it.
    dir: PathBuf,
    size: u64,
}

/// `cargo test --workspace --no-run`, and the test binaries it built, in
/// the order to start them.
fn build() -> Result<Vec<Binary>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("xtask: cargo test --workspace --no-run");
    let started = Instant::now();
    let output = Command::new(cargo)
        .args([
            "test",
            "--workspace",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    eprintln!(
        "xtask: cargo test --no-run took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if !output.status.success() {
        return Err(format!(
            "`cargo test --workspace --no-run` failed ({})",
            output.status
        ));
    }
    let mut binaries = binaries_in(&String::from_utf8_lossy(&output.stdout));
    binaries.sort_by_key(|b| {
        let rank = SLOWEST
            .iter()
            .position(|s| b.name.rsplit('/').next() == Some(*s))
            .unwrap_or(SLOWEST.len());
        (rank, std::cmp::Reverse(b.size))
    });
    Ok(binaries)
}

/// The test binaries among cargo's JSON messages.
fn binaries_in(messages: &str) -> Vec<Binary> {
    let mut found = Vec::new();
    for line in messages.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
            continue;
        }
        let Some(path) = message["executable"].as_str() else {
            continue;
        };
        let manifest = Path::new(message["manifest_path"].as_str().unwrap_or_default());
        let package = message["package_id"]
            .as_str()
            .and_then(package_name)
            .unwrap_or("?");
        let target = message["target"]["name"].as_str().unwrap_or("?");
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        found.push(Binary {
            name: format!("{package}/{target}"),
            path: PathBuf::from(path),
            dir: manifest.parent().map(Path::to_path_buf).unwrap_or_default(),
            size,
        });
    }
    found
}

/// The package's name in a package id (`path+file:///w/crates/agent-cli#0.1.0`,
/// or `path+file:///w/tests#agentctx-tests@0.1.0`).
fn package_name(id: &str) -> Option<&str> {
    let (path, fragment) = id.rsplit_once('#')?;
    match fragment.split_once('@') {
        Some((name, _)) => Some(name),
        None => path.rsplit('/').next(),
    }
}

/// Runs `jobs` `at_once` at a time, in order; returns the names of those
/// that failed.
fn run_all(jobs: Vec<Job>, out_dir: &Path, at_once: usize) -> Vec<String> {
    if let Err(e) = std::fs::create_dir_all(out_dir) {
        return vec![format!("{}: {e}", out_dir.display())];
    }
    let queue = Mutex::new(jobs.into_iter().enumerate());
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..at_once {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().map(|mut q| q.next()).ok().flatten();
                    let Some((index, mut job)) = next else { break };
                    let out = out_dir.join(format!("{index:03}.log"));
                    if let Err(why) = run_one(&mut job, &out) {
                        eprintln!("xtask: FAILED {}: {why}", job.name);
                        if let Ok(text) = std::fs::read_to_string(&out) {
                            eprintln!("{text}");
                        }
                        if let Ok(mut failed) = failed.lock() {
                            failed.push(job.name);
                        }
                    }
                }
            });
        }
    });
    failed.into_inner().unwrap_or_default()
}

/// Runs one job, its output into `out`; Err says why it failed.
fn run_one(job: &mut Job, out: &Path) -> Result<(), String> {
    let started = Instant::now();
    let file = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", out.display()))?;
    let mut child = job
        .command
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start it: {e}"))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("still running after {} s", LIMIT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let summary = text
        .lines()
        .filter(|l| l.starts_with("test result:"))
        .filter_map(|l| l.split(';').next())
        .map(|l| l.trim_start_matches("test result: "))
        .collect::<Vec<_>>()
        .join(", ");
    if status.success() {
        eprintln!("xtask: {} {summary} in {seconds:.1} s", job.name);
        Ok(())
    } else {
        Err(format!("{status} after {seconds:.1} s"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_are_read_from_both_id_forms() {
        assert_eq!(
            package_name("path+file:///w/crates/agent-cli#0.1.0"),
            Some("agent-cli")
        );
        assert_eq!(
            package_name("path+file:///w/tests#agentctx-tests@0.1.0"),
            Some("agentctx-tests")
        );
        assert_eq!(package_name("no fragment"), None);
    }

    #[test]
    fn only_test_profile_executables_are_binaries_to_run() {
        let messages = [
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/crates/agent-cli#0.1.0","manifest_path":"/w/crates/agent-cli/Cargo.toml","target":{"name":"concurrency"},"profile":{"test":true},"executable":"/t/concurrency-1"}"#,
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/crates/agent-cli#0.1.0","manifest_path":"/w/crates/agent-cli/Cargo.toml","target":{"name":"agentctx"},"profile":{"test":false},"executable":"/t/agentctx"}"#,
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/crates/agent-core#0.1.0","manifest_path":"/w/crates/agent-core/Cargo.toml","target":{"name":"agent_core"},"profile":{"test":false},"executable":null}"#,
            r#"{"reason":"build-finished","success":true}"#,
        ]
        .join("\n");
        let found = binaries_in(&messages);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "agent-cli/concurrency");
        assert_eq!(found[0].dir, Path::new("/w/crates/agent-cli"));
    }
}
