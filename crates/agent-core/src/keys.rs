//! The `_` keys the engine reads, and the nearest of a set of names: a
//! misspelt key, method or kind is an error that names what was meant
//! (D63: typos refused).

use crate::quoted;

/// The `_` keys of a call the engine reads (R18–R20, R36): any other `_`
/// key in a call being applied, run or answered is a typo unless the
/// application allows it.
pub const CALL_KEYS: [&str; 5] = [
    "_tool",
    "_instance",
    "_outputPath",
    "_outputMethod",
    "_output",
];

/// The `_` keys of a data message (R2): any other in a message being
/// appended is a typo unless the application allows it. Loading and
/// folding keep unknown fields and never refuse them.
pub const MESSAGE_KEYS: [&str; 9] = [
    "_instance",
    "_outputPath",
    "_outputMethod",
    "_call",
    "_callAt",
    "_date",
    "_started",
    "_worker",
    "_attempt",
];

/// The name of `names` nearest to `word`, if one is near enough to be
/// what was meant: the same but for case, or at most a third of its
/// letters (at least one) changed, added, removed or swapped.
///
/// ```
/// use agent_core::nearest;
/// assert_eq!(nearest("_outputpath", agent_core::CALL_KEYS), Some("_outputPath"));
/// assert_eq!(nearest("pus", ["set", "push", "merge"]), Some("push"));
/// assert_eq!(nearest("bogus", ["set", "push", "merge"]), None);
/// ```
pub fn nearest<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_lowercase();
    let bound = (word.chars().count() / 3).max(1);
    names
        .into_iter()
        .filter(|name| *name != word)
        .map(|name| {
            let distance = if name.to_lowercase() == lower {
                0
            } else {
                strsim::damerau_levenshtein(word, name)
            };
            (distance, name)
        })
        .filter(|(distance, _)| *distance <= bound)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// `; did you mean "NAME"?` when a name of `names` is near `word`, else
/// nothing: the tail of an error about an unknown name.
pub fn did_you_mean<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> String {
    nearest(word, names)
        .map(|name| format!("; did you mean {}?", quoted(name)))
        .unwrap_or_default()
}

/// A `_` key the engine does not read and the application did not allow:
/// most likely a typo, which would otherwise be silently ignored.
///
/// ```
/// use agent_core::{CALL_KEYS, check_keys};
/// let err = check_keys(["_tool", "_outputpath"], &CALL_KEYS, &[]).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"unknown key "_outputpath"; did you mean "_outputPath"?"#
/// );
/// assert!(check_keys(["_tool", "_trace"], &CALL_KEYS, &["_trace".into()]).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown key {}{}", quoted(key), tail(key, known))]
pub struct UnknownKey {
    /// The key as written.
    pub key: String,
    /// The keys the engine reads where it was found.
    pub known: &'static [&'static str],
}

impl UnknownKey {
    /// The known key nearest to the one written, if one is near enough.
    pub fn suggestion(&self) -> Option<&'static str> {
        nearest(&self.key, self.known.iter().copied())
    }
}

fn tail(key: &str, known: &[&str]) -> String {
    match nearest(key, known.iter().copied()) {
        Some(name) => format!("; did you mean {}?", quoted(name)),
        None => {
            let names: Vec<String> = known.iter().map(|k| quoted(k)).collect();
            format!(
                ": the engine reads {}; an application's own `_` key must be allowed",
                names.join(", ")
            )
        }
    }
}

/// Checks `keys`: each starting with `_` must be one of `known` or of
/// `allowed`; the first that is neither is the error.
///
/// # Errors
/// [`UnknownKey`] for the first `_` key that is neither known nor allowed,
/// naming the known key it most likely meant.
pub fn check_keys<'k>(
    keys: impl IntoIterator<Item = &'k str>,
    known: &'static [&'static str],
    allowed: &[String],
) -> Result<(), UnknownKey> {
    match keys.into_iter().find(|key| {
        key.starts_with('_') && !known.contains(key) && !allowed.iter().any(|a| a == key)
    }) {
        Some(key) => Err(UnknownKey {
            key: key.to_owned(),
            known,
        }),
        None => Ok(()),
    }
}
