//! Writing a [`Value`] as JSON text, byte for byte as serde_json wrote the
//! same value (so digests over compact text, D46: the chain, do not change).
//!
//! Iterative like the parser: any value the type can hold is written
//! without recursion.

use std::fmt;

use super::{Map, Value};

/// The compact text: no whitespace.
///
/// ```
/// use agent_json as json;
/// let value = json::from_str(r#"{ "a": [1, 2.50, "x\n"] }"#)?;
/// assert_eq!(json::to_string(&value), r#"{"a":[1,2.50,"x\n"]}"#);
/// # Ok::<(), json::ParseError>(())
/// ```
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, Some(value), Vec::new(), None, usize::MAX);
    out
}

/// The pretty text: two spaces per level, `"key": value`, as serde_json's
/// `to_string_pretty`.
pub fn to_string_pretty(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, Some(value), Vec::new(), Some(0), usize::MAX);
    out
}

/// How [`write_into`] lays text out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// No whitespace, as [`to_string`] writes.
    Compact,
    /// Indented by two spaces, as [`to_string_pretty`] writes.
    Pretty,
}

/// Appends the text of `value` to `out` in `style`, as [`to_string`] and
/// [`to_string_pretty`] would write it.
///
/// ```
/// use agent_json::{Style, json, write_into};
/// let mut out = String::from("= ");
/// write_into(&mut out, &json!({"a": [1]}), Style::Compact);
/// assert_eq!(out, r#"= {"a":[1]}"#);
/// ```
pub fn write_into(out: &mut String, value: &Value, style: Style) {
    let indent = match style {
        Style::Compact => None,
        Style::Pretty => Some(0),
    };
    write(out, Some(value), Vec::new(), indent, usize::MAX);
}

/// Appends the compact text of the object `map` to `out` if it nests at
/// most `limit` levels (the object itself is the first); otherwise returns
/// `false`, with what was written before the refusal left in `out`. One
/// pass both checks and writes, as a log appending a message needs.
///
/// ```
/// use agent_json::{self as json, Value};
/// let Value::Object(map) = agent_json::json!({"a": [[1]]}) else { unreachable!() };
/// let mut out = String::new();
/// assert!(json::write_object_within(&mut out, &map, 3));
/// assert_eq!(out, r#"{"a":[[1]]}"#);
/// assert!(!json::write_object_within(&mut String::new(), &map, 2));
/// ```
pub fn write_object_within(out: &mut String, map: &Map, limit: usize) -> bool {
    if limit == 0 {
        return false;
    }
    if map.is_unread() {
        // A held object (D85: held objects), written as any value holding one is: its
        // text copied or read apart, not read in place. A copy is its text.
        let value = Value::Object(map.clone());
        return write(out, Some(&value), Vec::new(), None, limit);
    }
    if map.is_empty() {
        out.push_str("{}");
        return true;
    }
    out.push('{');
    // Room for a message's usual nesting: the stack is not grown per level.
    let mut stack = Vec::with_capacity(8);
    stack.push(Open::Object(map.iter(), false));
    write(out, None, stack, None, limit)
}

impl fmt::Display for Value {
    /// Compact; `{:#}` is pretty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            f.write_str(&to_string_pretty(self))
        } else {
            f.write_str(&to_string(self))
        }
    }
}

/// What is left to write of one open container, and whether anything of
/// it has been written.
enum Open<'v> {
    Array(std::slice::Iter<'v, Value>, bool),
    Object(super::map::Iter<'v>, bool),
}

/// Writes `next`, then closes what `stack` holds open; `indent` is `None`
/// for compact text, else the level. Returns `false` at a container that
/// would be more than `limit` levels deep, before writing it.
fn write<'v>(
    out: &mut String,
    mut next: Option<&'v Value>,
    mut stack: Vec<Open<'v>>,
    indent: Option<usize>,
    limit: usize,
) -> bool {
    let pretty = indent.is_some();
    let base = indent.unwrap_or(0);
    loop {
        if let Some(value) = next.take() {
            let container = matches!(value, Value::Array(_) | Value::Object(_));
            if container && stack.len() >= limit {
                return false;
            }
            // A held container (D85: held objects; D86: held arrays), within the limit: its compact
            // text copied. Past it, read apart below, so the refusal comes
            // where it always did.
            let copied = value
                .held_compact_text()
                .filter(|&(_, depth)| stack.len() + depth <= limit);
            if let Some((text, _)) = copied {
                match indent {
                    None => out.push_str(text),
                    Some(base) => push_pretty(out, text, base + stack.len()),
                }
            } else if let Some(read) = value.read_apart() {
                // Read for this once, not kept: written on its own, one
                // level of recursion at most, as what is read apart holds
                // no held container.
                let level = indent.map(|base| base + stack.len());
                let within = limit - stack.len();
                let written = write(out, Some(&read), Vec::new(), level, within);
                // However deep it is, it goes without recursion.
                super::drop_deep(read);
                if !written {
                    return false;
                }
            } else {
                match value {
                    Value::Null => out.push_str("null"),
                    Value::Bool(true) => out.push_str("true"),
                    Value::Bool(false) => out.push_str("false"),
                    Value::Number(n) => n.push_to(out),
                    Value::String(s) => escape(out, s),
                    Value::Array(items) if items.is_empty() => out.push_str("[]"),
                    Value::Object(map) if map.is_empty() => out.push_str("{}"),
                    Value::Array(items) => {
                        out.push('[');
                        stack.push(Open::Array(items.iter(), false));
                    }
                    Value::Object(map) => {
                        out.push('{');
                        stack.push(Open::Object(map.iter(), false));
                    }
                }
            }
        }
        // The next member of the innermost open container, or its close.
        let depth = stack.len();
        let Some(open) = stack.last_mut() else {
            return true;
        };
        let (started, item) = match open {
            Open::Array(items, started) => (started, items.next().map(|v| (None, v))),
            Open::Object(members, started) => (started, members.next().map(|(k, v)| (Some(k), v))),
        };
        match item {
            Some((key, value)) => {
                if std::mem::replace(started, true) {
                    out.push(',');
                }
                if pretty {
                    out.push('\n');
                    push_indent(out, base + depth);
                }
                if let Some(key) = key {
                    escape(out, key);
                    out.push(':');
                    if pretty {
                        out.push(' ');
                    }
                }
                next = Some(value);
            }
            None => {
                let close = match stack.pop() {
                    Some(Open::Array(..)) => ']',
                    _ => '}',
                };
                if pretty {
                    out.push('\n');
                    push_indent(out, base + depth - 1);
                }
                out.push(close);
            }
        }
    }
}

/// Writes compact text as the pretty writer writes the value it holds,
/// from `level`: a held container is written without being read (D85:
/// held objects; D86: held arrays).
fn push_pretty(out: &mut String, compact: &str, mut level: usize) {
    let bytes = compact.as_bytes();
    let (mut at, mut copied) = (0, 0);
    let copy_to = |out: &mut String, end: usize, copied: &mut usize| {
        out.push_str(compact.get(*copied..end).unwrap_or_default());
        *copied = end;
    };
    while let Some(&byte) = bytes.get(at) {
        at += 1;
        match byte {
            b'"' => {
                // The string, escapes and all, copied as it is.
                while let Some(&byte) = bytes.get(at) {
                    at += if byte == b'\\' { 2 } else { 1 };
                    if byte == b'"' {
                        break;
                    }
                }
            }
            b'{' | b'[' if matches!(bytes.get(at), Some(b'}' | b']')) => at += 1,
            b'{' | b'[' => {
                copy_to(out, at, &mut copied);
                level += 1;
                out.push('\n');
                push_indent(out, level);
            }
            b'}' | b']' => {
                copy_to(out, at - 1, &mut copied);
                level = level.saturating_sub(1);
                out.push('\n');
                push_indent(out, level);
                copy_to(out, at, &mut copied);
            }
            b',' => {
                copy_to(out, at, &mut copied);
                out.push('\n');
                push_indent(out, level);
            }
            b':' => {
                copy_to(out, at, &mut copied);
                out.push(' ');
            }
            _ => {}
        }
    }
    copy_to(out, bytes.len(), &mut copied);
}

fn push_indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// Appends `s` to `out` as a JSON string: in quotes, escaped as the
/// writer escapes every string (as serde_json does): `"` and `\`, the five
/// short control escapes, other controls as `\u00XX`; everything else as
/// it is.
///
/// ```
/// let mut out = String::from("key ");
/// agent_json::write_str(&mut out, "a \"b\"\n");
/// assert_eq!(out, r#"key "a \"b\"\n""#);
/// ```
pub fn write_str(out: &mut String, s: &str) {
    escape(out, s);
}

/// A string in quotes, escaped as serde_json escapes: `"` and `\`, the
/// five short control escapes, other controls as `\u00XX`; everything
/// else as it is.
fn escape(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    // Most strings need no escape: found eight bytes at a time, and copied
    // whole.
    let clean = clean_prefix(bytes);
    out.reserve(bytes.len() + 2);
    out.push('"');
    if clean == bytes.len() {
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut start = 0;
    for (i, byte) in bytes.iter().copied().enumerate().skip(clean) {
        let escaped = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escaped.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(escaped);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// How many bytes at the start of `bytes` hold no byte that [`escape`]
/// escapes (a control, `"` or `\`): all of them, or a multiple of eight.
fn clean_prefix(bytes: &[u8]) -> usize {
    let mut clean = 0;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in chunks.by_ref() {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        if !clean_word(u64::from_le_bytes(word)) {
            return clean;
        }
        clean += 8;
    }
    // The last few bytes, padded with blanks (which need no escape).
    let rest = chunks.remainder();
    let mut word = [b' '; 8];
    word[..rest.len()].copy_from_slice(rest);
    if clean_word(u64::from_le_bytes(word)) {
        clean += rest.len();
    }
    clean
}

/// True when no byte of `word` is a control, `"` or `\`.
fn clean_word(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Nonzero exactly when some byte of `word` is zero.
    let zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    // Below 0x20: some byte with none of its top three bits set.
    let control = zero(word & (0xe0 * ONES));
    (control | zero(word ^ (u64::from(b'"') * ONES)) | zero(word ^ (u64::from(b'\\') * ONES))) == 0
}
