//! The two lexemes with inner structure: strings (escapes, surrogate
//! pairs) and numbers (kept as text, normalised as serde_json's exact
//! numbers were).

use super::Number;
use super::map::Key;
use super::parse::{Code, ParseError, Parser};

/// A string as read: a slice of the input when it held no escape.
pub(super) enum Lexeme<'a> {
    Slice(&'a str),
    Unescaped(String),
}

impl<'a> Parser<'a> {
    /// A string's contents after its opening `"`, through its closing one.
    pub(super) fn string(&mut self) -> Result<String, ParseError> {
        Ok(match self.lexeme()? {
            Lexeme::Slice(text) => text.to_owned(),
            Lexeme::Unescaped(text) => text,
        })
    }

    /// An object's key, as [`Parser::string`] reads it; a short one is
    /// never allocated.
    pub(super) fn key_text(&mut self) -> Result<Key, ParseError> {
        Ok(match self.lexeme()? {
            Lexeme::Slice(text) => Key::from(text),
            Lexeme::Unescaped(text) => Key::from(text),
        })
    }

    fn lexeme(&mut self) -> Result<Lexeme<'a>, ParseError> {
        let input: &'a str = self.text;
        let start = self.index;
        // The common case, no escape: one slice of the input.
        loop {
            match self.peek() {
                Some(b'"') => {
                    let text = &input[start..self.index];
                    self.index += 1;
                    return Ok(Lexeme::Slice(text));
                }
                Some(b'\\') => break,
                Some(byte) if byte < 0x20 => {
                    self.index += 1;
                    return Err(self.error(Code::ControlCharacterWhileParsingString));
                }
                Some(_) => self.index += 1,
                None => return Err(self.error(Code::EofWhileParsingString)),
            }
        }
        let mut out = String::from(&self.text[start..self.index]);
        loop {
            let run = self.index;
            while let Some(byte) = self.peek() {
                if byte == b'"' || byte == b'\\' || byte < 0x20 {
                    break;
                }
                self.index += 1;
            }
            out.push_str(&self.text[run..self.index]);
            match self.next() {
                Some(b'"') => return Ok(Lexeme::Unescaped(out)),
                Some(b'\\') => self.escape(&mut out)?,
                Some(_) => return Err(self.error(Code::ControlCharacterWhileParsingString)),
                None => return Err(self.error(Code::EofWhileParsingString)),
            }
        }
    }

    /// One escape after its `\`.
    fn escape(&mut self, out: &mut String) -> Result<(), ParseError> {
        let unescaped = match self.next() {
            None => return Err(self.error(Code::EofWhileParsingString)),
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => {
                // The writer leaves `/` as it is.
                self.compact = false;
                '/'
            }
            Some(b'b') => '\x08',
            Some(b'f') => '\x0c',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => return self.unicode_escape(out),
            Some(_) => return Err(self.error(Code::InvalidEscape)),
        };
        out.push(unescaped);
        Ok(())
    }

    /// `\uXXXX`, and its trailing surrogate when it is a leading one.
    fn unicode_escape(&mut self, out: &mut String) -> Result<(), ParseError> {
        let first = self.hex4()?;
        if (0xDC00..=0xDFFF).contains(&first) {
            return Err(self.error(Code::LoneLeadingSurrogateInHexEscape));
        }
        let digits = self
            .bytes
            .get(self.index.saturating_sub(4)..self.index)
            .unwrap_or_default();
        if !written_as_escape(first, digits) {
            self.compact = false;
        }
        let code = if (0xD800..=0xDBFF).contains(&first) {
            for expected in [b'\\', b'u'] {
                match self.peek() {
                    Some(byte) if byte == expected => self.index += 1,
                    Some(_) => {
                        self.index += 1;
                        return Err(self.error(Code::UnexpectedEndOfHexEscape));
                    }
                    None => return Err(self.error(Code::EofWhileParsingString)),
                }
            }
            let second = self.hex4()?;
            if !(0xDC00..=0xDFFF).contains(&second) {
                return Err(self.error(Code::LoneLeadingSurrogateInHexEscape));
            }
            (((u32::from(first) - 0xD800) << 10) | (u32::from(second) - 0xDC00)) + 0x1_0000
        } else {
            u32::from(first)
        };
        match char::from_u32(code) {
            Some(c) => {
                out.push(c);
                Ok(())
            }
            None => Err(self.error(Code::InvalidUnicodeCodePoint)),
        }
    }

    fn hex4(&mut self) -> Result<u16, ParseError> {
        let Some(digits) = self.bytes.get(self.index..self.index + 4) else {
            self.index = self.bytes.len();
            return Err(self.error(Code::EofWhileParsingString));
        };
        self.index += 4;
        let mut n: u16 = 0;
        for &digit in digits {
            let value = match digit {
                b'0'..=b'9' => digit - b'0',
                b'a'..=b'f' => digit - b'a' + 10,
                b'A'..=b'F' => digit - b'A' + 10,
                _ => return Err(self.error(Code::InvalidEscape)),
            };
            n = (n << 4) | u16::from(value);
        }
        Ok(n)
    }

    /// A number at its first byte (`-` or a digit).
    pub(super) fn number(&mut self) -> Result<Number, ParseError> {
        let start = self.index;
        let mut exponent_at = None;
        if self.peek() == Some(b'-') {
            self.index += 1;
        }
        match self.next() {
            Some(b'0') => {
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.peek_error(Code::InvalidNumber));
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            Some(_) => return Err(self.error(Code::InvalidNumber)),
            None => return Err(self.error(Code::EofWhileParsingValue)),
        }
        if self.peek() == Some(b'.') {
            self.index += 1;
            let before = self.index;
            self.digits();
            if self.index == before {
                return Err(match self.peek() {
                    Some(_) => self.peek_error(Code::InvalidNumber),
                    None => self.peek_error(Code::EofWhileParsingValue),
                });
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            exponent_at = Some(self.index);
            self.index += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.index += 1;
            }
            match self.next() {
                Some(b'0'..=b'9') => self.digits(),
                Some(_) => return Err(self.error(Code::InvalidNumber)),
                None => return Err(self.error(Code::EofWhileParsingValue)),
            }
        }
        let text = &self.text[start..self.index];
        Ok(match exponent_at {
            // The kept form: `e`, its sign always written.
            Some(at) => {
                let spelled = text.as_bytes().get(at - start..at - start + 2);
                if !matches!(spelled, Some([b'e', b'+' | b'-'])) {
                    self.compact = false;
                }
                let (mantissa, exponent) = text.split_at(at - start);
                let exponent = &exponent[1..];
                let (sign, digits) = match exponent.as_bytes().first() {
                    Some(b'-') => ("-", &exponent[1..]),
                    Some(b'+') => ("+", &exponent[1..]),
                    _ => ("+", exponent),
                };
                Number::from_normalised(&format!("{mantissa}e{sign}{digits}"))
            }
            None => Number::from_normalised(text),
        })
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.index += 1;
        }
    }
}

/// True when the compact writer writes the character of `\u` escape
/// `code` as that escape with these four `hex` digits: a control character
/// without a short escape, in lowercase hex.
fn written_as_escape(code: u16, hex: &[u8]) -> bool {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let short = matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
    code < 0x20
        && !short
        && hex
            == [
                b'0',
                b'0',
                HEX[usize::from(code >> 4)],
                HEX[usize::from(code & 0xf)],
            ]
}
