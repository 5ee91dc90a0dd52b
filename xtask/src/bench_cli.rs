//! `cargo xtask bench cli`: whole `agentctx` processes (the
//! release binary) at 100 and at 100,000 messages of history, on the W5
//! context (`tests/workloads.rs`: a bounded state updated once per step,
//! the last 32 messages after the snapshot).
//!
//! - `CLI-apply-100k-vs-100`: `agentctx apply FILE CALL --result 7 --write`.
//!   Each run appends a line, and the next run reads it in the tail: the
//!   file is not cut back, since the head record kept beside it holds the
//!   file's change time, which no restore can put back, and an open that
//!   finds the record contradicted checks the log's prefix again (D44:
//!   files beside never overrule; D110: first sight by the chain). From a
//!   32-line tail, 31 runs (30 rounds and the warm-up) stay under the 64
//!   messages after which a commit writes a new snapshot; with more rounds
//!   one run writes it, and the median shrugs it off.
//! - `CLI-view-100k-vs-100`: `agentctx view FILE state` (reads only).
//! - `W5-first-sight-vs-sha256sum`: the first `agentctx view COPY state` of
//!   a copy of the 100,000-message file, its snapshot and record beside it
//!   (copied and synced before each of three trials a round, not timed; a
//!   round's sample is the median of its trials), against `sha256sum
//!   COPY`, in turns (D110: first sight by the chain).
//! - `W5-warm-vs-first-sight`: the next `view` of the same copy, which its
//!   first sight recorded, against that first sight.
//! - `CLI-pg-apply-100k-vs-100`: the same `apply --write` on the context
//!   copied into PostgreSQL (`agentctx copy FILE URL`, in a schema of this
//!   run's own, dropped at its end); at 100 messages every run gets a fresh
//!   copy (not timed), at 100,000 one copy takes the few runs' appends.
//!
//! The two sizes alternate run by run (which goes first turning every
//! round), so drift on these shared machines hits both alike; each row has
//! the medians and the per-round ratios. Knobs: `CLI_ROUNDS` (30),
//! `CLI_PG_ROUNDS` (10).

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const CALL: &str = r#"{"_tool":"observe","_outputPath":"†state.x","_outputMethod":"set"}"#;
const SIZES: [usize; 2] = [100, 100_000];

pub(crate) fn run(target: &Path) -> Result<Vec<Value>, String> {
    let bin = crate::release_dir()?.join("agentctx");
    let dir = target.join("bench-cli");
    // Fresh files: nothing a past run left beside them.
    let _ = std::fs::remove_dir_all(&dir);
    let sizes: Vec<String> = SIZES.iter().map(ToString::to_string).collect();
    let mut args: Vec<&std::ffi::OsStr> = vec!["files".as_ref(), dir.as_os_str()];
    args.extend(sizes.iter().map(|s| s.as_ref() as &std::ffi::OsStr));
    let made = crate::probe("w5", &args)?;
    let files: Vec<Fixture> = made["files"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|f| Fixture {
            path: PathBuf::from(f["path"].as_str().unwrap_or_default()),
        })
        .collect();
    let [small, big] = files.as_slice() else {
        return Err(format!("w5 files made {} files, not 2", files.len()));
    };
    let rounds = knob("CLI_ROUNDS", 30);
    let pg_rounds = knob("CLI_PG_ROUNDS", 10);
    let mut rows = Vec::new();

    eprintln!("xtask: cli apply --write, files, {rounds} rounds");
    let apply = |fixture: &Fixture| -> Result<u128, String> {
        let context = fixture.path.display().to_string();
        time(&bin, &["apply", &context, CALL, "--result", "7", "--write"])
    };
    let timed = alternate(rounds, || apply(big), || apply(small))?;
    rows.push(row(
        "CLI-apply-100k-vs-100",
        timed,
        "the same `agentctx apply FILE CALL --result 7 --write` process at 100 messages",
        rounds,
    ));

    eprintln!("xtask: cli view, files, {rounds} rounds");
    let view = |fixture: &Fixture| -> Result<u128, String> {
        time(
            &bin,
            &["view", &fixture.path.display().to_string(), "state"],
        )
    };
    let timed = alternate(rounds, || view(big), || view(small))?;
    rows.push(row(
        "CLI-view-100k-vs-100",
        timed,
        "the same `agentctx view FILE state` process at 100 messages",
        rounds,
    ));

    eprintln!("xtask: first sight of a copy, {rounds} rounds");
    rows.extend(first_sight(&bin, big, &dir.join("copy"), rounds)?);

    eprintln!("xtask: cli apply --write, PostgreSQL, {pg_rounds} rounds");
    let scratch = Scratch::create()?;
    let big_url = scratch.context("w5_100000");
    let started = Instant::now();
    run_ok(&bin, &["copy", &big.path.display().to_string(), &big_url])?;
    let copy_seconds = started.elapsed().as_secs_f64();
    let mut fresh = 0;
    let timed = alternate(
        pg_rounds,
        || time(&bin, &["apply", &big_url, CALL, "--result", "7", "--write"]),
        || {
            fresh += 1;
            let url = scratch.context(&format!("w5_100_{fresh}"));
            run_ok(&bin, &["copy", &small.path.display().to_string(), &url])?;
            time(&bin, &["apply", &url, CALL, "--result", "7", "--write"])
        },
    )?;
    let mut pg = row(
        "CLI-pg-apply-100k-vs-100",
        timed,
        "the same `agentctx apply URL CALL --result 7 --write` process at 100 messages \
         (PostgreSQL)",
        pg_rounds,
    );
    pg["copy_100k_seconds"] = json!(copy_seconds);
    rows.push(pg);
    Ok(rows)
}

/// The first sight of a fresh copy of `fixture` in `dir` against
/// `sha256sum` of it (in turns, which goes first turning every round), and
/// the warm `view` after it against that first sight.
fn first_sight(
    bin: &Path,
    fixture: &Fixture,
    dir: &Path,
    rounds: usize,
) -> Result<[Value; 2], String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let name = fixture
        .path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy();
    let copy = dir.join(&*name);
    let context = copy.display().to_string();
    let (mut first, mut sums, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    // A copy made and synced before each of three trials a round; a
    // round's sample is the median of its trials (a run is tens of
    // milliseconds, and one late wake-up would swing the round).
    let copy = || -> Result<(), String> {
        for file in [
            name.to_string(),
            format!(".{name}.snapshot"),
            format!(".{name}.head"),
        ] {
            let from = fixture.path.with_file_name(&file);
            let to = dir.join(&file);
            // Removed first: a fresh inode, as a copy to another machine.
            let _ = std::fs::remove_file(&to);
            std::fs::copy(&from, &to).map_err(|e| format!("cannot copy {file}: {e}"))?;
            std::fs::File::open(&to)
                .and_then(|f| f.sync_all())
                .map_err(|e| format!("cannot sync {file}: {e}"))?;
        }
        Ok(())
    };
    let view = || time(bin, &["view", &context, "state"]);
    let sum = || time(Path::new("sha256sum"), &[&context]);
    for round in 0..=rounds {
        let mut trials: [Vec<u128>; 3] = Default::default();
        for trial in 0..3 {
            copy()?;
            let (seen, summed) = if (round + trial) % 2 == 0 {
                (view()?, sum()?)
            } else {
                let summed = sum()?;
                (view()?, summed)
            };
            let again = view()?;
            for (samples, taken) in trials.iter_mut().zip([seen, summed, again]) {
                samples.push(taken);
            }
        }
        // Round 0 warms the page cache and the binary.
        if round > 0 {
            let [seen, summed, again] = trials.map(|t| median(t) as u128);
            first.push(seen);
            sums.push(summed);
            warm.push(again);
        }
    }
    let ratios = |a: &[u128], b: &[u128]| -> Vec<f64> {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| x as f64 / y as f64)
            .collect()
    };
    let first_vs_sum = Timed {
        ratios: ratios(&first, &sums),
        ours: median(first.clone()),
        base: median(sums),
    };
    let warm_vs_first = Timed {
        ratios: ratios(&warm, &first),
        ours: median(warm),
        base: median(first),
    };
    Ok([
        row(
            "W5-first-sight-vs-sha256sum",
            first_vs_sum,
            "`sha256sum` of the same copied 100,000-message file, in turns",
            rounds,
        ),
        row(
            "W5-warm-vs-first-sight",
            warm_vs_first,
            "the first `agentctx view COPY state` of the same copy",
            rounds,
        ),
    ])
}

/// A W5 file, as `w5 files` wrote it: its last messages committed after
/// its snapshot through the store, so the head record beside it matches
/// and an open goes through the snapshot.
struct Fixture {
    path: PathBuf,
}

/// Runs `ours` and `base` alternately `rounds` times (after one warm-up
/// each; which goes first turns every round) and returns their median
/// times in ns and the per-round ratios.
fn alternate(
    rounds: usize,
    mut ours: impl FnMut() -> Result<u128, String>,
    mut base: impl FnMut() -> Result<u128, String>,
) -> Result<Timed, String> {
    ours()?;
    base()?;
    let (mut a, mut b) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for round in 0..rounds {
        if round % 2 == 0 {
            a.push(ours()?);
            b.push(base()?);
        } else {
            b.push(base()?);
            a.push(ours()?);
        }
    }
    let ratios = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| x as f64 / y as f64)
        .collect();
    Ok(Timed {
        ours: median(a),
        base: median(b),
        ratios,
    })
}

/// Medians of both sides (ns) and the per-round ratios.
struct Timed {
    ours: f64,
    base: f64,
    ratios: Vec<f64>,
}

pub(crate) fn median(mut samples: Vec<u128>) -> f64 {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default() as f64
}

/// Wall time of one `bin ARGS` process, which must succeed.
pub(crate) fn time(bin: &Path, args: &[&str]) -> Result<u128, String> {
    let started = Instant::now();
    run_ok(bin, args)?;
    Ok(started.elapsed().as_nanos())
}

pub(crate) fn run_ok(bin: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(bin)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "agentctx {} failed ({}): {}",
            args.first().copied().unwrap_or_default(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn row(workload: &str, timed: Timed, baseline: &str, rounds: usize) -> Value {
    json!({
        "workload": workload,
        "ours_ns": timed.ours,
        "baseline": baseline,
        "baseline_ns": timed.base,
        "ratio": timed.ours / timed.base,
        "ratios": timed.ratios,
        "rounds": rounds,
    })
}

pub(crate) fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// A schema of this run's own on the bench's server, dropped at the end.
pub(crate) struct Scratch {
    admin: postgres::Client,
    schema: String,
    url: String,
}

impl Scratch {
    pub(crate) fn create() -> Result<Scratch, String> {
        let server = std::env::var(crate::database::VARIABLE)
            .unwrap_or_else(|_| crate::database::DEFAULT.to_owned());
        let mut admin = postgres::Client::connect(&server, postgres::NoTls)
            .map_err(|e| format!("cannot connect to PostgreSQL: {e}"))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let schema = format!("agentctx_bench_cli_{}_{nanos}", std::process::id());
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .map_err(|e| format!("cannot create schema {schema}: {e}"))?;
        let url = with_parameter(&server, &format!("options=-c%20search_path%3D{schema}"));
        Ok(Scratch { admin, schema, url })
    }

    pub(crate) fn context(&self, name: &str) -> String {
        with_parameter(&self.url, &format!("context={name}"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = self
            .admin
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema));
    }
}

fn with_parameter(url: &str, parameter: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{parameter}")
}
