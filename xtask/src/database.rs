//! The PostgreSQL server the tests use: `AGENTCTX_TEST_DATABASE_URL`
//! when set, else `postgres://root@127.0.0.1:5432/test`; when nothing
//! answers there and `initdb`/`pg_ctl` are installed, a throwaway cluster
//! in a fresh directory under the system's temporary directory for the run. Otherwise CI fails, saying what to provide:
//! the PostgreSQL tests are never skipped.

pub(crate) use test_support::cluster::Cluster;
pub(crate) use test_support::database::{DEFAULT, VARIABLE};

/// A server for the tests: its URL, and the cluster to keep running (and
/// stop when dropped) if one was started.
pub(crate) struct Database {
    pub(crate) url: String,
    pub(crate) _cluster: Option<Cluster>,
}

/// Finds or starts the test server.
pub(crate) fn provide() -> Result<Database, String> {
    provide_from(std::env::var(VARIABLE).ok(), DEFAULT, "agentctx-pg-ci-")
}

/// [`provide`] with the variable's value, the default URL and the name a
/// throwaway cluster's directory starts with given.
fn provide_from(given: Option<String>, default: &str, name: &str) -> Result<Database, String> {
    let url = given.clone().unwrap_or_else(|| default.to_owned());
    let why = match answers(&url) {
        Ok(()) => {
            eprintln!("xtask: PostgreSQL for the tests: {}", shown(&url));
            return Ok(Database {
                url,
                _cluster: None,
            });
        }
        Err(why) => why,
    };
    if given.is_some() {
        return Err(format!("{VARIABLE}={} does not answer: {why}", shown(&url)));
    }
    if test_support::cluster::bin_dir().is_none() {
        return Err(format!(
            "the PostgreSQL tests need a server, and none answers at {default} ({why}); \
             initdb and pg_ctl are not installed to start one. Set {VARIABLE} to the URL of a \
             server where the tests may create tables (postgres://USER[:PASSWORD]@HOST:PORT/DB), \
             or install PostgreSQL (Debian: apt install postgresql)"
        ));
    }
    eprintln!("xtask: no PostgreSQL at {default} ({why}); starting a throwaway cluster");
    let cluster = Cluster::start(name, None)
        .map_err(|e| format!("cannot start a throwaway PostgreSQL cluster: {e}"))?;
    let url = cluster.url();
    answers(&url).map_err(|e| format!("the throwaway cluster does not answer: {e}"))?;
    eprintln!("xtask: PostgreSQL for the tests: {url}");
    Ok(Database {
        url,
        _cluster: Some(cluster),
    })
}

/// Connects and runs `SELECT 1`.
fn answers(url: &str) -> Result<(), String> {
    let mut config: postgres::Config = url.parse().map_err(|e| format!("{e}"))?;
    config.connect_timeout(std::time::Duration::from_secs(5));
    let mut client = config.connect(postgres::NoTls).map_err(|e| {
        let mut text = e.to_string();
        if let Some(cause) = std::error::Error::source(&e) {
            text.push_str(&format!(": {cause}"));
        }
        text
    })?;
    client
        .simple_query("SELECT 1")
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// `url` without its credentials' password or its query (which may hold
/// one): the client reads everything before the first `@` as
/// `user[:password]`.
fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let rest = match rest.split_once('@') {
        Some((credentials, host)) => {
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{user}@{host}")
        }
        None => rest.to_owned(),
    };
    let base = rest.split('?').next().unwrap_or_default();
    format!("{scheme}://{base}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn without_a_server_ci_starts_a_throwaway_cluster_that_answers_and_stops_it() {
        // Nothing listens on port 1: as on a machine without PostgreSQL
        // running, but with initdb and pg_ctl installed.
        let database = provide_from(
            None,
            "postgres://root@127.0.0.1:1/test",
            "agentctx-xtask-pg-",
        )
        .unwrap();
        let root = database._cluster.as_ref().unwrap().root().to_owned();
        assert!(root.starts_with(std::env::temp_dir().canonicalize().unwrap()));
        assert!(
            database.url.starts_with("postgres://root@127.0.0.1:"),
            "{}",
            database.url
        );
        answers(&database.url).unwrap();
        let url = database.url.clone();
        drop(database);
        assert!(answers(&url).is_err(), "the cluster was stopped");
        assert!(!root.exists(), "its files were removed");
    }

    #[test]
    fn a_given_url_that_does_not_answer_fails_without_falling_back() {
        let given = Some("postgres://me:secret@127.0.0.1:1/test".to_owned());
        let error = provide_from(given, DEFAULT, "agentctx-xtask-pg-unused-")
            .err()
            .unwrap();
        assert!(
            error.starts_with(
                "AGENTCTX_TEST_DATABASE_URL=postgres://me@127.0.0.1:1/test does not answer: "
            ),
            "{error}"
        );
        assert!(!error.contains("secret"));
    }
}
