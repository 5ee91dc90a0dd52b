//! PgBouncer for CI's pass through a pooler: the machine's own when it has
//! one, else Debian's package (and the libraries it needs that the machine
//! lacks) fetched by `apt-get download` and unpacked into the target
//! directory: nothing is installed on the machine.

use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) use test_support::pooler::{PgBouncer, VARIABLE};

/// The packages unpacked beside each other: PgBouncer and the libraries
/// it links that a machine with PostgreSQL may not have.
const PACKAGES: [&str; 3] = ["pgbouncer", "libc-ares2", "libevent-2.1-7"];

/// The PgBouncer binary: found, or fetched once into `target/pgbouncer`.
pub(crate) fn provide() -> Result<PathBuf, String> {
    if let Some(bin) = test_support::pooler::binary() {
        return Ok(bin);
    }
    let root = crate::bench::target_dir()?.join("pgbouncer");
    let bin = root.join("usr/sbin/pgbouncer");
    if bin.is_file() {
        return Ok(bin);
    }
    eprintln!(
        "xtask: fetching PgBouncer from Debian's packages into {}",
        root.display()
    );
    let debs = root.join("debs");
    std::fs::create_dir_all(&debs).map_err(|e| format!("{}: {e}", debs.display()))?;
    run(
        Command::new("apt-get")
            .arg("download")
            .args(PACKAGES)
            .current_dir(&debs),
        "apt-get download",
    )?;
    for deb in std::fs::read_dir(&debs).map_err(|e| format!("{}: {e}", debs.display()))? {
        let deb = deb.map_err(|e| e.to_string())?.path();
        if deb.extension().is_some_and(|e| e == "deb") {
            run(
                Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root),
                "dpkg-deb -x",
            )?;
        }
    }
    if !bin.is_file() {
        return Err(format!(
            "{} is missing after unpacking PgBouncer",
            bin.display()
        ));
    }
    Ok(bin)
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command.output().map_err(|e| {
        format!("cannot run {what} (PgBouncer is needed: apt install pgbouncer): {e}")
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}): {} (PgBouncer is needed: apt install pgbouncer, or set {VARIABLE})",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Starts PgBouncer in front of `upstream`, with the binary [`provide`]d.
pub(crate) fn start(bin: &Path, upstream: &str) -> Result<PgBouncer, String> {
    // Fewer server sessions than the tests' clients: sessions are shared.
    let pooler = PgBouncer::start_with(bin, upstream, 20)?;
    eprintln!("xtask: PgBouncer (transaction pooling): {}", pooler.url());
    Ok(pooler)
}
