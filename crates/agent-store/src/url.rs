//! Telling a PostgreSQL address from a path, and showing it safely.

/// True when `address` names a context in PostgreSQL (spec §10) rather
/// than a file.
pub fn is_postgres_url(address: &str) -> bool {
    scheme(address).is_some()
}

/// True when `address` is not a PostgreSQL URL but looks like one mistyped
/// — `POSTGRES://…` (libpq, too, knows only the lower-case schemes),
/// `postgres:/…`, `postgres//…`, `postgresql:user@…` — and so must be
/// refused, never taken for a file's path.
pub fn is_mistyped_postgres_url(address: &str) -> bool {
    !is_postgres_url(address) && loose_scheme(address).is_some()
}

/// Why a mistyped URL is refused.
pub(crate) const MISTYPED: &str = "this looks like a mistyped PostgreSQL URL: write \
     postgres://USER@HOST:PORT/DB?context=NAME (or postgresql://), in lower case with `://`; \
     a file's path cannot start like this";

/// How long the scheme-like start of `address` is: `postgres` or
/// `postgresql` in any case, then `:`, or `//` (a missing colon), with
/// any slashes after.
fn loose_scheme(address: &str) -> Option<usize> {
    let lower = address.get(..address.len().min(10))?.to_ascii_lowercase();
    let name = ["postgresql", "postgres"]
        .into_iter()
        .find(|name| lower.starts_with(name))?;
    let rest = &address[name.len()..];
    if !rest.starts_with(':') && !rest.starts_with("//") {
        return None;
    }
    let separator = rest.len() - rest.trim_start_matches([':', '/']).len();
    Some(name.len() + separator)
}

/// The scheme `address` starts with, if it is a PostgreSQL URL.
pub(crate) fn scheme(address: &str) -> Option<&'static str> {
    ["postgres://", "postgresql://"]
        .into_iter()
        .find(|s| address.starts_with(s))
}

/// Splits a PostgreSQL URL after its scheme into what comes before the
/// query and the query. The client reads everything up to the first `@`
/// as `user[:password]`, so the query starts at the first `?` after it.
pub(crate) fn split_query(url: &str) -> (&str, &str) {
    let credentials_end = url.find('@').map_or(0, |at| at + 1);
    match url[credentials_end..].find('?') {
        Some(at) => (
            &url[..credentials_end + at],
            &url[credentials_end + at + 1..],
        ),
        None => (url, ""),
    }
}

/// `url` without its password: the client takes everything before the
/// first `@` as `user[:password]` (a password may hold `/`, `?`, `:`), and
/// a `password` parameter whose name may be percent-encoded.
///
/// A mistyped URL ([`is_mistyped_postgres_url`]) is shown the same way.
pub fn without_password(url: &str) -> String {
    let (scheme, before, query) = match (scheme(url), loose_scheme(url)) {
        (Some(scheme), _) => {
            let (before, query) = split_query(url);
            (scheme, &before[scheme.len()..], query)
        }
        // Nobody knows how a mistyped URL was meant to be read: hide all
        // up to its last `@`, which may sit inside a mistyped password.
        (None, Some(end)) => {
            let rest = &url[end..];
            let host = rest.rfind('@').map_or(0, |at| at + 1);
            match rest[host..].find('?') {
                Some(at) => (&url[..end], &rest[..host + at], &rest[host + at + 1..]),
                None => (&url[..end], rest, ""),
            }
        }
        (None, None) => return url.to_owned(),
    };
    let rest = match before.rfind('@') {
        Some(at) => {
            let user = before[..at].split(':').next().unwrap_or_default();
            format!("{user}@{}", &before[at + 1..])
        }
        None => before.to_owned(),
    };
    if query.is_empty() && !url.ends_with('?') {
        return format!("{scheme}{rest}");
    }
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            percent_decode(key).map_or(true, |key| key != "password")
        })
        .collect();
    format!("{scheme}{rest}?{}", kept.join("&"))
}

/// Decodes `%XX` escapes (a literal `+` stays a `+`, as libpq reads it).
pub(crate) fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent escape at byte {i}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "not UTF-8 once decoded".to_owned())
}

#[cfg(test)]
mod tests {
    use super::{is_mistyped_postgres_url, is_postgres_url, without_password};

    #[test]
    fn mistyped_urls_are_told_from_urls_and_paths_and_hide_their_password() {
        let mistyped = [
            (
                "POSTGRES://u:pw@h/db?context=c",
                "POSTGRES://u@h/db?context=c",
            ),
            ("Postgresql://u:pw@h/db", "Postgresql://u@h/db"),
            ("postgres:/u:pw@h/db", "postgres:/u@h/db"),
            ("postgresql//u:pw@h/db", "postgresql//u@h/db"),
            (
                "postgres//h/db?password=pw&context=c",
                "postgres//h/db?context=c",
            ),
            ("postgres:u:pw@h/db", "postgres:u@h/db"),
            ("postgres:u:p@s?s@h?context=c", "postgres:u@h?context=c"),
        ];
        for (url, shown) in mistyped {
            assert!(is_mistyped_postgres_url(url), "{url}");
            assert!(!is_postgres_url(url), "{url}");
            assert_eq!(without_password(url), shown, "{url}");
        }
        for path in [
            "postgres/ctx.jsonl",
            "postgres.jsonl",
            "./postgres:x",
            "pg://h/db",
        ] {
            assert!(!is_mistyped_postgres_url(path), "{path}");
            assert_eq!(without_password(path), path);
        }
        assert!(!is_mistyped_postgres_url("postgres://h/db?context=c"));
        assert!(!is_mistyped_postgres_url("postgres:///db?context=c"));
    }

    #[test]
    fn spec10_the_password_never_shows_wherever_it_is() {
        let cases = [
            (
                "postgres://u:pw@h/db?context=c",
                "postgres://u@h/db?context=c",
            ),
            (
                "postgres://u:pa/ss@h/db?context=c",
                "postgres://u@h/db?context=c",
            ),
            (
                "postgres://u:p?w@h/db?context=c",
                "postgres://u@h/db?context=c",
            ),
            ("postgres://u:p:w@h:5432/db", "postgres://u@h:5432/db"),
            (
                "postgresql://h/db?password=pw&context=c&pass%77ord=pw",
                "postgresql://h/db?context=c",
            ),
            ("postgres://h/db", "postgres://h/db"),
        ];
        for (url, shown) in cases {
            assert_eq!(without_password(url), shown, "{url}");
        }
    }
}
