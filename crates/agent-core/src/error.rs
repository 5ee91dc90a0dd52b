//! The one error type of this crate.

use crate::Path;

/// Everything that can go wrong in `agent-core`.
///
/// Each variant says what was wrong and where: a byte offset into the text
/// that failed to parse, or the path at which a write failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Text that should be a path, kind, reference or method does not parse.
    #[error("syntax error at byte {offset}: {reason}")]
    Syntax {
        /// Byte offset of the fault in the parsed text.
        offset: usize,
        /// What was expected or found there.
        reason: String,
    },
    /// A kind that does not match `[A-Za-z_][A-Za-z0-9_-]*` (R2).
    #[error(transparent)]
    InvalidKind(#[from] InvalidKind),
    /// An instance id R2 does not allow: empty, longer than
    /// [`crate::MAX_INSTANCE_CHARS`] characters, with a control character or
    /// a line or paragraph separator, or with a blank at either end.
    #[error("invalid instance id {id}: {reason}")]
    InvalidInstance {
        /// The rejected id as a JSON string (escaped; long ones shortened).
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A method name other than the six of R10 and R10b.
    #[error(transparent)]
    UnknownMethod(#[from] UnknownMethod),
    /// A write that cannot be applied to the current value (R10, R11).
    #[error("type error at {at}: {reason}")]
    Type {
        /// The path (from the root of the view) where the write got stuck.
        at: DisplayPath,
        /// Why the write cannot be applied there.
        reason: String,
    },
}

/// A kind that does not match `[A-Za-z_][A-Za-z0-9_-]*` (R2). Declared
/// once here; the layers above wrap it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid kind {}: a kind matches [A-Za-z_][A-Za-z0-9_-]*",
    quoted(kind)
)]
pub struct InvalidKind {
    /// The rejected text.
    pub kind: String,
}

/// A method name other than the six of R10 and R10b. Declared once here; the
/// layers above wrap it.
///
/// ```
/// use agent_core::Method;
/// let err = "bogus".parse::<Method>().unwrap_err();
/// assert_eq!(err.to_string(), r#"unknown method "bogus": expected set, merge, assign, push, concat or erase"#);
/// let err = "pus".parse::<Method>().unwrap_err();
/// assert!(err.to_string().ends_with(r#"erase; did you mean "push"?"#));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown method {}: expected set, merge, assign, push, concat or erase{}",
    quoted(name),
    crate::did_you_mean(name, crate::Method::ALL.map(crate::Method::as_str))
)]
pub struct UnknownMethod {
    /// The rejected name.
    pub name: String,
}

/// `text` as a JSON string, the way error messages show user text (and
/// what a server or a model sent): quoted once, escaped as JSON escapes
/// it (not as Rust's debug format does) — and every character that would
/// act on a terminal instead of showing there escaped as `\uXXXX` too:
/// C0 and C1 controls, DEL, the bidi controls that reorder a line, and
/// the other invisible format characters (Unicode category Cf, line and
/// paragraph separators). The result still reads back as `text`.
///
/// ```
/// assert_eq!(agent_core::quoted("a\"b\u{1b}"), r#""a\"b\u001b""#);
/// // U+202E would print the rest of the line right to left.
/// assert_eq!(agent_core::quoted("ok\u{202e}kO"), r#""ok\u202ekO""#);
/// ```
pub fn quoted(text: &str) -> String {
    let json = crate::json::Value::from(text).to_string();
    json_for_terminal(&json).into_owned()
}

/// JSON text made safe to print: every character a terminal would act on
/// instead of showing — DEL, C1 controls, bidi controls, the other format
/// characters (Cf), line and paragraph separators, and any C0 control but
/// the whitespace JSON allows between tokens — written as `\uXXXX`. JSON
/// escapes C0 controls inside strings already, and the others can only be
/// inside strings, so the result is the same JSON value.
///
/// ```
/// let printed = agent_core::json_for_terminal("{\"tool\": \"ok\u{202e}kO\"}\n");
/// assert_eq!(printed, "{\"tool\": \"ok\\u202ekO\"}\n");
/// assert_eq!(agent_core::json_for_terminal("[1, 2]"), "[1, 2]"); // borrowed, untouched
/// ```
pub fn json_for_terminal(json: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| acts_on_a_terminal(c) && !matches!(c, '\n' | '\r' | '\t');
    // Printable ASCII is most output and never escaped: skip it bytewise.
    let plain = json
        .bytes()
        .position(|b| b >= 0x7f || (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')))
        .unwrap_or(json.len());
    let (start, rest) = json.split_at(plain);
    if !rest.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    out.push_str(start);
    for c in rest.chars() {
        if escaped(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Characters a terminal acts on or hides rather than shows: controls,
/// DEL, and the format characters (category Cf, Unicode 16) with the line
/// and paragraph separators.
fn acts_on_a_terminal(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{ad}'
        | '\u{600}'..='\u{605}'
        | '\u{61c}'
        | '\u{6dd}'
        | '\u{70f}'
        | '\u{890}'..='\u{891}'
        | '\u{8e2}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{110bd}'
        | '\u{110cd}'
        | '\u{13430}'..='\u{1343f}'
        | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0001}'
        | '\u{e0020}'..='\u{e007f}')
}

/// A path printed in its canonical form, or `(root)` when empty.
///
/// Wraps [`Path`] so error messages read well for the empty path too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayPath(pub Path);

impl std::fmt::Display for DisplayPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            f.write_str("(root)")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
