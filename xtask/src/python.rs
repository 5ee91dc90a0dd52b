//! The Python package in CI: built from `python/` into a throwaway venv
//! under the target directory, then its pytest suite (LangGraph's
//! conformance suite among it), `mypy --strict` over the tests (the `.pyi`
//! stubs checked against real use) and over the package, and the package's
//! doctests. The machine's `python3` with `venv` and `pip` is required: a
//! missing one fails the run, saying so; it is never skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The build backend and test tools, pinned to the series the package is
/// built and checked with; LangGraph and its own conformance suite, at the
/// versions the checkpointer is held to.
const TOOLS: [&str; 6] = [
    "maturin>=1.16,<1.17",
    "pytest>=8",
    "mypy>=1.10",
    "langgraph==1.2.22",
    "langgraph-checkpoint-conformance==0.0.2",
    // The official MCP SDK, the client `agentctx mcp` is tested with.
    "mcp>=2.3,<3",
];

/// A fresh venv at `venv` with `tools` and the package built into it with
/// cargo's `profile`; returns the venv's `bin` directory.
pub(crate) fn install(venv: &Path, tools: &[&str], profile: &str) -> Result<PathBuf, String> {
    let root = crate::workspace_root()?;
    let target = crate::bench::target_dir()?;
    let _ = std::fs::remove_dir_all(venv);
    run(
        Command::new("python3").args(["-m", "venv"]).arg(venv),
        "python3 -m venv (install Python 3 with its venv module)",
    )?;
    let bin = venv.join("bin");
    // The build backend runs `maturin` by name: the venv's, first.
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .map_err(|e| format!("PATH: {e}"))?;
    run(
        Command::new(bin.join("pip"))
            .args(["install", "-q", "--disable-pip-version-check"])
            .args(tools),
        &format!("pip install of {}", tools.join(", ")),
    )?;
    // Built in the workspace's target directory: it reuses what cargo
    // compiled for the same profile.
    run(
        Command::new(bin.join("pip"))
            .args([
                "install",
                "-q",
                "--disable-pip-version-check",
                "--no-build-isolation",
            ])
            .arg(root.join("python"))
            .arg(format!("--config-settings=build-args=--profile={profile}"))
            .env("CARGO_TARGET_DIR", &target)
            .env("PATH", &path),
        "pip install ./python",
    )?;
    Ok(bin)
}

/// Builds and tests the package; `database` is the test server's URL.
pub(crate) fn check(database: &str) -> Result<(), String> {
    let started = std::time::Instant::now();
    let root = crate::workspace_root()?;
    let target = crate::bench::target_dir()?;
    let bin = install(&target.join("python-venv"), &TOOLS, "dev")?;
    let tests = root.join("python").join("tests");
    // From the target directory, so the source tree's `agentctx` (without
    // its native module) does not shadow the installed one.
    run(
        Command::new(bin.join("pytest"))
            .args(["-q", "-p", "no:cacheprovider"])
            .arg(&tests)
            .current_dir(&target)
            .env(crate::database::VARIABLE, database),
        "the Python tests",
    )?;
    // `agentctx mcp` driven by the official MCP SDK (tests/mcp): the
    // binary the test build made, else one built now.
    let agentctx = match crate::test_pool::AGENTCTX_BIN.get() {
        Some(path) => path.clone(),
        None => {
            crate::cargo(&["build", "-q", "-p", "agent-cli"], &[])?;
            target.join("debug").join("agentctx")
        }
    };
    let mcp_tests = root.join("tests").join("mcp");
    run(
        Command::new(bin.join("pytest"))
            .args([
                "-q",
                "-p",
                "no:cacheprovider",
                "-W",
                "ignore::DeprecationWarning",
            ])
            .arg(&mcp_tests)
            .current_dir(&target)
            .env("AGENTCTX_BIN", &agentctx)
            .env(crate::database::VARIABLE, database),
        "the MCP tests",
    )?;
    run(
        Command::new(bin.join("mypy"))
            .args(["--strict", "--no-incremental"])
            .arg(&tests)
            .arg(&mcp_tests)
            .current_dir(&target),
        "mypy --strict over the Python tests",
    )?;
    // The package's own modules, the native one read from its `.pyi`.
    run(
        Command::new(bin.join("mypy"))
            .args([
                "--strict",
                "--no-incremental",
                "--cache-dir",
                "/dev/null",
                "agentctx",
            ])
            .current_dir(root.join("python")),
        "mypy --strict over the package",
    )?;
    run(
        Command::new(bin.join("python"))
            .args([
                "-c",
                "import doctest, importlib, pkgutil, sys, agentctx\n\
                 names = [m.name for m in pkgutil.iter_modules(agentctx.__path__, 'agentctx.')]\n\
                 modules = [agentctx] + [importlib.import_module(n) for n in names]\n\
                 sys.exit(sum(doctest.testmod(m).failed for m in modules))",
            ])
            .current_dir(&target),
        "the Python package's doctests",
    )?;
    eprintln!(
        "xtask: the Python package, its tests, types and doctests in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs `command`, failing with `what` and its status.
pub(crate) fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("{what}: cannot run {}: {e}", program(command)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

fn program(command: &Command) -> String {
    Path::new(command.get_program()).display().to_string()
}
