//! The workspace's tests, built once and run several binaries at a time.
//!
//! `cargo test --workspace` runs its test binaries one after another, and
//! most of their time is spent waiting — on child processes, on
//! PostgreSQL, on leases running out — with a core idle. Here they are
//! built by one `cargo test --no-run` and run [`JOBS`] at a time, the
//! slowest first, each exactly as cargo would run it (from its package's
//! directory, with the harness's own threads), its output kept in a file
//! and shown when it fails. A crate's integration tests are one binary
//! (`tests/it/`, linked once); each of its modules runs as a job of its
//! own, as the files did when each was a binary. The doc tests run as one more job. Every
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

/// The parts that run a second time through PgBouncer in transaction
/// pooling mode (D109: behind a pooler): the stores, keys, snapshots, the
/// chain, claims, workers (the restart included), the CLI over
/// PostgreSQL, `inspect` and the facade's opening. Those that proxy or set session
/// options go straight to the server in that pass too.
const THROUGH_POOLER: [&str; 13] = [
    "agent-store/postgres",
    "agent-store/keys_pg",
    "agent-store/snapshots_pg",
    "agent-store/chain_pg",
    "agent-store/calls",
    "agent-store/names_pg",
    "agent-worker/workers",
    "agent-cli/postgres",
    "agent-cli/workers",
    "agent-cli/workers_outcomes",
    "agent-cli/keys",
    "agent-cli/inspect",
    "agentctx/open",
];

/// Tests of the [`THROUGH_POOLER`] parts that reach no pooler (a cluster,
/// a schema or a proxy of their own), left out of the second pass.
const DIRECT_ONLY: [&str; 9] = [
    "r34b_a_restarted_server_and_terminated_backends_lose_nothing_acknowledged",
    "r34b_two_processes_migrating_one_database_at_once_both_succeed",
    "r34b_postgres_migration_run_by_many_connections_at_once_succeeds_once",
    "r34b_postgres_tables_of_the_wrong_shape_are_a_clear_error",
    "r34c_a_snapshot_kept_whole_by_version_8_is_read_after_the_migration_and_replaced",
    "r34b_a_connection_lost_before_the_append_reached_the_server_is_retried",
    "r34b_a_connection_lost_after_the_append_committed_is_in_doubt_not_repeated",
    "r34b_a_lost_append_still_running_on_the_server_is_ended_before_it_is_retried",
    "r34b_an_in_doubt_append_retried_with_its_key_lands_once",
];

/// One test binary to run.
struct Job {
    /// `package/target` for messages (`agent-cli/concurrency`).
    name: String,
    /// What runs it.
    command: Command,
}

/// Builds every test of the workspace, then runs them `JOBS` at a time;
/// the [`THROUGH_POOLER`] parts run again with `pooled` added to `env`.
pub(crate) fn run(env: &[(&str, &str)], pooled: &[(&str, &str)]) -> Result<(), String> {
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
    let mut again: Vec<Job> = Vec::new();
    for part in parts(&binaries)? {
        // The part's binary, with `extra` in its environment, running
        // `tests` by exact name (all of it when the part is a whole binary).
        let command = |extra: &[(&str, &str)], tests: &[&String]| {
            let mut command = Command::new(&part.binary.path);
            command
                .current_dir(&part.binary.dir)
                .envs(env.iter().chain(extra).copied());
            if !part.tests.is_empty() {
                command.arg("--exact").args(tests);
            }
            command
        };
        if THROUGH_POOLER.contains(&part.name.as_str()) {
            // Tests that never reach the pooler (their own cluster, schema
            // or proxy) are not run again.
            let kept: Vec<&String> = part
                .tests
                .iter()
                .filter(|t| !DIRECT_ONLY.iter().any(|d| t.ends_with(d)))
                .collect();
            if part.tests.is_empty() || !kept.is_empty() {
                again.push(Job {
                    name: format!("{} through PgBouncer", part.name),
                    command: command(pooled, &kept),
                });
            }
        }
        let all: Vec<&String> = part.tests.iter().collect();
        let job = Job {
            command: command(&[], &all),
            name: part.name,
        };
        if ALONE.contains(&job.name.rsplit('/').next().unwrap_or_default()) {
            alone.push(job);
        } else {
            jobs.push(job);
        }
    }
    // After the first passes of the slowest, before the rest.
    let at = jobs.len().min(1 + SLOWEST.len());
    jobs.splice(at..at, again);
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
    Ok(binaries_in(&String::from_utf8_lossy(&output.stdout)))
}

/// The `agentctx` binary the test build made, once it has run.
pub(crate) static AGENTCTX_BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The name of the binary holding a crate's integration tests.
const MERGED: &str = "it";

/// A job's share of a binary: all of it, or one module's tests.
struct Part<'a> {
    /// `package/target`, or `package/module` for a module of [`MERGED`].
    name: String,
    binary: &'a Binary,
    /// The tests to run by exact name; empty for all.
    tests: Vec<String>,
}

/// Each binary as the jobs it runs as, in the order to start them: the
/// [`SLOWEST`] first, then the largest binaries.
fn parts(binaries: &[Binary]) -> Result<Vec<Part<'_>>, String> {
    let mut parts = Vec::new();
    for binary in binaries {
        let (package, target) = binary.name.rsplit_once('/').unwrap_or(("?", &binary.name));
        if target != MERGED {
            parts.push(Part {
                name: binary.name.clone(),
                binary,
                tests: Vec::new(),
            });
            continue;
        }
        let listed = Command::new(&binary.path)
            .args(["--list", "--format", "terse"])
            .current_dir(&binary.dir)
            .output()
            .map_err(|e| format!("cannot list the tests of {}: {e}", binary.name))?;
        if !listed.status.success() {
            return Err(format!("listing the tests of {} failed", binary.name));
        }
        for (module, tests) in by_module(&String::from_utf8_lossy(&listed.stdout)) {
            parts.push(Part {
                name: format!("{package}/{module}"),
                binary,
                tests,
            });
        }
    }
    parts.sort_by_key(|p| {
        let rank = SLOWEST
            .iter()
            .position(|s| p.name.rsplit('/').next() == Some(*s))
            .unwrap_or(SLOWEST.len());
        (rank, std::cmp::Reverse(p.binary.size))
    });
    Ok(parts)
}

/// The tests of `--list --format terse` (`path::name: test` lines), grouped
/// by their first module, in order of first appearance.
fn by_module(list: &str) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for line in list.lines() {
        let Some(test) = line.strip_suffix(": test") else {
            continue;
        };
        let module = test.split_once("::").map_or(test, |(module, _)| module);
        match groups.iter_mut().find(|(m, _)| m == module) {
            Some((_, tests)) => tests.push(test.to_owned()),
            None => groups.push((module.to_owned(), vec![test.to_owned()])),
        }
    }
    groups
}

/// The test binaries among cargo's JSON messages.
fn binaries_in(messages: &str) -> Vec<Binary> {
    let mut found = Vec::new();
    for line in messages.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        // The `agentctx` binary the CLI's tests run, for the Python step's
        // MCP tests: built once, as they use it.
        if message["reason"] == "compiler-artifact"
            && message["target"]["name"] == "agentctx"
            && message["target"]["kind"][0] == "bin"
            // Not the harness of the binary's own unit tests.
            && message["profile"]["test"] == false
            && let Some(path) = message["executable"].as_str()
        {
            let _ = AGENTCTX_BIN.set(PathBuf::from(path));
        }
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
    fn a_merged_binary_runs_as_one_job_per_module() {
        let list = "concurrency::a: test\nconcurrency::inner::b: test\nloop::c: test\n\
                    support::d: benchmark\nkeys::e: test\n";
        assert_eq!(
            by_module(list),
            [
                (
                    "concurrency".to_owned(),
                    vec![
                        "concurrency::a".to_owned(),
                        "concurrency::inner::b".to_owned()
                    ]
                ),
                ("loop".to_owned(), vec!["loop::c".to_owned()]),
                ("keys".to_owned(), vec!["keys::e".to_owned()]),
            ]
        );
    }

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
