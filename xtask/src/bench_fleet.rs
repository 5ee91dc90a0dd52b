//! `cargo xtask bench fleet`: PostgreSQL at fleet scale
//! (`tests/bin/pg_fleet.rs`): a million contexts in one database against
//! ten (`many`), and 1 to 1,000 worker threads on one plan of 100,000
//! calls through PgBouncer, then sharing one pool of the process's
//! connections (`claims`), in a database of the run's own that is
//! dropped at its end.

use serde_json::Value;
use std::process::Command;

pub(crate) fn run(server: &str) -> Result<Vec<Value>, String> {
    eprintln!("xtask: pg-fleet many (a million contexts in one database against ten)");
    let many = crate::probe("pg-fleet", &["many".as_ref()])?;
    eprintln!(
        "xtask: bytes per context at {} contexts: {}",
        many["bytes_per_context"]["contexts"], many["bytes_per_context"]
    );
    let mut rows = many["rows"].as_array().cloned().unwrap_or_default();
    rows.extend(claims(server)?);
    Ok(rows)
}

/// `pg-fleet claims` through PgBouncer in front of `server`.
fn claims(server: &str) -> Result<Vec<Value>, String> {
    let bin = crate::pooler::provide()?;
    let mut admin = postgres::Client::connect(server, postgres::NoTls)
        .map_err(|e| format!("cannot connect to PostgreSQL: {e}"))?;
    let database = format!("agentctx_fleet_{}", std::process::id());
    admin
        .batch_execute(&format!("CREATE DATABASE {database}"))
        .map_err(|e| format!("cannot create database {database}: {e}"))?;
    let measured = (|| {
        let pooler = crate::pooler::start(&bin, server)?;
        let base = pooler.url();
        let in_database = |url: &str| match url.rsplit_once('/') {
            Some((server, _)) => Ok(format!("{server}/{database}")),
            None => Err(format!("not a URL: {url}")),
        };
        let url = in_database(&base)?;
        let direct = in_database(server.split('?').next().unwrap_or(server))?;
        eprintln!(
            "xtask: pg-fleet claims (1 to 1,000 workers on one plan, through PgBouncer, \
             then sharing one pool of the process's connections)"
        );
        let path = crate::release_dir()?.join("pg-fleet");
        let out = Command::new(&path)
            .arg("claims")
            .env("FLEET_POOLED_URL", &url)
            .env("FLEET_DIRECT_URL", &direct)
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
        if !out.status.success() {
            return Err(format!(
                "pg-fleet claims failed ({}): its errors are above",
                out.status
            ));
        }
        let value: Value =
            serde_json::from_slice(&out.stdout).map_err(|e| format!("bad pg-fleet output: {e}"))?;
        Ok(value["rows"].as_array().cloned().unwrap_or_default())
    })();
    // The pooler has stopped: nothing holds the database any more.
    let dropped = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"));
    let rows = measured?;
    dropped.map_err(|e| format!("cannot drop database {database}: {e}"))?;
    Ok(rows)
}
