//! A throwaway PostgreSQL cluster, started from the machine's `initdb` and
//! `pg_ctl`: for `cargo xtask ci` when no server answers, and for tests that
//! restart the server under running writers: xtask and the tests start
//! clusters the same way.
//!
//! PostgreSQL refuses to run as root; as root, the cluster's files belong to
//! the `postgres` user and its programs run as that user (`setpriv`). So the
//! cluster lives in a fresh directory under the system's temporary directory,
//! never under the checkout: a checkout may sit in a private (0700)
//! directory the `postgres` user cannot enter.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A running cluster in a directory of its own; stopped and removed when
/// dropped.
pub struct Cluster {
    root: PathBuf,
    /// Removes the directory once the cluster is stopped (fields drop after
    /// [`Drop::drop`] ran).
    _dir: tempfile::TempDir,
    bin: PathBuf,
    /// `(uid, gid)` to run PostgreSQL's programs as, when we are root.
    run_as: Option<(u32, u32)>,
    /// The TCP port it listens on, on 127.0.0.1.
    pub port: u16,
}

/// Where `initdb` and `pg_ctl` are: `pg_config --bindir`, else the newest
/// `/usr/lib/postgresql/*/bin`.
pub fn bin_dir() -> Option<PathBuf> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_tools(&dir) {
            return Some(dir);
        }
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|d| has_tools(d))
        .collect();
    dirs.sort();
    dirs.pop()
}

pub(crate) fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// `(uid, gid)` of the `postgres` user, read from /etc/passwd.
fn postgres_user() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        match fields.as_slice() {
            ["postgres", _, uid, gid, ..] => Some((uid.parse().ok()?, gid.parse().ok()?)),
            _ => None,
        }
    })
}

pub(crate) fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

impl Cluster {
    /// Creates a cluster in a fresh directory `NAME…` under the system's
    /// temporary directory, whose superuser is `root`, trusted, and starts
    /// it on a free port. With `password`, it also has a role `agent` that
    /// must log in with it (scram-sha-256).
    ///
    /// # Errors
    /// When PostgreSQL's programs are missing or one of them fails (what it
    /// printed is in the message).
    pub fn start(name: &str, password: Option<&str>) -> Result<Cluster, String> {
        let bin = bin_dir().ok_or("initdb and pg_ctl are not installed")?;
        let run_as = if is_root() {
            Some(postgres_user().ok_or("running as root, and there is no postgres user")?)
        } else {
            None
        };
        let dir = tempfile::Builder::new()
            .prefix(name)
            .tempdir()
            .map_err(|e| format!("cannot create a directory for the cluster: {e}"))?;
        let root = dir
            .path()
            .canonicalize()
            .map_err(|e| format!("{}: {e}", dir.path().display()))?;
        let mut cluster = Cluster {
            root,
            _dir: dir,
            bin,
            run_as,
            port: free_port()?,
        };
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&cluster.root, Some(uid), Some(gid))
                .map_err(|e| format!("chown {}: {e}", cluster.root.display()))?;
        }
        let data = cluster.root.join("data");
        let mut init = vec![
            "-D".to_owned(),
            data.display().to_string(),
            "-U".into(),
            "root".into(),
            "--no-sync".into(),
            "--auth-local=trust".into(),
        ];
        init.push("--auth-host=trust".into());
        cluster.run("initdb", &init)?;
        if password.is_some() {
            let hba = "local all all trust\nhost all root 127.0.0.1/32 trust\n\
                       host all all 127.0.0.1/32 scram-sha-256\n";
            std::fs::write(data.join("pg_hba.conf"), hba).map_err(|e| e.to_string())?;
        }
        // Retry on another port if one was taken between choosing and binding.
        let mut started = cluster.pg_ctl(&["start"]);
        for _ in 0..5 {
            if started.is_ok() {
                break;
            }
            cluster.port = free_port()?;
            started = cluster.pg_ctl(&["start"]);
        }
        started?;
        if let Some(password) = password {
            let sql = format!(
                "CREATE ROLE agent SUPERUSER LOGIN PASSWORD '{}'",
                password.replace('\'', "''")
            );
            cluster.run(
                "psql",
                &[
                    "-h".into(),
                    "127.0.0.1".into(),
                    "-p".into(),
                    cluster.port.to_string(),
                    "-U".into(),
                    "root".into(),
                    "-d".into(),
                    "postgres".into(),
                    "-c".into(),
                    sql,
                ],
            )?;
        }
        Ok(cluster)
    }

    /// The cluster's directory (removed when it is dropped).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A URL for database `postgres` as the trusted superuser `root`.
    pub fn url(&self) -> String {
        format!("postgres://root@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs `pg_ctl ACTION` (`start`, `restart -m immediate`, `stop`, …) and
    /// waits for it to finish.
    ///
    /// # Errors
    /// When `pg_ctl` fails (what it printed is in the message).
    pub fn pg_ctl(&self, action: &[&str]) -> Result<(), String> {
        let data = self.root.join("data").display().to_string();
        let log = self.root.join("log").display().to_string();
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=on",
            self.port,
            self.root.display()
        );
        let mut args: Vec<String> = vec!["-D".into(), data, "-l".into(), log, "-w".into()];
        args.extend(["-o".into(), options]);
        args.extend(action.iter().map(|a| (*a).to_owned()));
        self.run("pg_ctl", &args)
    }

    fn run(&self, program: &str, args: &[String]) -> Result<(), String> {
        let path = self.bin.join(program);
        let mut command = match self.run_as {
            Some((uid, gid)) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .arg("--clear-groups")
                    .arg(&path);
                c
            }
            None => Command::new(&path),
        };
        let out = command
            .args(args)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} {} failed: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // The directory goes with `_dir`, after this.
        let _ = self.pg_ctl(&["stop", "-m", "immediate"]);
    }
}
