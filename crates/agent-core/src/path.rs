//! Paths into JSON values: grammar (R7), canonical display, traversal (R8).

use crate::json::Value;
use crate::{Error, Result};
use std::fmt;

/// One step of a [`Path`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// `.name` or `["quoted"]`: an object key (or, when it is a canonical
    /// non-negative integer, an array element).
    Key(String),
    /// `[3]` or `[-1]`: an array element (negative counts from the end), or
    /// on an object the key spelled by its digits.
    Index(i64),
}

impl Segment {
    /// The object key this segment selects: the key itself, or an index's digits.
    pub fn as_key(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Segment::Key(k) => k.as_str().into(),
            Segment::Index(i) => i.to_string().into(),
        }
    }

    fn is_negative_index(&self) -> bool {
        matches!(self, Segment::Index(i) if *i < 0)
    }

    /// The array position this segment selects for reading in an array of
    /// `len` elements, if any (R8).
    pub fn array_index(&self, len: usize) -> Option<usize> {
        match self {
            Segment::Key(k) => canonical_index(k).filter(|i| *i < len),
            Segment::Index(i) if *i >= 0 => usize::try_from(*i).ok().filter(|i| *i < len),
            Segment::Index(i) => len.checked_sub(usize::try_from(i.unsigned_abs()).ok()?),
        }
    }
}

/// `Some(n)` when `s` is a canonical non-negative integer (`0`, `17`; not `01`, `+1`).
pub(crate) fn canonical_index(s: &str) -> Option<usize> {
    let canonical = s == "0" || (!s.starts_with('0') && !s.is_empty());
    if canonical && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// A path into a JSON value (R7): a sequence of [`Segment`]s.
///
/// The empty path denotes the whole value. `Display` prints the canonical
/// form, and parsing that form gives back an equal path.
///
/// ```
/// use agent_core::Path;
/// use agent_core::json;
///
/// let path: Path = ".user[\"full name\"].tags[-1]".parse()?;
/// assert_eq!(path.to_string(), ".user[\"full name\"].tags[-1]");
/// let value = json!({"user": {"full name": "Ada", "tags": ["a", "b"]}});
/// assert_eq!(path.get(&value), None); // "full name" is a string, not an object
/// assert_eq!(".user.tags[-1]".parse::<Path>()?.get(&value), Some(&json!("b")));
/// # Ok::<(), agent_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Path(Vec<Segment>);

impl Path {
    /// The empty path (the whole value).
    pub fn root() -> Self {
        Path(Vec::new())
    }

    /// Builds a path from segments.
    pub fn from_segments(segments: Vec<Segment>) -> Self {
        Path(segments)
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// True for the empty path.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of segments.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Appends a segment.
    pub fn push(&mut self, segment: Segment) {
        self.0.push(segment);
    }

    /// Parses a whole string as a path (R7).
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`](crate::Error::Syntax), with the byte offset, when `text`
    /// is not one whole path.
    pub fn parse(text: &str) -> Result<Self> {
        let (path, used) = Self::parse_prefix(text, 0)?;
        match text[used..].chars().next() {
            None => Ok(path),
            Some(c) => Err(Error::Syntax {
                offset: used,
                reason: format!("unexpected {c:?} in path; expected '.' or '['"),
            }),
        }
    }

    /// Parses the longest path at the start of `text` and returns it with the
    /// number of bytes used. Offsets in errors are `base` plus the offset in
    /// `text`, so callers embedding a path in larger text get useful offsets.
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`](crate::Error::Syntax) when `text` does not start with a
    /// path; its offset counts from `base`.
    pub fn parse_prefix(text: &str, base: usize) -> Result<(Self, usize)> {
        let mut segments = Vec::new();
        let mut pos = 0;
        let bytes = text.as_bytes();
        while pos < bytes.len() {
            match bytes[pos] {
                b'.' => {
                    let len = name_len(&text[pos + 1..]);
                    if len == 0 {
                        return Err(syntax(base + pos + 1, "expected a name after '.'"));
                    }
                    segments.push(Segment::Key(text[pos + 1..pos + 1 + len].to_owned()));
                    pos += 1 + len;
                }
                b'[' => {
                    let (segment, len) = parse_bracket(&text[pos + 1..], base + pos + 1)?;
                    segments.push(segment);
                    pos += 1 + len;
                }
                _ => break,
            }
        }
        Ok((Path(segments), pos))
    }

    /// Traverses `value` along this path (R8); `None` when the path is absent.
    pub fn get<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        self.0.iter().try_fold(value, |v, segment| step(v, segment))
    }

    /// True when `self` is a prefix of `other` (equal paths included), with
    /// `.0` and `[0]` counted as the same step.
    pub fn is_prefix_of(&self, other: &Path) -> bool {
        self.len() <= other.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.as_key() == b.as_key())
    }

    /// True when reading or writing one path may observe or change what is at
    /// the other: one is a prefix of the other. A negative index counts from
    /// the end of an array, whose length any write into it may change, so
    /// paths that agree up to a negative index always overlap.
    ///
    /// ```
    /// use agent_core::Path;
    /// let p = |s: &str| s.parse::<Path>().unwrap();
    /// assert!(p(".a").overlaps(&p(".a.b")));
    /// assert!(p(".list[-1].x").overlaps(&p(".list[3].y")));
    /// assert!(!p(".a.b").overlaps(&p(".a.c")));
    /// assert!(!p(".list[0]").overlaps(&p(".list[1]")));
    /// ```
    pub fn overlaps(&self, other: &Path) -> bool {
        for (a, b) in self.0.iter().zip(&other.0) {
            if a.is_negative_index() || b.is_negative_index() {
                return true;
            }
            if a.as_key() != b.as_key() {
                return false;
            }
        }
        true
    }

    /// Wraps `value` in objects along this path, as output messages store it
    /// (R20): every segment nests as an object key, an index as its digits.
    ///
    /// ```
    /// use agent_core::Path;
    /// use agent_core::json;
    /// let path: Path = ".arr[2]".parse()?;
    /// assert_eq!(path.nest(json!(1)), json!({"arr": {"2": 1}}));
    /// # Ok::<(), agent_core::Error>(())
    /// ```
    pub fn nest(&self, value: Value) -> Value {
        self.0.iter().rev().fold(value, |inner, segment| {
            let mut map = crate::json::Map::new();
            map.insert(segment.as_key().into_owned(), inner);
            Value::Object(map)
        })
    }
}

/// One traversal step (R8).
pub(crate) fn step<'v>(value: &'v Value, segment: &Segment) -> Option<&'v Value> {
    match value {
        Value::Object(map) => map.get(segment.as_key().as_ref()),
        Value::Array(items) => items.get(segment.array_index(items.len())?),
        _ => None,
    }
}

fn syntax(offset: usize, reason: impl Into<String>) -> Error {
    Error::Syntax {
        offset,
        reason: reason.into(),
    }
}

/// True for characters a bare name may contain (R7).
pub(crate) fn is_name_char(c: char) -> bool {
    !matches!(c, '.' | '[' | ']' | '"' | '†' | '|' | '&') && !c.is_whitespace()
}

fn name_len(text: &str) -> usize {
    text.char_indices()
        .find(|(_, c)| !is_name_char(*c))
        .map_or(text.len(), |(i, _)| i)
}

/// Parses what follows a `[`: an index or a quoted key, then `]`.
fn parse_bracket(text: &str, base: usize) -> Result<(Segment, usize)> {
    let bytes = text.as_bytes();
    let (segment, len) = match bytes.first() {
        Some(b'"') => {
            let end = string_end(text).ok_or_else(|| syntax(base, "unterminated quoted key"))?;
            let key = match agent_json::from_str(&text[..end]) {
                Ok(agent_json::Value::String(key)) => key,
                // `string_end` found a whole string: nothing else reads.
                Ok(_) => return Err(syntax(base, "invalid quoted key")),
                Err(e) => return Err(syntax(base, format!("invalid quoted key: {e}"))),
            };
            (Segment::Key(key), end)
        }
        Some(b'-' | b'0'..=b'9') => {
            let digits = bytes[1..].iter().take_while(|b| b.is_ascii_digit()).count();
            let len = 1 + digits;
            if bytes[0] == b'-' && digits == 0 {
                return Err(syntax(base + 1, "expected digits after '-'"));
            }
            let index = text[..len]
                .parse::<i64>()
                .map_err(|_| syntax(base, "index out of range"))?;
            (Segment::Index(index), len)
        }
        _ => return Err(syntax(base, "expected an index or a quoted key after '['")),
    };
    if bytes.get(len) != Some(&b']') {
        return Err(syntax(base + len, "expected ']'"));
    }
    Ok((segment, len + 1))
}

/// Byte length of the JSON string literal at the start of `text`, quotes included.
fn string_end(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, b) in text.bytes().enumerate().skip(1) {
        match (escaped, b) {
            (true, _) => escaped = false,
            (false, b'\\') => escaped = true,
            (false, b'"') => return Some(i + 1),
            _ => {}
        }
    }
    None
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Segment::Index(i) => write!(f, "[{i}]"),
            Segment::Key(k) if !k.is_empty() && k.chars().all(is_name_char) => write!(f, ".{k}"),
            Segment::Key(k) => {
                let mut quoted = String::with_capacity(k.len() + 4);
                quoted.push('[');
                agent_json::write_str(&mut quoted, k);
                quoted.push(']');
                f.write_str(&quoted)
            }
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|s| write!(f, "{s}"))
    }
}

impl std::str::FromStr for Path {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Path::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn p(s: &str) -> Path {
        Path::parse(s).unwrap()
    }

    #[test]
    fn r7_grammar_names_quoted_and_indexes() {
        assert_eq!(
            p(".a[\"b.c\"][3][-1]").segments(),
            &[
                Segment::Key("a".into()),
                Segment::Key("b.c".into()),
                Segment::Index(3),
                Segment::Index(-1)
            ]
        );
        assert!(p("").is_empty());
        assert_eq!(p(".név-1:x").segments(), &[Segment::Key("név-1:x".into())]);
    }

    #[test]
    fn r7_syntax_errors_carry_offsets() {
        let cases = [
            (".", 1),
            ("..a", 1),
            (".a[", 3),
            (".a[x]", 3),
            (".a[1", 4),
            (".a[-]", 4),
            (".a[\"x]", 3),
            (".a b", 2),
            ("a", 0),
            ("[99999999999999999999]", 1),
        ];
        for (text, offset) in cases {
            match Path::parse(text) {
                Err(Error::Syntax { offset: o, .. }) => assert_eq!(o, offset, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn r7_canonical_display_quotes_what_is_not_a_name() {
        assert_eq!(p("[\"a\"]").to_string(), ".a");
        assert_eq!(p("[\"a b\"]").to_string(), "[\"a b\"]");
        assert_eq!(p("[\"\"]").to_string(), "[\"\"]");
        assert_eq!(p("[\"†\"]").to_string(), "[\"†\"]");
        assert_eq!(p("[007]").to_string(), "[7]");
    }

    #[test]
    fn r8_traversal() {
        let v = json!({"a": [10, 20, 30], "5": "five", "o": {"01": 1}});
        assert_eq!(p(".a.1").get(&v), Some(&json!(20)));
        assert_eq!(p(".a[1]").get(&v), Some(&json!(20)));
        assert_eq!(p(".a[-1]").get(&v), Some(&json!(30)));
        assert_eq!(p(".a[-3]").get(&v), Some(&json!(10)));
        assert_eq!(p(".a[-4]").get(&v), None);
        assert_eq!(p(".a[3]").get(&v), None);
        assert_eq!(p(".a.01").get(&v), None, "non-canonical name on array");
        assert_eq!(p(".a[\"+1\"]").get(&v), None);
        assert_eq!(p("[5]").get(&v), Some(&json!("five")), "index on object");
        assert_eq!(p(".o.01").get(&v), Some(&json!(1)));
        assert_eq!(p(".a[0].x").get(&v), None, "into a scalar");
        assert_eq!(p(".n").get(&json!({"n": null})), Some(&Value::Null));
        assert_eq!(p(".n.x").get(&json!({"n": null})), None, "into null");
        assert_eq!(p("").get(&v), Some(&v));
    }

    #[test]
    fn nest_spells_indexes_as_keys() {
        assert_eq!(p(".arr[2]").nest(json!("v")), json!({"arr": {"2": "v"}}));
        assert_eq!(p("").nest(json!(1)), json!(1));
    }
}
