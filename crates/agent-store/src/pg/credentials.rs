//! What a URL leaves out, found as libpq finds it: `PGHOST`, `PGPORT`,
//! `PGUSER`, `PGDATABASE`, and the password from `PGPASSWORD` or the
//! password file (`PGPASSFILE`, else `~/.pgpass`), so one setup serves
//! `psql` and agentctx alike. The URL's own values win; the password file
//! is read only when neither the URL nor `PGPASSWORD` gives a password.

use std::path::{Path, PathBuf};
use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// The port when neither the URL nor `PGPORT` names one.
const DEFAULT_PORT: u16 = 5432;

/// Completes `config` from the environment (`var` reads a variable) and the
/// password file; `warn` hears about a password file that is ignored.
pub(crate) fn complete(
    config: &mut Config,
    var: &dyn Fn(&str) -> Option<String>,
    warn: &mut dyn FnMut(String),
) -> Result<(), String> {
    let set = |name: &str| var(name).filter(|value| !value.is_empty());
    if config.get_hosts().is_empty() {
        let hosts = set("PGHOST").unwrap_or_else(|| "localhost".into());
        for host in hosts.split(',') {
            if host.starts_with('/') {
                config.host_path(host);
            } else {
                config.host(host);
            }
        }
    }
    if config.get_ports().is_empty()
        && let Some(ports) = set("PGPORT")
    {
        for port in ports.split(',') {
            let port = port
                .trim()
                .parse()
                .map_err(|_| format!("PGPORT={ports} is not a port number"))?;
            config.port(port);
        }
    }
    if config.get_user().is_none()
        && let Some(user) = set("PGUSER")
            .or_else(|| set("USER"))
            .or_else(|| set("LOGNAME"))
    {
        config.user(user);
    }
    if config.get_dbname().is_none()
        && let Some(dbname) = set("PGDATABASE").or_else(|| config.get_user().map(str::to_owned))
    {
        config.dbname(dbname);
    }
    if config.get_password().is_some() {
        return Ok(());
    }
    if let Some(password) = var("PGPASSWORD") {
        config.password(password);
        return Ok(());
    }
    let file = match set("PGPASSFILE") {
        Some(path) => PathBuf::from(path),
        None => match set("HOME") {
            Some(home) => Path::new(&home).join(".pgpass"),
            None => return Ok(()),
        },
    };
    if let Some(password) = from_file(config, &file, warn) {
        config.password(password);
    }
    Ok(())
}

/// The password `file` holds for `config`'s first host, port, database and
/// user; none when it is missing, not a file, or readable by others.
fn from_file(config: &Config, file: &Path, warn: &mut dyn FnMut(String)) -> Option<String> {
    let metadata = std::fs::metadata(file).ok()?;
    if !metadata.is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if metadata.permissions().mode() & 0o077 != 0 {
            warn(format!(
                "warning: password file \"{}\" has group or world access; permissions should \
                 be u=rw (0600) or less: it is ignored",
                file.display()
            ));
            return None;
        }
    }
    let text = std::fs::read_to_string(file).ok()?;
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(DEFAULT_PORT)
        .to_string();
    let hosts: Vec<String> = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => vec![name.clone()],
        // A Unix socket matches `localhost`, as in libpq, or its directory.
        Some(Host::Unix(dir)) => vec!["localhost".into(), dir.display().to_string()],
        None => vec!["localhost".into()],
    };
    let dbname = config.get_dbname().unwrap_or_default();
    let user = config.get_user().unwrap_or_default();
    hosts
        .iter()
        .find_map(|host| lookup(&text, [host, &port, dbname, user]))
}

/// The password of the first line of a password file (lines of
/// `host:port:database:user:password`, `*` matching anything, `\:` and
/// `\\` escaping) that matches `wanted`.
pub(crate) fn lookup(text: &str, wanted: [&str; 4]) -> Option<String> {
    text.lines()
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .filter(|line| !line.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = split(line);
            let [host, port, db, user, password] = fields.as_slice() else {
                return None;
            };
            let matches = [host, port, db, user]
                .iter()
                .zip(wanted)
                .all(|((value, wildcard), wanted)| *wildcard || value == wanted);
            matches.then(|| password.0.clone())
        })
}

/// A password-file line's fields: each unescaped, and whether it was a
/// bare `*`. The fifth takes the rest of the line, colons and all.
fn split(line: &str) -> Vec<(String, bool)> {
    let mut fields = Vec::new();
    let (mut value, mut raw) = (String::new(), String::new());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                raw.push(c);
                if let Some(next) = chars.next() {
                    raw.push(next);
                    value.push(next);
                }
            }
            ':' if fields.len() < 4 => {
                fields.push((std::mem::take(&mut value), raw == "*"));
                raw.clear();
            }
            _ => {
                raw.push(c);
                value.push(c);
            }
        }
    }
    fields.push((value, raw == "*"));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::str::FromStr;

    fn completed(url: &str, env: &[(&str, &str)]) -> (Config, Vec<String>) {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut config = Config::from_str(url).unwrap();
        let mut warnings = Vec::new();
        complete(&mut config, &|k| env.get(k).cloned(), &mut |w| {
            warnings.push(w)
        })
        .unwrap();
        (config, warnings)
    }

    #[test]
    fn a_password_file_matches_fields_with_wildcards_and_escapes() {
        let text = "# comment\n\
                    other:5432:*:me:wrong\n\
                    db.example:*:app:me:first\\:pw\n\
                    *:*:*:me:fallback:with:colons\r\n\
                    h\\:6:5432:d:u\\\\x:escaped\n\
                    short:line\n";
        assert_eq!(
            lookup(text, ["db.example", "6432", "app", "me"]).as_deref(),
            Some("first:pw")
        );
        assert_eq!(
            lookup(text, ["db.example", "6432", "other", "me"]).as_deref(),
            Some("fallback:with:colons")
        );
        assert_eq!(
            lookup(text, ["h:6", "5432", "d", "u\\x"]).as_deref(),
            Some("escaped")
        );
        assert_eq!(lookup(text, ["db.example", "5432", "app", "you"]), None);
        // An escaped star is a star, not a wildcard.
        assert_eq!(lookup("\\*:*:*:*:pw", ["h", "1", "d", "u"]), None);
        assert_eq!(
            lookup("\\*:*:*:*:pw", ["*", "1", "d", "u"]).as_deref(),
            Some("pw")
        );
    }

    #[test]
    fn the_url_wins_then_pgpassword_then_the_password_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "h:5432:db:me:from-file\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let path = file.display().to_string();
        let env = [("PGPASSFILE", path.as_str()), ("PGPASSWORD", "from-env")];
        let (config, _) = completed("postgres://me:from-url@h/db", &env);
        assert_eq!(config.get_password(), Some(&b"from-url"[..]));
        let (config, _) = completed("postgres://me@h/db", &env);
        assert_eq!(config.get_password(), Some(&b"from-env"[..]));
        let (config, warnings) = completed("postgres://me@h/db", &env[..1]);
        assert_eq!(config.get_password(), Some(&b"from-file"[..]));
        assert!(warnings.is_empty());
        // ~/.pgpass when PGPASSFILE is not set.
        std::fs::copy(&file, dir.path().join(".pgpass")).unwrap();
        let home = dir.path().display().to_string();
        let (config, _) = completed("postgres://me@h/db", &[("HOME", &home)]);
        assert_eq!(config.get_password(), Some(&b"from-file"[..]));
        // Percent escapes in the URL's user and password are decoded.
        let (config, _) = completed("postgres://m%40e:p%3Aw%2F@h/db", &env);
        assert_eq!(config.get_user(), Some("m@e"));
        assert_eq!(config.get_password(), Some(&b"p:w/"[..]));
    }

    #[cfg(unix)]
    #[test]
    fn a_password_file_others_can_read_is_ignored_with_a_warning() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "*:*:*:*:secret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = file.display().to_string();
        let (config, warnings) = completed("postgres://me@h/db", &[("PGPASSFILE", &path)]);
        assert_eq!(config.get_password(), None);
        assert_eq!(
            warnings,
            [format!(
                "warning: password file \"{path}\" has group or world access; permissions \
                 should be u=rw (0600) or less: it is ignored"
            )]
        );
        assert!(!warnings[0].contains("secret"));
    }

    #[test]
    fn the_environment_fills_in_what_the_url_leaves_out() {
        let env = [
            ("PGHOST", "db.example"),
            ("PGPORT", "6432"),
            ("PGUSER", "agent"),
            ("PGDATABASE", "app"),
        ];
        let (config, _) = completed("postgres://", &env);
        assert_eq!(config.get_hosts(), [Host::Tcp("db.example".into())]);
        assert_eq!(config.get_ports(), [6432]);
        assert_eq!(config.get_user(), Some("agent"));
        assert_eq!(config.get_dbname(), Some("app"));
        let (config, _) = completed("postgres://me@h:1/db", &env);
        assert_eq!(config.get_hosts(), [Host::Tcp("h".into())]);
        assert_eq!(config.get_ports(), [1]);
        assert_eq!(config.get_user(), Some("me"));
        assert_eq!(config.get_dbname(), Some("db"));
        // A socket directory; the database defaults to the user's name.
        let (config, _) = completed("postgres://", &[("PGHOST", "/run/pg"), ("USER", "me")]);
        assert_eq!(config.get_hosts(), [Host::Unix("/run/pg".into())]);
        assert_eq!(config.get_dbname(), Some("me"));
    }
}
