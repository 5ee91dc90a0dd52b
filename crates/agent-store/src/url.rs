//! Telling a PostgreSQL address from a path, and showing it safely.

/// True when `address` names a context in PostgreSQL (spec §10) rather
/// than a file.
pub fn is_postgres_url(address: &str) -> bool {
    scheme(address).is_some()
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
pub fn without_password(url: &str) -> String {
    let Some(scheme) = scheme(url) else {
        return url.to_owned();
    };
    let (before, query) = split_query(url);
    let rest = &before[scheme.len()..];
    let rest = match rest.split_once('@') {
        Some((credentials, host)) => {
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{user}@{host}")
        }
        None => rest.to_owned(),
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
    use super::without_password;

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
