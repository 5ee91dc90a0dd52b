//! Telling a PostgreSQL address from a path, and showing it safely.

/// True when `address` names a context in PostgreSQL (SPEC §10) rather
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

/// `url` with the password removed from its user part and its query.
pub fn without_password(url: &str) -> String {
    let Some(scheme) = scheme(url) else {
        return url.to_owned();
    };
    let rest = &url[scheme.len()..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((user, _password)) => format!("{user}@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|pair| !pair.starts_with("password="))
                .collect();
            format!("{path}?{}", kept.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}{authority}{tail}")
}
