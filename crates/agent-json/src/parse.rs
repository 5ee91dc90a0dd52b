//! Reading JSON text into a [`Value`]: exact numbers, members in order,
//! nesting bounded by the caller, and no recursion (a hostile depth costs
//! heap, never stack).
//!
//! Errors read as serde_json's did (`expected value at line 1 column 5`),
//! at the same positions, so messages quoting them stay the same.

use std::fmt;

use super::held::{HELD_FROM, is_empty_text};
use super::map::Key;
use super::{Array, Map, Value};

/// Why JSON text could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} at line {line} column {column}")]
pub struct ParseError {
    code: Code,
    line: usize,
    column: usize,
}

impl ParseError {
    /// The line (from 1) where reading stopped.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The column (bytes from the start of the line) where reading stopped.
    pub fn column(&self) -> usize {
        self.column
    }

    /// True when the text nests deeper than the limit it was read with.
    pub fn is_too_deep(&self) -> bool {
        matches!(self.code, Code::TooDeep(_))
    }

    /// True when the text ended before its value did.
    pub fn is_eof(&self) -> bool {
        matches!(
            self.code,
            Code::EofWhileParsingValue
                | Code::EofWhileParsingList
                | Code::EofWhileParsingObject
                | Code::EofWhileParsingString
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Code {
    EofWhileParsingValue,
    EofWhileParsingList,
    EofWhileParsingObject,
    EofWhileParsingString,
    ExpectedColon,
    ExpectedListCommaOrEnd,
    ExpectedObjectCommaOrEnd,
    ExpectedSomeIdent,
    ExpectedSomeValue,
    InvalidEscape,
    InvalidNumber,
    InvalidUnicodeCodePoint,
    ControlCharacterWhileParsingString,
    KeyMustBeAString,
    LoneLeadingSurrogateInHexEscape,
    TrailingComma,
    TrailingCharacters,
    UnexpectedEndOfHexEscape,
    TooDeep(usize),
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Code::EofWhileParsingValue => "EOF while parsing a value",
            Code::EofWhileParsingList => "EOF while parsing a list",
            Code::EofWhileParsingObject => "EOF while parsing an object",
            Code::EofWhileParsingString => "EOF while parsing a string",
            Code::ExpectedColon => "expected `:`",
            Code::ExpectedListCommaOrEnd => "expected `,` or `]`",
            Code::ExpectedObjectCommaOrEnd => "expected `,` or `}`",
            Code::ExpectedSomeIdent => "expected ident",
            Code::ExpectedSomeValue => "expected value",
            Code::InvalidEscape => "invalid escape",
            Code::InvalidNumber => "invalid number",
            Code::InvalidUnicodeCodePoint => "invalid unicode code point",
            Code::ControlCharacterWhileParsingString => {
                "control character (\\u0000-\\u001F) found while parsing a string"
            }
            Code::KeyMustBeAString => "key must be a string",
            Code::LoneLeadingSurrogateInHexEscape => "lone leading surrogate in hex escape",
            Code::TrailingComma => "trailing comma",
            Code::TrailingCharacters => "trailing characters",
            Code::UnexpectedEndOfHexEscape => "unexpected end of hex escape",
            Code::TooDeep(limit) => return write!(f, "nested deeper than {limit} levels"),
        })
    }
}

/// Reads one JSON value nested at most [`MAX_DEPTH`](crate::MAX_DEPTH)
/// deep (R33), with nothing but whitespace around it.
///
/// # Errors
/// [`ParseError`] for text that is not one JSON value, or nests deeper.
pub fn from_str(text: &str) -> Result<Value, ParseError> {
    from_str_within(text, crate::MAX_DEPTH)
}

/// Reads one JSON value nested at most `limit` arrays and objects deep
/// (counted as [`within_depth`](crate::within_depth) counts).
///
/// # Errors
/// [`ParseError`] for text that is not one JSON value, or nests deeper.
pub fn from_str_within(text: &str, limit: usize) -> Result<Value, ParseError> {
    from_str_compact_within(text, limit).map(|(value, _)| value)
}

/// [`from_str_within`], also telling whether `text` is, byte for byte,
/// the compact text [`to_string`](super::to_string) writes for the value
/// read: no whitespace, every escape and number as the writer spells it,
/// no key twice in an object. When it is, `text` can stand for the
/// value's compact text without writing it again.
///
/// ```
/// use agent_json as json;
/// assert!(json::from_str_compact_within(r#"{"a":[1,"x\n"]}"#, 128)?.1);
/// assert!(!json::from_str_compact_within(r#"{"a": 1}"#, 128)?.1);
/// assert!(!json::from_str_compact_within(r#""\u0041""#, 128)?.1);
/// assert!(!json::from_str_compact_within(r#"1E5"#, 128)?.1);
/// assert!(!json::from_str_compact_within(r#"{"a":1,"a":2}"#, 128)?.1);
/// # Ok::<(), json::ParseError>(())
/// ```
///
/// # Errors
/// [`ParseError`] for text that is not one JSON value, or nests deeper.
pub fn from_str_compact_within(text: &str, limit: usize) -> Result<(Value, bool), ParseError> {
    read(text, limit, HELD_FROM)
}

/// Reads a held container's text with every container built (D85: held objects; D86: held arrays);
/// its depth was checked when it was first read.
pub(super) fn from_str_unheld(text: &str) -> Result<Value, ParseError> {
    read(text, usize::MAX, usize::MAX).map(|(value, _)| value)
}

fn read(text: &str, limit: usize, held_from: usize) -> Result<(Value, bool), ParseError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        text,
        index: 0,
        limit,
        compact: true,
        held_from,
    };
    let value = parser.value()?;
    match parser.whitespace() {
        Some(_) => Err(parser.peek_error(Code::TrailingCharacters)),
        None => Ok((value, parser.compact)),
    }
}

/// Exactly one JSON number, as serde_json's `Number::from_str` reads one
/// (no whitespace; anything else is an invalid number).
pub(super) fn number_only(text: &str) -> Result<super::Number, ParseError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        text,
        index: 0,
        limit: 0,
        compact: true,
        held_from: usize::MAX,
    };
    match parser.peek() {
        Some(b'-' | b'0'..=b'9') => {}
        Some(_) => return Err(parser.peek_error(Code::InvalidNumber)),
        None => return Err(parser.peek_error(Code::EofWhileParsingValue)),
    }
    let number = parser.number()?;
    match parser.peek() {
        Some(_) => Err(parser.peek_error(Code::InvalidNumber)),
        None => Ok(number),
    }
}

enum Frame {
    Array(Vec<Value>),
    Object(Map, Key),
}

pub(super) struct Parser<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) text: &'a str,
    pub(super) index: usize,
    limit: usize,
    /// Nothing read so far differs from what the compact writer would
    /// write for it.
    pub(super) compact: bool,
    /// Objects and arrays inside this many containers are kept as their
    /// text (D85: held objects; D86: held arrays).
    held_from: usize,
}

impl Parser<'_> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.index).copied()
    }

    pub(super) fn next(&mut self) -> Option<u8> {
        let byte = self.peek();
        if byte.is_some() {
            self.index += 1;
        }
        byte
    }

    fn whitespace(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.index += 1;
            self.compact = false;
        }
        self.peek()
    }

    fn error_at(&self, at: usize, code: Code) -> ParseError {
        let before = &self.bytes[..at.min(self.bytes.len())];
        let start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        ParseError {
            code,
            line: 1 + memchr::memchr_iter(b'\n', &before[..start]).count(),
            column: before.len() - start,
        }
    }

    /// At the last byte read.
    pub(super) fn error(&self, code: Code) -> ParseError {
        self.error_at(self.index, code)
    }

    /// At the byte looked at but not read.
    pub(super) fn peek_error(&self, code: Code) -> ParseError {
        self.error_at(self.index + 1, code)
    }

    /// One whole value: containers through an explicit stack of frames.
    fn value(&mut self) -> Result<Value, ParseError> {
        let mut stack: Vec<Frame> = Vec::new();
        'value: loop {
            let mut done = match self.whitespace() {
                None => return Err(self.peek_error(Code::EofWhileParsingValue)),
                Some(b'{' | b'[') if stack.len() >= self.held_from => self.held(stack.len())?,
                Some(b'[') => {
                    self.open(stack.len())?;
                    match self.whitespace() {
                        Some(b']') => {
                            self.index += 1;
                            Value::Array(Array::new())
                        }
                        Some(_) => {
                            // Room for one item: a one-item array takes
                            // exactly its item, not four shrunk to one
                            // (whose freed tails no later item fits).
                            stack.push(Frame::Array(Vec::with_capacity(1)));
                            continue 'value;
                        }
                        None => return Err(self.peek_error(Code::EofWhileParsingList)),
                    }
                }
                Some(b'{') => {
                    self.open(stack.len())?;
                    match self.whitespace() {
                        Some(b'}') => {
                            self.index += 1;
                            Value::Object(Map::new())
                        }
                        Some(b'"') => {
                            let key = self.key()?;
                            stack.push(Frame::Object(Map::new(), key));
                            continue 'value;
                        }
                        Some(_) => return Err(self.peek_error(Code::KeyMustBeAString)),
                        None => return Err(self.peek_error(Code::EofWhileParsingObject)),
                    }
                }
                Some(_) => self.scalar()?,
            };
            // A value is complete: hand it to the container it is in, and
            // close every container it completes.
            loop {
                match stack.last_mut() {
                    None => return Ok(done),
                    Some(Frame::Array(items)) => {
                        items.push(done);
                        if self.more_elements()? {
                            continue 'value;
                        }
                    }
                    Some(Frame::Object(map, key)) => {
                        if map.insert_key(std::mem::take(key), done) {
                            // A repeated key: the writer writes it once.
                            self.compact = false;
                        }
                        if let Some(next) = self.more_members()? {
                            *key = next;
                            continue 'value;
                        }
                    }
                }
                // Growth's slack, given back: a wide log is mostly values.
                done = match stack.pop() {
                    Some(Frame::Array(mut items)) => {
                        items.shrink_to_fit();
                        Value::Array(Array::from(items))
                    }
                    Some(Frame::Object(mut map, _)) => {
                        map.shrink_to_fit();
                        Value::Object(map)
                    }
                    // Not reached: the frame just filled is still there.
                    None => Value::Null,
                };
            }
        }
    }

    /// Reads the object or array at its `{` or `[`, inside `outside`
    /// containers, exactly as [`Parser::value`] would (the same faults at
    /// the same places, the same compactness), building none of it: its
    /// text becomes a held object (D85: held objects) or array (D86: held arrays).
    fn held(&mut self, outside: usize) -> Result<Value, ParseError> {
        let start = self.index;
        let compact_before = std::mem::replace(&mut self.compact, true);
        // Each open container: where its keys start in `keys` (objects),
        // or `None` (arrays).
        let mut open: Vec<Option<usize>> = Vec::new();
        let mut keys: Vec<Key> = Vec::new();
        // How deep the text nests, and whether a repeated key may have
        // dropped what made it so.
        let (mut depth, mut repeated) = (0, false);
        'value: loop {
            match self.whitespace() {
                None => return Err(self.peek_error(Code::EofWhileParsingValue)),
                Some(b'[') => {
                    self.open(outside + open.len())?;
                    // An empty container is a level too.
                    depth = depth.max(open.len() + 1);
                    match self.whitespace() {
                        Some(b']') => self.index += 1,
                        Some(_) => {
                            open.push(None);
                            continue 'value;
                        }
                        None => return Err(self.peek_error(Code::EofWhileParsingList)),
                    }
                }
                Some(b'{') => {
                    self.open(outside + open.len())?;
                    depth = depth.max(open.len() + 1);
                    match self.whitespace() {
                        Some(b'}') => self.index += 1,
                        Some(b'"') => {
                            let key = self.key()?;
                            open.push(Some(keys.len()));
                            keys.push(key);
                            continue 'value;
                        }
                        Some(_) => return Err(self.peek_error(Code::KeyMustBeAString)),
                        None => return Err(self.peek_error(Code::EofWhileParsingObject)),
                    }
                }
                Some(_) => drop(self.scalar()?),
            }
            // A value is complete: go on in its container, closing every
            // container it completes.
            loop {
                match open.last().copied() {
                    None => break 'value,
                    Some(None) => {
                        if self.more_elements()? {
                            continue 'value;
                        }
                    }
                    Some(Some(from)) => {
                        if let Some(next) = self.more_members()? {
                            keys.push(next);
                            continue 'value;
                        }
                        // A repeated key: the writer writes it once, and
                        // the value it replaced may have been the deepest.
                        if repeats(&keys[from..]) {
                            self.compact = false;
                            repeated = true;
                        }
                        keys.truncate(from);
                    }
                }
                open.pop();
            }
        }
        let compact = self.compact;
        self.compact = compact_before && compact;
        let depth = (!repeated).then_some(depth);
        Ok(match self.text.get(start..self.index) {
            // `{}` and `[]`: nothing to hold.
            Some(text) if is_empty_text(text) && text.starts_with('[') => {
                Value::Array(Array::new())
            }
            Some(text) if is_empty_text(text) => Value::Object(Map::new()),
            Some(text) if text.starts_with('[') => Value::Array(Array::held(text, compact, depth)),
            Some(text) => Value::Object(Map::held(text, compact, depth)),
            // Not reached: brackets and braces are whole characters.
            None => return Err(self.error(Code::EofWhileParsingValue)),
        })
    }

    /// Enters an array or object at `open` containers deep.
    fn open(&mut self, open: usize) -> Result<(), ParseError> {
        if open >= self.limit {
            return Err(self.peek_error(Code::TooDeep(self.limit)));
        }
        self.index += 1;
        Ok(())
    }

    /// After an element: `true` when another follows (its `,` read).
    fn more_elements(&mut self) -> Result<bool, ParseError> {
        match self.whitespace() {
            Some(b']') => {
                self.index += 1;
                Ok(false)
            }
            Some(b',') => {
                self.index += 1;
                match self.whitespace() {
                    Some(b']') => Err(self.peek_error(Code::TrailingComma)),
                    Some(_) => Ok(true),
                    None => Err(self.peek_error(Code::EofWhileParsingValue)),
                }
            }
            Some(_) => Err(self.peek_error(Code::ExpectedListCommaOrEnd)),
            None => Err(self.peek_error(Code::EofWhileParsingList)),
        }
    }

    /// After a member: the next key (its `:` read), or `None` at `}`.
    fn more_members(&mut self) -> Result<Option<Key>, ParseError> {
        match self.whitespace() {
            Some(b'}') => {
                self.index += 1;
                Ok(None)
            }
            Some(b',') => {
                self.index += 1;
                match self.whitespace() {
                    Some(b'"') => self.key().map(Some),
                    Some(b'}') => Err(self.peek_error(Code::TrailingComma)),
                    Some(_) => Err(self.peek_error(Code::KeyMustBeAString)),
                    None => Err(self.peek_error(Code::EofWhileParsingValue)),
                }
            }
            Some(_) => Err(self.peek_error(Code::ExpectedObjectCommaOrEnd)),
            None => Err(self.peek_error(Code::EofWhileParsingObject)),
        }
    }

    /// A key at its `"`, then the `:` after it.
    fn key(&mut self) -> Result<Key, ParseError> {
        self.index += 1;
        let key = self.key_text()?;
        match self.whitespace() {
            Some(b':') => {
                self.index += 1;
                Ok(key)
            }
            Some(_) => Err(self.peek_error(Code::ExpectedColon)),
            None => Err(self.peek_error(Code::EofWhileParsingObject)),
        }
    }

    fn scalar(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            Some(b'n') => self.ident(b"null", Value::Null),
            Some(b't') => self.ident(b"true", Value::Bool(true)),
            Some(b'f') => self.ident(b"false", Value::Bool(false)),
            Some(b'"') => {
                self.index += 1;
                self.string().map(Value::String)
            }
            Some(b'-' | b'0'..=b'9') => self.number().map(Value::Number),
            _ => Err(self.peek_error(Code::ExpectedSomeValue)),
        }
    }

    fn ident(&mut self, ident: &[u8], value: Value) -> Result<Value, ParseError> {
        self.index += 1;
        for expected in &ident[1..] {
            match self.next() {
                None => return Err(self.error(Code::EofWhileParsingValue)),
                Some(next) if next != *expected => return Err(self.error(Code::ExpectedSomeIdent)),
                Some(_) => {}
            }
        }
        Ok(value)
    }
}

/// True when a key stands twice among `keys` (an object's, in order).
fn repeats(keys: &[Key]) -> bool {
    // Few keys: compared pairwise; more: sorted, so no object costs more
    // than a sort of its keys.
    if keys.len() <= 16 {
        return keys
            .iter()
            .enumerate()
            .any(|(i, key)| keys[..i].contains(key));
    }
    let mut sorted: Vec<&str> = keys.iter().map(Key::as_str).collect();
    sorted.sort_unstable();
    sorted.windows(2).any(|pair| pair[0] == pair[1])
}
