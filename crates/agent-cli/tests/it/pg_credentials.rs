//! Credentials as libpq finds them, through the real binary on a throwaway
//! cluster that checks passwords (scram-sha-256): the URL's (percent
//! escapes decoded), `PGPASSWORD`, the password file, and `PGHOST`,
//! `PGPORT`, `PGUSER`, `PGDATABASE`; and a mistyped URL refused without
//! showing its password or creating a file.
//!
//! The cluster is started with the machine's `initdb` and `pg_ctl`; without
//! them the test fails and says so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

#[allow(dead_code)] // the cluster's URL is for trusted tests
use test_support::cluster as pg_cluster;

use crate::support::{Run, Stderr, command};
use std::path::Path;

/// A password with every character a URL must escape.
const PASSWORD: &str = "p@ss:w/rd%";
const STATE: &str = r#"{"type":"state","data":{}}"#;

/// `agentctx append URL` in `cwd` with no PostgreSQL variables but `env`,
/// and `HOME` at `home`.
fn append(url: &str, cwd: &Path, home: &Path, env: &[(&str, &str)]) -> Run {
    let mut command = command(&["append", url, STATE]);
    for name in [
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGPASSWORD",
        "PGPASSFILE",
    ] {
        command.env_remove(name);
    }
    let run: Run = command
        .env("HOME", home)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .output()
        .unwrap()
        .into();
    assert!(!run.stderr.contains(PASSWORD), "{}", run.stderr);
    assert!(!run.stderr.contains("p%40ss"), "{}", run.stderr);
    run
}

fn password_file(path: &Path, port: u16, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let line = format!(
        "# agentctx test\n127.0.0.1:{port}:*:agent:{}\n",
        PASSWORD.replace(':', "\\:")
    );
    std::fs::write(path, line).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn credentials_come_from_the_url_the_environment_and_the_password_file_like_libpq() {
    let cluster = pg_cluster::Cluster::start("agentctx-pg-credentials-", Some(PASSWORD))
        .unwrap_or_else(|e| {
            panic!("this test starts its own PostgreSQL cluster and needs initdb and pg_ctl: {e}")
        });
    let port = cluster.port;
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (cwd, home) = (cwd.path(), home.path());
    let bare = format!("postgres://agent@127.0.0.1:{port}/postgres?context=c");
    let ok = |run: Run| assert_eq!((run.code, run.stderr_without_count().as_str()), (0, ""));

    // The URL's password, percent escapes decoded.
    let url = format!("postgres://agent:p%40ss%3Aw%2Frd%25@127.0.0.1:{port}/postgres?context=c");
    ok(append(&url, cwd, home, &[]));
    // Without one, the server refuses.
    let run = append(&bare, cwd, home, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    // PGPASSWORD.
    ok(append(&bare, cwd, home, &[("PGPASSWORD", PASSWORD)]));
    // Everything from the environment.
    let port_text = port.to_string();
    let env = [
        ("PGHOST", "127.0.0.1"),
        ("PGPORT", port_text.as_str()),
        ("PGUSER", "agent"),
        ("PGDATABASE", "postgres"),
        ("PGPASSWORD", PASSWORD),
    ];
    ok(append("postgres://?context=c", cwd, home, &env));
    // A password file: PGPASSFILE, else ~/.pgpass.
    let file = home.join("elsewhere");
    password_file(&file, port, 0o600);
    let named = file.display().to_string();
    ok(append(&bare, cwd, home, &[("PGPASSFILE", &named)]));
    password_file(&home.join(".pgpass"), port, 0o600);
    ok(append(&bare, cwd, home, &[]));
    // One that others can read is ignored, with a warning.
    password_file(&home.join(".pgpass"), port, 0o644);
    let run = append(&bare, cwd, home, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let warning = format!(
        "warning: password file \"{}\" has group or world access; permissions should be u=rw \
         (0600) or less: it is ignored\n",
        home.join(".pgpass").display()
    );
    assert!(run.stderr.starts_with(&warning), "{}", run.stderr);

    // A mistyped URL is refused, its password unshown, and no file made.
    for url in [
        format!("POSTGRES://agent:{PASSWORD}@127.0.0.1:{port}/postgres?context=c"),
        format!("postgres:/agent:{PASSWORD}@127.0.0.1:{port}/postgres?context=c"),
        format!("postgres//agent:{PASSWORD}@127.0.0.1:{port}/postgres?context=c"),
        format!("postgres:agent:{PASSWORD}@127.0.0.1?context=c"),
    ] {
        let run = append(&url, cwd, home, &[]);
        assert_ne!(run.code, 0, "{url}");
        assert!(
            run.stderr
                .contains("looks like a mistyped PostgreSQL URL: write postgres://USER@HOST"),
            "{}",
            run.stderr
        );
    }
    assert_eq!(
        std::fs::read_dir(cwd).unwrap().count(),
        0,
        "no file was made"
    );
}
