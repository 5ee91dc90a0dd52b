//! [`CompactObject`]: an object's members found in its compact text
//! without building their values — what lets a loader decide what a line
//! is before paying for reading all of it.

use std::ops::Range;

/// Objects with more members than this are not scanned: finding a
/// repeated key compares each key with those before it.
const MAX_MEMBERS: usize = 32;

/// The members of a JSON object, each as its key and its value's text,
/// found by checking the object's compact text without building a value.
///
/// [`CompactObject::read`] accepts exactly the texts that
/// [`from_str_compact_within`](super::from_str_compact_within) reads as an
/// object and calls compact — no whitespace, every escape and number as
/// the writer spells it, no key twice in an object — except that it also
/// declines, rather than reads, an object of more than 32 members anywhere
/// in the text. Declining says nothing about the text: read it with the
/// reader, which builds the value and reports any fault. The buffers are
/// kept from text to text, so scanning many lines allocates once.
///
/// ```
/// use agent_json::CompactObject;
/// let text = r#"{"kind":"item","data":{"n":[1,"x\n"]}}"#;
/// let mut object = CompactObject::new();
/// assert!(object.read(text, 128));
/// let members: Vec<_> = object.members(text).collect();
/// assert_eq!(members, [("kind", r#""item""#), ("data", r#"{"n":[1,"x\n"]}"#)]);
/// assert!(!object.read(r#"{"kind": "item"}"#, 128)); // not compact
/// assert!(!object.read(r#"{"a":{"b":{}}}"#, 2)); // deeper than 2
/// ```
#[derive(Debug, Default, Clone)]
pub struct CompactObject {
    /// The top-level members: key (without its quotes) and value text.
    members: Vec<(Range<usize>, Range<usize>)>,
    /// Keys of the objects open inside a member's value, innermost last.
    keys: Vec<Range<usize>>,
    /// For each open container: where its keys start in `keys` (objects),
    /// or `None` (arrays).
    open: Vec<Option<usize>>,
}

impl CompactObject {
    /// Empty buffers.
    pub fn new() -> CompactObject {
        CompactObject::default()
    }

    /// True when `text` is an object's compact text, nested at most
    /// `limit` containers deep (the object counting as one), with at most
    /// 32 members in any object: then [`CompactObject::members`] lists
    /// its members. False for anything else, saying nothing more.
    pub fn read(&mut self, text: &str, limit: usize) -> bool {
        self.members.clear();
        self.keys.clear();
        self.open.clear();
        let mut scan = Scan {
            bytes: text.as_bytes(),
            at: 0,
        };
        if limit == 0 || !scan.eat(b'{') {
            return false;
        }
        if scan.eat(b'}') {
            return scan.at == text.len();
        }
        loop {
            let Some(key) = scan.key() else {
                return false;
            };
            let repeated = self.members.iter().any(|(k, _)| same_key(text, k, &key));
            if repeated || self.members.len() == MAX_MEMBERS {
                return false;
            }
            let start = scan.at;
            if !self.value(&mut scan, text, limit - 1) {
                return false;
            }
            self.members.push((key, start..scan.at));
            match scan.next() {
                Some(b',') => {}
                Some(b'}') => return scan.at == text.len(),
                _ => return false,
            }
        }
    }

    /// The members found by the last successful [`CompactObject::read`] of
    /// `text`, in order: each key (as written, without its quotes) and the
    /// text of its value.
    pub fn members<'t>(
        &self,
        text: &'t str,
    ) -> impl Iterator<Item = (&'t str, &'t str)> + use<'_, 't> {
        self.members.iter().map(move |(key, value)| {
            (
                text.get(key.clone()).unwrap_or_default(),
                text.get(value.clone()).unwrap_or_default(),
            )
        })
    }

    /// One whole value at `scan`, at most `limit` more containers deep.
    fn value(&mut self, scan: &mut Scan<'_>, text: &str, limit: usize) -> bool {
        loop {
            // A value starts here.
            match scan.peek() {
                Some(b'{') | Some(b'[') if self.open.len() >= limit => return false,
                Some(b'{') => {
                    scan.at += 1;
                    if !scan.eat(b'}') {
                        self.open.push(Some(self.keys.len()));
                        if !self.key(scan, text) {
                            return false;
                        }
                        continue;
                    }
                }
                Some(b'[') => {
                    scan.at += 1;
                    if !scan.eat(b']') {
                        self.open.push(None);
                        continue;
                    }
                }
                Some(_) => {
                    if !scan.scalar() {
                        return false;
                    }
                }
                None => return false,
            }
            // A value ended: close what it completes, or go on to the
            // next member or element.
            loop {
                match self.open.last().copied() {
                    None => return true,
                    Some(None) => match scan.next() {
                        Some(b',') => break,
                        Some(b']') => {}
                        _ => return false,
                    },
                    Some(Some(keys)) => match scan.next() {
                        Some(b',') if self.key(scan, text) => break,
                        Some(b'}') => self.keys.truncate(keys),
                        _ => return false,
                    },
                }
                self.open.pop();
            }
        }
    }

    /// A key of the innermost open object, and its `:`; false when it
    /// repeats one before it or the object has too many.
    fn key(&mut self, scan: &mut Scan<'_>, text: &str) -> bool {
        let Some(key) = scan.key() else {
            return false;
        };
        let from = match self.open.last() {
            Some(Some(from)) => *from,
            _ => return false,
        };
        let siblings = self.keys.get(from..).unwrap_or_default();
        if siblings.len() == MAX_MEMBERS || siblings.iter().any(|k| same_key(text, k, &key)) {
            return false;
        }
        self.keys.push(key);
        true
    }
}

/// True when the keys at `a` and `b` in `text` are the same text (their
/// lengths and first bytes compared first: most keys differ in one).
fn same_key(text: &str, a: &Range<usize>, b: &Range<usize>) -> bool {
    let bytes = text.as_bytes();
    a.len() == b.len()
        && bytes.get(a.start) == bytes.get(b.start)
        && bytes.get(a.clone()) == bytes.get(b.clone())
}

/// A position in the text being scanned.
struct Scan<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek();
        self.at += 1;
        byte
    }

    /// Reads `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        if next {
            self.at += 1;
        }
        next
    }

    /// A key at its `"` and the `:` after it: the key's text between its
    /// quotes.
    fn key(&mut self) -> Option<Range<usize>> {
        let start = self.at + 1;
        if !self.string() {
            return None;
        }
        let key = start..self.at - 1;
        self.eat(b':').then_some(key)
    }

    /// A string at its `"`, through its closing one, spelled as the
    /// writer spells it.
    fn string(&mut self) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        loop {
            match self.next() {
                Some(b'"') => return true,
                Some(b'\\') => {
                    if !self.escape() {
                        return false;
                    }
                }
                Some(byte) if byte < 0x20 => return false,
                Some(_) => {}
                None => return false,
            }
        }
    }

    /// An escape after its `\`, when the writer writes it: the two-letter
    /// ones, and `\u00XX` (lowercase) for a control character without one.
    fn escape(&mut self) -> bool {
        match self.next() {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => true,
            Some(b'u') => {
                let Some(&[b'0', b'0', high, low]) = self.bytes.get(self.at..self.at + 4) else {
                    return false;
                };
                self.at += 4;
                let digit = |b: u8| match b {
                    b'0'..=b'9' => Some(b - b'0'),
                    b'a'..=b'f' => Some(b - b'a' + 10),
                    _ => None,
                };
                match (digit(high), digit(low)) {
                    (Some(high), Some(low)) => {
                        let code = (high << 4) | low;
                        code < 0x20 && !matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// A literal, string or number, as the writer writes it.
    fn scalar(&mut self) -> bool {
        match self.peek() {
            Some(b'"') => self.string(),
            Some(b'n') => self.literal(b"null"),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let matches = self.bytes.get(self.at..self.at + word.len()) == Some(word);
        if matches {
            self.at += word.len();
        }
        matches
    }

    /// A number in JSON's grammar; an exponent only in the kept form (`e`
    /// and its sign).
    fn number(&mut self) -> bool {
        self.eat(b'-');
        match self.next() {
            Some(b'0') => {
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return false;
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return false,
        }
        if self.eat(b'.') {
            let before = self.at;
            self.digits();
            if self.at == before {
                return false;
            }
        }
        if self.eat(b'e') {
            if !(self.eat(b'+') || self.eat(b'-')) {
                return false;
            }
            let before = self.at;
            self.digits();
            if self.at == before {
                return false;
            }
        }
        // `E` is read, but not the writer's spelling.
        !matches!(self.peek(), Some(b'E'))
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }
}
