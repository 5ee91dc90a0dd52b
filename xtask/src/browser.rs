//! `cargo xtask browser`: the tests of `agentctx inspect`'s page in a real
//! headless Chromium (`tests/browser`: node's test runner driving
//! puppeteer-core; the browser comes inside the @sparticuz/chromium npm
//! package, so nothing is downloaded but npm packages). They need Node.js
//! and npm; missing ones fail the run, saying what to install, as a missing
//! PostgreSQL does: these tests are never skipped.

use crate::{bench, cargo, database};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the npm project is, from the workspace root.
const DIR: &str = "tests/browser";

/// The oldest Node.js the tests run on: @sparticuz/chromium 143's
/// `engines` (puppeteer-core 24.35 asks for 18).
const NODE_MIN: (u32, u32) = (20, 11);

/// What to do when Node.js or npm is missing or too old.
const INSTALL: &str = "install Node.js 20 (or later) and npm, and put them on PATH \
     (Debian 13: apt install nodejs npm; Debian 12's nodejs is 18, too old: take Node.js 20 \
     from NodeSource)";

/// Checks Node.js and npm, finds or starts PostgreSQL, builds `agentctx`
/// and runs the tests.
pub(crate) fn run() -> Result<(), String> {
    tools()?;
    let database = database::provide()?;
    cargo(&["build", "-p", "agent-cli", "--bin", "agentctx"], &[])?;
    run_with(&database.url)
}

/// Fails, saying what to install, unless Node.js (>= [`NODE_MIN`]) and
/// npm answer; `cargo xtask ci` asks before it builds anything.
pub(crate) fn tools() -> Result<(), String> {
    let node = node_version(version_of("node"))?;
    let npm = npm_version(version_of("npm"))?;
    eprintln!("xtask: browser tests with Node.js {node}, npm {npm}");
    Ok(())
}

/// Runs the tests with the debug `agentctx` already built (`cargo xtask
/// ci` built it in its test step: a `cargo build -p agent-cli` there could
/// unify features differently and compile again) and the PostgreSQL server
/// at `database_url`, after [`tools`].
pub(crate) fn run_with(database_url: &str) -> Result<(), String> {
    let dir = ready()?;
    let target = bench::target_dir()?;
    let bin = target.join("debug").join("agentctx");
    if !bin.is_file() {
        return Err(format!(
            "{} is not built: run `cargo build -p agent-cli --bin agentctx`",
            bin.display()
        ));
    }
    let screenshot = target.join("inspect.png");
    run_timed(
        Command::new("node")
            // A test that hangs fails instead of holding CI.
            .args([
                "--test",
                "--test-timeout=60000",
                "inspect.test.mjs",
                "scale.test.mjs",
            ])
            .current_dir(&dir)
            .env("AGENTCTX_BIN", &bin)
            .env(database::VARIABLE, database_url)
            .env("AGENTCTX_SCREENSHOT", &screenshot),
        "the browser tests",
    )?;
    eprintln!(
        "xtask: the page as the tests saw it: {}",
        screenshot.display()
    );
    Ok(())
}

/// The npm project's directory, its packages installed (`npm ci` when
/// its lockfile is newer than what was installed) and its Chromium
/// started once: one that cannot start fails here with one message saying
/// what to provide, not once per test.
pub(crate) fn ready() -> Result<PathBuf, String> {
    let dir = crate::workspace_root()?.join(DIR);
    if needs_install(&dir) {
        run_timed(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir),
            "npm ci",
        )?;
    }
    run_timed(
        Command::new("node").arg("chromium.mjs").current_dir(&dir),
        "the Chromium check",
    )
    .map_err(|e| {
        format!("{e}: Chromium did not start (above: why, and how to name another with AGENTCTX_CHROMIUM)")
    })?;
    Ok(dir)
}

/// Whether `npm ci` must run: no `node_modules`, or a lockfile newer
/// than the one npm wrote there when it last installed.
fn needs_install(dir: &Path) -> bool {
    let modified = |path: PathBuf| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    match (
        modified(dir.join("node_modules").join(".package-lock.json")),
        modified(dir.join("package-lock.json")),
    ) {
        (Some(installed), Some(wanted)) => wanted > installed,
        _ => true,
    }
}

/// Runs `command` to its end, its output going to the terminal, and says
/// how long it took.
pub(crate) fn run_timed(command: &mut Command, what: &str) -> Result<(), String> {
    eprintln!("xtask: {what}");
    let started = std::time::Instant::now();
    let status = command
        .status()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    eprintln!(
        "xtask: {what} took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// What `PROGRAM --version` printed, or why it could not run (not found:
/// not on PATH).
fn version_of(program: &str) -> std::io::Result<String> {
    let out = Command::new(program).arg("--version").output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "`{program} --version` failed ({})",
            out.status
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Node.js's version from what `node --version` answered (`v20.20.2`),
/// if it is at least [`NODE_MIN`].
fn node_version(answer: std::io::Result<String>) -> Result<String, String> {
    let version = answer.map_err(|e| missing("node", &e))?;
    let mut parts = version.trim_start_matches('v').split('.');
    let mut next = || parts.next().and_then(|p| p.parse::<u32>().ok());
    let (major, minor) = (next(), next());
    match (major, minor) {
        (Some(major), Some(minor)) if (major, minor) >= NODE_MIN => Ok(version),
        _ => Err(format!(
            "the browser tests need Node.js >= {}.{}, and `node --version` says {version:?}: {INSTALL}",
            NODE_MIN.0, NODE_MIN.1
        )),
    }
}

/// npm's version from what `npm --version` answered.
fn npm_version(answer: std::io::Result<String>) -> Result<String, String> {
    answer.map_err(|e| missing("npm", &e))
}

fn missing(program: &str, error: &std::io::Error) -> String {
    if error.kind() == std::io::ErrorKind::NotFound {
        format!("the browser tests need Node.js and npm, and `{program}` is not on PATH: {INSTALL}")
    } else {
        format!(
            "the browser tests need Node.js and npm, and `{program} --version` did not answer ({error}): {INSTALL}"
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn not_found() -> std::io::Result<String> {
        Err(std::io::Error::from(std::io::ErrorKind::NotFound))
    }

    #[test]
    fn a_missing_node_or_npm_fails_saying_what_to_install() {
        assert_eq!(
            node_version(not_found()).unwrap_err(),
            "the browser tests need Node.js and npm, and `node` is not on PATH: install Node.js 20 \
             (or later) and npm, and put them on PATH (Debian 13: apt install nodejs npm; Debian \
             12's nodejs is 18, too old: take Node.js 20 from NodeSource)"
        );
        let npm = npm_version(not_found()).unwrap_err();
        assert!(
            npm.starts_with(
                "the browser tests need Node.js and npm, and `npm` is not on PATH: install Node.js 20"
            ),
            "{npm}"
        );
    }

    #[test]
    fn a_node_older_than_20_11_fails_naming_its_version() {
        let error = node_version(Ok("v18.20.4".into())).unwrap_err();
        assert!(
            error.starts_with(
                "the browser tests need Node.js >= 20.11, and `node --version` says \"v18.20.4\": install"
            ),
            "{error}"
        );
        assert!(node_version(Ok("v20.10.0".into())).is_err());
        assert!(node_version(Ok("nonsense".into())).is_err());
    }

    #[test]
    fn node_20_11_or_later_is_taken() {
        for version in ["v20.11.0", "v20.20.2", "v22.1.0", "v24.0.0"] {
            assert_eq!(node_version(Ok(version.into())).unwrap(), version);
        }
    }
}
