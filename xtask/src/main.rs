//! Project automation as a plain Rust binary (rust-analyzer's xtask style).
//!
//! - `cargo xtask ci`: formatting, clippy, tests, docs and the layering
//!   check, exactly what CI runs.
//! - `cargo xtask bench`: the benchmark suite, summarised as ratios from
//!   interleaved runs (medians and their spread) in
//!   `target/bench-summary.json` (not part of CI, which only compiles it).
//! - `cargo xtask stress`: thousands of SIGKILLs and a 1 GB load (not in CI).
//! - `cargo xtask layers`: only the layering check.
//! - `cargo xtask features`: the facade with no default features pulls no
//!   HTTP or database client, and the feature sets that matter compile.
//! - `cargo xtask package`: every crate packages on its own (readme,
//!   licenses, metadata, nothing from outside it); dependencies' MSRV.
//! - `cargo xtask tidy`: only the conventions check (spec, spec map and its
//!   anchors, tests, docs, file length, comments).
//! - `cargo xtask public-api [--check]`: write (or check) the public API
//!   snapshots in `docs/public-api/`.
//! - `cargo xtask browser`: `agentctx inspect`'s page in a real headless
//!   Chromium (`tests/browser`; needs Node.js and npm; CI runs it).
//! - `cargo xtask loop-demo`: `agentctx loop` on examples/loop, against a
//!   configured OpenAI-compatible server or a scripted one (CI runs it
//!   scripted).
#![forbid(unsafe_code)]

mod bench;
mod bench_cli;
mod bench_fleet;
mod bench_inspect;
mod bench_python;
mod bench_verify;
mod bench_wide;
mod bench_workers;
mod browser;
mod database;
mod features;
mod layers;
mod loop_demo;
mod outside;
mod package;
mod pooler;
mod public_api;
mod python;
mod spread;
mod stress;
mod test_pool;
mod tidy;

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let task = std::env::args().nth(1).unwrap_or_default();
    let result = match task.as_str() {
        "ci" => ci(),
        "layers" => layers::check(),
        "features" => features::check(),
        "package" => package::check(),
        "tidy" => tidy::check(),
        "public-api" => public_api::run(std::env::args().nth(2).as_deref() == Some("--check")),
        "loop-demo" => loop_demo::run(false),
        "browser" => browser::run(),
        "python" => database::provide().and_then(|database| python::check(&database.url)),
        "bench" => bench::run(),
        "stress" => stress::run(),
        _ => Err(format!(
            "unknown task {task:?}
usage: cargo xtask <ci|bench|stress|layers|features|package|tidy|public-api [--check]|loop-demo|browser|python>"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn ci() -> Result<(), String> {
    // Found or started (PostgreSQL) or checked (Node.js and npm, for the
    // browser tests) before anything is built, so a missing one fails the
    // run at once; a started cluster stops when `database` drops.
    let database = database::provide()?;
    // PgBouncer in front of it, for the suites' second pass (D109: behind a pooler).
    let pgbouncer = pooler::provide()?;
    let pooled = pooler::start(&pgbouncer, &database.url)?;
    browser::tools()?;
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    // Clippy, then the docs (warnings as errors) and the public API, in one
    // target directory under the flag rustdoc's JSON needs: the docs
    // reuse what clippy checked of the dependencies (D91: CI in 12 minutes).
    let docs_env = public_api::env(&public_api::target()?);
    let docs_env: Vec<(&str, &str)> = docs_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    cargo(
        &[
            "clippy",
            "--workspace",
            // All targets: benchmarks are type-checked here and run only by
            // `cargo xtask bench` (a release build of them would double CI).
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
        &docs_env,
    )?;
    public_api::run(true)?;
    // What the tests' reads cache (D101: reads leave nothing beside) stays in the target directory.
    let cache = bench::target_dir()?.join("tmp").join("agentctx-cache");
    let cache = cache.to_string_lossy();
    let pgbouncer = pgbouncer.to_string_lossy();
    let test_env = [
        (database::VARIABLE, database.url.as_str()),
        ("AGENTCTX_CACHE_DIR", cache.as_ref()),
        (pooler::VARIABLE, pgbouncer.as_ref()),
    ];
    let pooled_url = pooled.url();
    let pooled_env = [(test_support::database::POOLED, pooled_url.as_str())];
    // Every test of the workspace (agent-plan's async trait included: its
    // tests turn the feature on), several binaries at a time; those of
    // PostgreSQL again through PgBouncer.
    test_pool::run(&test_env, &pooled_env)?;
    // The page in a real browser, with the binary the test step built.
    browser::run_with(&database.url)?;
    python::check(&database.url)?;
    layers::check()?;
    features::check()?;
    outside::check()?;
    package::check()?;
    tidy::check()?;
    // The README's loop example, against the scripted model.
    loop_demo::run_built(true)?;
    eprintln!("xtask: ci passed");
    Ok(())
}

/// The release build every measuring part runs, in one cargo invocation:
/// cargo unifies features over the packages it builds, so building
/// `agent-cli` alone and running `agentctx-tests` alone would compile the
/// workspace's crates twice (four minutes on 2 cores).
const RELEASE_BUILD: [&str; 9] = [
    "build",
    "--release",
    "-p",
    "agent-cli",
    "-p",
    "agentctx-tests",
    "--features",
    "agentctx-tests/bench",
    "--bins",
];

/// `target/release`, after [`RELEASE_BUILD`] (run once per xtask process:
/// every part of a bench shares it).
pub(crate) fn release_dir() -> Result<std::path::PathBuf, String> {
    static BUILT: std::sync::OnceLock<Result<std::path::PathBuf, String>> =
        std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            cargo(&RELEASE_BUILD, &[])?;
            Ok(bench::target_dir()?.join("release"))
        })
        .clone()
}

/// Runs one of the measuring binaries of `agentctx-tests` (release build,
/// [`release_dir`]) with `args` and returns the JSON object it prints.
pub(crate) fn probe(bin: &str, args: &[&std::ffi::OsStr]) -> Result<serde_json::Value, String> {
    let path = release_dir()?.join(bin);
    let started = std::time::Instant::now();
    // Its progress lines go straight to the terminal: a long part says
    // what it is doing, and its time shows where a run's minutes go.
    let out = Command::new(&path)
        .stderr(std::process::Stdio::inherit())
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    eprintln!(
        "xtask: {bin} {} took {:.0} s",
        args.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        started.elapsed().as_secs_f64()
    );
    if !out.status.success() {
        return Err(format!(
            "{bin} failed ({}): its errors are above",
            out.status
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("bad {bin} output: {e}"))
}

/// Runs `cargo ARGS` with extra environment, failing on a non-zero exit.
pub(crate) fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("xtask: cargo {}", args.join(" "));
    let started = std::time::Instant::now();
    let status = Command::new(cargo)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    eprintln!(
        "xtask: cargo {} took {:.0} s",
        args.first().unwrap_or(&""),
        started.elapsed().as_secs_f64()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

/// The workspace root: the parent of this crate's directory.
pub(crate) fn workspace_root() -> Result<std::path::PathBuf, String> {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").map_err(|_| "run through cargo")?;
    std::path::Path::new(&manifest)
        .parent()
        .map(std::path::Path::to_path_buf)
        .ok_or_else(|| "xtask has no parent directory".into())
}
