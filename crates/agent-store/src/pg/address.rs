//! Reading a PostgreSQL CONTEXT address (spec §10): an ordinary connection
//! URL whose `context` query parameter names the context.

use crate::url::{percent_decode, scheme, split_query, without_password};
use crate::{Error, Result};
use std::str::FromStr;
use std::time::Duration;

/// The longest context name, in bytes (the table's CHECK agrees).
pub const MAX_NAME_BYTES: usize = 256;

/// How long connecting may take when the URL does not say
/// (`connect_timeout=SECONDS`): a server that does not answer is an error,
/// not a hang.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long sent data may stay unacknowledged before the connection counts
/// as dead, when the URL does not say (`tcp_user_timeout=SECONDS`).
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// TCP keepalive: first probe after this much silence, then every
/// [`KEEPALIVE_INTERVAL`], giving up after [`KEEPALIVE_RETRIES`] probes.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_RETRIES: u32 = 3;

/// The longest the server may send nothing while a call waits for its
/// answer, when the URL does not say (`agentctx_idle_timeout=SECONDS`): a
/// server or proxy that keeps the connection open and stops answering
/// defeats keepalives and server-side timeouts alike. It is longer than
/// the [`LOCK_TIMEOUT`] a statement may wait for a lock, so a long wait
/// for a lock ends with the server's error rather than this deadline.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(25);

/// The URL parameter that sets the client's deadline on the server's
/// silence; PostgreSQL does not know it, so it is taken out of the URL.
pub(crate) const IDLE_PARAMETER: &str = "agentctx_idle_timeout";

/// How long a statement may wait for a lock (another writer's append, a
/// migration) when the URL does not say: appends hold a context's row
/// lock for milliseconds.
pub(crate) const LOCK_TIMEOUT: Duration = Duration::from_secs(20);

/// The URL parameter that sets [`LOCK_TIMEOUT`]: a session setting on a
/// direct connection, a setting of each of agentctx's transactions through
/// a pooler, which refuses startup options (D109: behind a pooler).
pub(crate) const LOCK_PARAMETER: &str = "agentctx_lock_timeout";

/// The URL parameter that says whether the connection goes through a
/// transaction pooler (`yes`) or straight to the server (`no`); without
/// it, each connection finds out (D109: behind a pooler).
pub(crate) const POOLED_PARAMETER: &str = "agentctx_pooled";

/// A parsed address: how to connect, which context, and the URL to show.
#[derive(Debug, Clone)]
pub(crate) struct Address {
    pub(crate) config: tokio_postgres::Config,
    /// The longest the server may stay silent while a call waits for it
    /// (`agentctx_idle_timeout=SECONDS`; 0 waits forever).
    pub(crate) idle: Option<Duration>,
    /// Whether the connection goes through a transaction pooler, when the
    /// URL says (`agentctx_pooled=yes|no`); `None`: found out on connecting.
    pub(crate) pooled: Option<bool>,
    /// The longest a statement waits for a lock (`agentctx_lock_timeout`);
    /// `None` when the URL's own `options` set `lock_timeout`, which then
    /// stands on a direct connection.
    pub(crate) lock_timeout: Option<Duration>,
    pub(crate) context: String,
    /// The URL without its password, for messages.
    pub(crate) shown: String,
}

impl Address {
    /// Parses `url`; every error names the URL without its password.
    pub(crate) fn parse(url: &str) -> Result<Address> {
        Address::parse_for(url, true)
    }

    /// Parses the URL of a server for a pool: its `context` parameter, if
    /// any, is left out (each store of the pool names its own).
    pub(crate) fn parse_server(url: &str) -> Result<Address> {
        let mut address = Address::parse_for(url, false)?;
        address.shown = shown_for(&address.shown, None);
        address.context.clear();
        Ok(address)
    }

    /// This server's URL for the context `name`, as messages show it.
    pub(crate) fn shown_for_context(&self, name: &str) -> String {
        shown_for(&self.shown, Some(name))
    }

    /// This server's address for the context `name`.
    pub(crate) fn for_context(&self, name: &str) -> Result<Address> {
        let shown = self.shown_for_context(name);
        check_name(name).map_err(|reason| Error::Address {
            address: shown.clone(),
            reason,
        })?;
        Ok(Address {
            context: name.to_owned(),
            shown,
            ..self.clone()
        })
    }

    fn parse_for(url: &str, needs_context: bool) -> Result<Address> {
        let shown = without_password(url);
        let fail = |reason: String| Error::Address {
            address: shown.clone(),
            reason,
        };
        if crate::is_mistyped_postgres_url(url) {
            return Err(fail(crate::url::MISTYPED.into()));
        }
        if scheme(url).is_none() {
            return Err(fail(
                "a PostgreSQL address starts with postgres:// or postgresql://".into(),
            ));
        }
        let (base, query) = split_query(url);
        let mut context = None;
        let mut idle = Some(IDLE_TIMEOUT);
        let mut pooled = None;
        let mut lock_timeout = LOCK_TIMEOUT;
        let mut lock_given = false;
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if key == "context" {
                if context.is_some() {
                    return Err(fail("the context parameter is given twice".into()));
                }
                let name =
                    percent_decode(value).map_err(|e| fail(format!("the context name: {e}")))?;
                context = Some(name);
            } else if key == IDLE_PARAMETER {
                let seconds: f64 = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| {
                        fail(format!(
                            "{IDLE_PARAMETER}={value}: give a number of seconds (0 waits forever)"
                        ))
                    })?;
                idle = (seconds > 0.0).then(|| Duration::from_secs_f64(seconds));
            } else if key == LOCK_PARAMETER {
                lock_timeout = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s < 1e6)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| {
                        fail(format!(
                            "{LOCK_PARAMETER}={value}: give a number of seconds (0 waits forever)"
                        ))
                    })?;
                lock_given = true;
            } else if key == POOLED_PARAMETER {
                pooled = Some(match value {
                    "yes" => true,
                    "no" => false,
                    _ => {
                        return Err(fail(format!(
                            "{POOLED_PARAMETER}={value}: say yes (through a transaction pooler \
                             such as PgBouncer) or no (straight to the server)"
                        )));
                    }
                });
            } else {
                rest.push(pair);
            }
        }
        let context = match context {
            Some(context) => {
                check_name(&context).map_err(&fail)?;
                context
            }
            None if !needs_context => String::new(),
            None => {
                return Err(fail(
                    "no context parameter: name the context with ?context=NAME".into(),
                ));
            }
        };
        let connection = if rest.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        let mut config = tokio_postgres::Config::from_str(&connection).map_err(|e| {
            fail(format!(
                "not a valid connection URL: {}",
                super::session::describe(&e)
            ))
        })?;
        // What the URL leaves out comes from the environment, as in libpq;
        // a password file others can read is ignored, and said so.
        super::credentials::complete(&mut config, &|name| std::env::var(name).ok(), &mut |w| {
            eprintln!("{w}")
        })
        .map_err(&fail)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        // Notice a dead server or a cut network in about 25 s, not hours.
        let given = |key: &str| rest.iter().any(|pair| pair.starts_with(&format!("{key}=")));
        if !given("keepalives_idle") {
            config.keepalives_idle(KEEPALIVE_IDLE);
        }
        if !given("keepalives_interval") {
            config.keepalives_interval(KEEPALIVE_INTERVAL);
        }
        if !given("keepalives_retries") {
            config.keepalives_retries(KEEPALIVE_RETRIES);
        }
        // No startup options of its own: poolers refuse them (D109: behind
        // a pooler); the lock timeout is set once connected, unless the
        // URL's own options set it (and the URL does not say otherwise).
        let in_options = config
            .get_options()
            .is_some_and(|o| o.contains("lock_timeout"));
        let lock_timeout = (lock_given || !in_options).then_some(lock_timeout);
        if config.get_application_name().is_none() {
            config.application_name("agentctx");
        }
        Ok(Address {
            config,
            idle,
            pooled,
            lock_timeout,
            context,
            shown,
        })
    }
}

/// `url` without its `context` parameter (the rest as written).
pub(crate) fn without_context(url: &str) -> String {
    shown_for(url, None)
}

/// `shown` (a URL without its password) with its `context` parameter
/// replaced by `name`, percent-encoded, or left out.
fn shown_for(shown: &str, name: Option<&str>) -> String {
    let (base, query) = split_query(shown);
    let mut kept: Vec<String> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some("context"))
        .map(str::to_owned)
        .collect();
    if let Some(name) = name {
        let mut encoded = String::from("context=");
        for byte in name.bytes() {
            match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                    encoded.push(char::from(byte));
                }
                _ => encoded.push_str(&format!("%{byte:02X}")),
            }
        }
        kept.push(encoded);
    }
    match kept.is_empty() {
        true => base.to_owned(),
        false => format!("{base}?{}", kept.join("&")),
    }
}

/// A context name is 1 to [`MAX_NAME_BYTES`] bytes of UTF-8 without NUL.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the context name is empty".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "the context name is {} bytes long; at most {MAX_NAME_BYTES} are allowed",
            name.len()
        ));
    }
    if name.contains('\0') {
        return Err("the context name contains a NUL character".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec10_address_names_the_context_and_keeps_the_connection_string() {
        let address = Address::parse(
            "postgresql://me:secret@db.example:6432/app?sslmode=disable&context=run%2F42",
        )
        .unwrap();
        assert_eq!(address.context, "run/42");
        assert_eq!(
            address.shown,
            "postgresql://me@db.example:6432/app?sslmode=disable&context=run%2F42"
        );
        assert_eq!(address.config.get_dbname(), Some("app"));
        assert_eq!(address.config.get_ports(), &[6432]);
        assert_eq!(address.config.get_connect_timeout(), Some(&CONNECT_TIMEOUT));
    }

    #[test]
    fn spec10_bad_addresses_are_refused_without_showing_the_password() {
        let long = format!("postgres://h/db?context={}", "x".repeat(MAX_NAME_BYTES + 1));
        let cases = [
            (
                "postgres://u:pw@h/db",
                "postgres://u@h/db: no context parameter: name the context with ?context=NAME",
            ),
            (
                "postgres://u:pw@h/db?context=",
                "postgres://u@h/db?context=: the context name is empty",
            ),
            (
                "postgres://h/db?context=a&context=b",
                "postgres://h/db?context=a&context=b: the context parameter is given twice",
            ),
            (
                "postgres://h/db?context=%zz",
                "postgres://h/db?context=%zz: the context name: bad percent escape at byte 0",
            ),
        ];
        for (url, message) in cases {
            let error = Address::parse(url).unwrap_err().to_string();
            assert_eq!(error, message);
            assert!(!error.contains("pw"));
        }
        let error = Address::parse(&long).unwrap_err().to_string();
        assert!(error.ends_with("the context name is 257 bytes long; at most 256 are allowed"));
        let error = Address::parse("postgres://u:pw@h:notaport/db?password=pw2&context=c")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("postgres://u@h:notaport/db?context=c: not a valid connection URL"),
            "{error}"
        );
        assert!(!error.contains("pw"), "{error}");
    }

    #[test]
    fn the_idle_deadline_has_a_default_is_set_in_the_url_and_stays_out_of_the_connection() {
        let address = Address::parse("postgres://h/db?context=c").unwrap();
        assert_eq!(address.idle, Some(IDLE_TIMEOUT));
        let address =
            Address::parse("postgres://h/db?agentctx_idle_timeout=2.5&connect_timeout=3&context=c")
                .unwrap();
        assert_eq!(address.idle, Some(Duration::from_millis(2500)));
        assert_eq!(
            address.config.get_connect_timeout(),
            Some(&Duration::from_secs(3))
        );
        let address = Address::parse("postgres://h/db?agentctx_idle_timeout=0&context=c").unwrap();
        assert_eq!(address.idle, None);
        let error = Address::parse("postgres://u:pw@h/db?agentctx_idle_timeout=soon&context=c")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "postgres://u@h/db?agentctx_idle_timeout=soon&context=c: \
             agentctx_idle_timeout=soon: give a number of seconds (0 waits forever)"
        );
    }

    #[test]
    fn d109_no_startup_options_of_its_own_and_the_lock_timeout_set_in_the_url() {
        let address = Address::parse("postgres://h/db?context=c").unwrap();
        // A pooler refuses startup options: none are added.
        assert_eq!(address.config.get_options(), None);
        assert_eq!(address.lock_timeout, Some(LOCK_TIMEOUT));
        assert_eq!(address.pooled, None);
        let address = Address::parse(
            "postgres://h/db?agentctx_lock_timeout=1.5&agentctx_pooled=yes&context=c",
        )
        .unwrap();
        assert_eq!(address.lock_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(address.pooled, Some(true));
        // The URL's own options still set it, unless the parameter says.
        let own = "postgres://h/db?options=-c%20lock_timeout%3D5s&context=c";
        let address = Address::parse(own).unwrap();
        assert_eq!(address.lock_timeout, None);
        assert_eq!(address.config.get_options(), Some("-c lock_timeout=5s"));
        let both = format!("{own}&agentctx_lock_timeout=0");
        assert_eq!(
            Address::parse(&both).unwrap().lock_timeout,
            Some(Duration::ZERO)
        );
        let error = Address::parse("postgres://u:pw@h/db?agentctx_lock_timeout=-1&context=c")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "postgres://u@h/db?agentctx_lock_timeout=-1&context=c: \
             agentctx_lock_timeout=-1: give a number of seconds (0 waits forever)"
        );
    }

    #[test]
    fn a_pools_server_address_leaves_the_context_out_and_each_store_names_its_own() {
        let server = Address::parse_server(
            "postgres://me:secret@db:5432/app?sslmode=disable&context=old&agentctx_pooled=no",
        )
        .unwrap();
        assert_eq!(
            server.shown,
            "postgres://me@db:5432/app?sslmode=disable&agentctx_pooled=no"
        );
        assert_eq!(server.context, "");
        let one = server.for_context("run/42 a&b").unwrap();
        assert_eq!(one.context, "run/42 a&b");
        assert_eq!(
            one.shown,
            "postgres://me@db:5432/app?sslmode=disable&agentctx_pooled=no&context=run/42%20a%26b"
        );
        assert_eq!(one.pooled, Some(false));
        let bare = Address::parse_server("postgres://db/app").unwrap();
        assert_eq!(
            bare.for_context("c").unwrap().shown,
            "postgres://db/app?context=c"
        );
        let empty = bare.for_context("").unwrap_err().to_string();
        assert!(empty.contains("the context name is empty"), "{empty}");
        assert!(empty.contains("postgres://db/app?context="), "{empty}");
    }

    #[test]
    fn a_mistyped_url_is_refused_as_one_without_its_password() {
        for url in [
            "POSTGRES://u:pw@h/db?context=c",
            "postgres:/u:pw@h/db?context=c",
            "postgresql//u:pw@h/db?context=c",
            "postgres:u:pw@h?context=c",
        ] {
            let error = Address::parse(url).unwrap_err().to_string();
            assert!(
                error.contains("looks like a mistyped PostgreSQL URL"),
                "{error}"
            );
            assert!(!error.contains("pw"), "{error}");
            let error = crate::open(url).err().unwrap().to_string();
            assert!(
                error.contains("looks like a mistyped PostgreSQL URL"),
                "{error}"
            );
            assert!(!error.contains("pw"), "{error}");
        }
        assert!(!std::path::Path::new("postgres:u:pw@h?context=c").exists());
    }
}
