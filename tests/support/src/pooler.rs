//! PgBouncer in transaction pooling mode in front of a PostgreSQL server:
//! for `cargo xtask ci`, which runs the PostgreSQL suites through it as
//! well as directly, and for tests of what a pooled connection changes.
//!
//! The binary is `AGENTCTX_PGBOUNCER` when set (xtask sets it to the one it
//! fetched from Debian's packages into the target directory), else
//! `pgbouncer` on the `PATH`, else `/usr/sbin/pgbouncer`. Its libraries may
//! sit beside it (`../lib/x86_64-linux-gnu`, as a package unpacked there
//! lays them out).
//!
//! PgBouncer refuses to run as root: as root it is told to become `nobody`
//! once started, so its configuration lives in a directory anyone may read
//! under the system's temporary directory, never under the checkout.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The variable naming the PgBouncer binary to run.
pub const VARIABLE: &str = "AGENTCTX_PGBOUNCER";

/// A PgBouncer process on a port of its own; stopped when dropped.
pub struct PgBouncer {
    child: Child,
    dir: tempfile::TempDir,
    /// The TCP port it listens on, on 127.0.0.1.
    pub port: u16,
    user: String,
    database: String,
}

/// The PgBouncer binary to run, if there is one.
///
/// ```
/// if let Some(bin) = test_support::pooler::binary() {
///     assert!(bin.is_file());
/// }
/// ```
pub fn binary() -> Option<PathBuf> {
    if let Some(given) = std::env::var_os(VARIABLE) {
        return Some(PathBuf::from(given)).filter(|p| p.is_file());
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("pgbouncer"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| Some(PathBuf::from("/usr/sbin/pgbouncer")).filter(|p| p.is_file()))
}

/// `(user, host, port, database)` of a `postgres://user[:pw]@host[:port]/db` URL.
fn parts(url: &str) -> Result<(String, String, u16, String), String> {
    let rest = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .ok_or_else(|| format!("not a postgres:// URL: {url}"))?;
    let rest = rest.split('?').next().unwrap_or_default();
    let (credentials, rest) = rest.split_once('@').unwrap_or(("root", rest));
    let user = credentials.split(':').next().unwrap_or("root").to_owned();
    let (server, database) = rest.split_once('/').unwrap_or((rest, "postgres"));
    let (host, port) = match server.rsplit_once(':') {
        Some((host, port)) => (
            host.to_owned(),
            port.parse().map_err(|_| format!("bad port in {url}"))?,
        ),
        None => (server.to_owned(), 5432),
    };
    Ok((user, host, port, database.to_owned()))
}

impl PgBouncer {
    /// Starts PgBouncer (`pool_mode = transaction`, trust authentication,
    /// at most `pool_size` server sessions for its clients to share) on a
    /// free port in front of the server `upstream` names, and waits until
    /// it accepts connections.
    ///
    /// # Errors
    /// When there is no PgBouncer binary, or it does not start (what it
    /// printed is in the message).
    pub fn start(upstream: &str, pool_size: u32) -> Result<PgBouncer, String> {
        let bin = binary().ok_or_else(|| {
            format!(
                "PgBouncer is not installed: `cargo xtask ci` fetches it (Debian: apt install \
                 pgbouncer), or set {VARIABLE} to its binary"
            )
        })?;
        PgBouncer::start_with(&bin, upstream, pool_size)
    }

    /// [`PgBouncer::start`] with the binary `bin`.
    ///
    /// # Errors
    /// As [`PgBouncer::start`].
    pub fn start_with(bin: &Path, upstream: &str, pool_size: u32) -> Result<PgBouncer, String> {
        let (user, host, upstream_port, database) = parts(upstream)?;
        let dir = tempfile::Builder::new()
            .prefix("agentctx-pgbouncer-")
            .tempdir()
            .map_err(|e| format!("cannot create a directory for PgBouncer: {e}"))?;
        let readable = |path: &Path, mode: u32| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("chmod {}: {e}", path.display()))
        };
        readable(dir.path(), 0o755)?;
        let port = crate::cluster::free_port()?;
        let users = dir.path().join("users.txt");
        std::fs::write(&users, format!("\"{user}\" \"\"\n")).map_err(|e| e.to_string())?;
        readable(&users, 0o644)?;
        // As root it must become another user once started.
        let become_user = if crate::cluster::is_root() {
            "user = nobody\n"
        } else {
            ""
        };
        let config = format!(
            "[databases]\n* = host={host} port={upstream_port}\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {}\npool_mode = transaction\n\
             max_client_conn = 5000\ndefault_pool_size = {pool_size}\n\
             server_lifetime = 3600\nserver_login_retry = 1\nlog_connections = 0\nlog_disconnections = 0\n{become_user}",
            users.display()
        );
        let ini = dir.path().join("pgbouncer.ini");
        std::fs::write(&ini, config).map_err(|e| e.to_string())?;
        readable(&ini, 0o644)?;
        let mut command = Command::new(bin);
        if let Some(libs) = bin
            .parent()
            .and_then(Path::parent)
            .map(|usr| usr.join("lib/x86_64-linux-gnu"))
            .filter(|libs| libs.is_dir())
        {
            command.env("LD_LIBRARY_PATH", libs);
        }
        // Its log goes to a file: a pipe nobody reads would stall it.
        let log = std::fs::File::create(dir.path().join("pgbouncer.log"))
            .map_err(|e| format!("cannot create PgBouncer's log: {e}"))?;
        let child = command
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let mut pooler = PgBouncer {
            child,
            dir,
            port,
            user,
            database,
        };
        pooler.wait_until_listening()?;
        Ok(pooler)
    }

    fn wait_until_listening(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("PgBouncer exited ({status}): {}", self.log()));
            }
            if Instant::now() > deadline {
                return Err(format!("PgBouncer does not listen on port {}", self.port));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A URL for the upstream's database through the pooler.
    pub fn url(&self) -> String {
        format!(
            "postgres://{}@127.0.0.1:{}/{}",
            self.user, self.port, self.database
        )
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pgbouncer.log")).unwrap_or_default()
    }

    /// The directory holding its configuration (removed when dropped).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn a_url_gives_user_host_port_and_database() {
        assert_eq!(
            parts("postgres://root:pw@127.0.0.1:5433/test?x=1").unwrap(),
            ("root".into(), "127.0.0.1".into(), 5433, "test".into())
        );
        assert_eq!(
            parts("postgresql://h/db").unwrap(),
            ("root".into(), "h".into(), 5432, "db".into())
        );
    }
}
