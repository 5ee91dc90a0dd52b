//! Loading contexts from JSON arrays and JSONL (R1, R33, R34).

use crate::jsonl::{Extending, Loading, read_jsonl};
use crate::normalise::normalise;
use crate::{Context, Error, Message, Result, json_type};
use agent_core::json::Value;
use agent_core::{MAX_DEPTH, TooDeep};
use std::fmt;
use std::io::{BufRead, Read};

/// The two file forms of a context (R1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A JSON array of messages.
    Json,
    /// One message per line; blank lines ignored.
    Jsonl,
}

impl Format {
    /// The format of a file, reading at most its first 4 KiB when the
    /// extension does not decide (see [`Format::detect`]).
    ///
    /// # Errors
    /// The I/O error of opening or reading `path`, when its extension does not decide the
    /// format.
    pub fn detect_file(path: &std::path::Path) -> std::io::Result<Format> {
        let decided = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e == "json" || e == "jsonl");
        let mut head = Vec::new();
        if !decided {
            let mut file = std::fs::File::open(path)?;
            std::io::Read::by_ref(&mut file)
                .take(4096)
                .read_to_end(&mut head)?;
            if head.iter().all(u8::is_ascii_whitespace) {
                // All blank so far: the whole file decides.
                head = std::fs::read(path)?;
            }
        }
        Ok(Format::detect(Some(path), &head))
    }

    /// The format for a file (spec §10): `.json` is an array and `.jsonl` is
    /// JSONL; anything else (or stdin, `path` = `None`) is an array when its
    /// first non-blank byte is `[`, else JSONL.
    pub fn detect(path: Option<&std::path::Path>, bytes: &[u8]) -> Format {
        match path.and_then(|p| p.extension()).and_then(|e| e.to_str()) {
            Some("json") => Format::Json,
            Some("jsonl") => Format::Jsonl,
            _ => match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'[') => Format::Json,
                _ => Format::Jsonl,
            },
        }
    }
}

/// Something loading noticed but did not fail on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// The last JSONL line has no newline and does not parse: a torn append
    /// (R34). It was ignored.
    TornLastLine {
        /// 1-based line number.
        line: usize,
        /// Byte offset where the torn line starts (truncate here to repair).
        offset: usize,
    },
    /// A file kept beside a context file (a record of a batch in flight,
    /// a snapshot) that was not trusted — not a regular file, owned by
    /// another user, writable by others, or made for another file — and
    /// was ignored: the log decides alone.
    IgnoredSidecar {
        /// The ignored file.
        path: String,
        /// Why it was not trusted.
        reason: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::TornLastLine { line, offset } => write!(
                f,
                "line {line} (byte {offset}) is an incomplete last line, probably a torn append; ignored"
            ),
            Warning::IgnoredSidecar { path, reason } => {
                write!(f, "ignored {path}: {reason}")
            }
        }
    }
}

/// A loaded context and what loading warned about.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The context.
    pub context: Context,
    /// Warnings, in file order.
    pub warnings: Vec<Warning>,
    /// Where the input read ends: for JSONL, after the last complete line
    /// (a torn last line is not part of it) — where a store reads on from.
    pub end: Position,
    /// Top-level items read: JSON array elements, or JSONL message lines
    /// (one item may normalise to several messages, R1).
    pub items: usize,
    /// JSONL: the last line read lacks its newline (it parsed, so it is a
    /// message); the next append must start with one.
    pub unterminated: bool,
}

impl Context {
    /// Loads a context from bytes (R1). All-or-nothing: any bad message is
    /// an error naming its index (and line, for JSONL).
    ///
    /// # Errors
    /// [`Error::Json`] for input that is not JSON (for JSONL: a bad line other than a torn last
    /// one, R34); [`Error::TooDeep`] for nesting past R33's limit; [`Error::NotAnArray`] when
    /// `format` is [`Format::Json`] and the top level is not an array; [`Error::Message`] for a
    /// message R1 does not accept or whose `schema` is invalid (R25), naming its index (and
    /// line, for JSONL).
    pub fn load(bytes: &[u8], format: Format) -> Result<Loaded> {
        match format {
            Format::Json => load_json(bytes),
            Format::Jsonl => load_jsonl_sized(bytes, "<input>", bytes.len()),
        }
    }

    /// Reads and loads a file, detecting its format (see
    /// [`Format::detect_file`]). JSONL is streamed line by line, sized by
    /// the file's length (as [`Context::load_jsonl_reader_sized`]).
    ///
    /// # Errors
    /// As [`Context::load`], and [`Error::Io`] when `path` cannot be read.
    pub fn load_file(path: &std::path::Path) -> Result<Loaded> {
        let io = |source| Error::Io {
            path: path.display().to_string(),
            source,
        };
        match Format::detect_file(path).map_err(io)? {
            Format::Jsonl => {
                let file = std::fs::File::open(path).map_err(io)?;
                // The file's length sizes the load (a hint: a wrong one costs
                // time or room, never a different context).
                let size = file
                    .metadata()
                    .map_or(0, |meta| usize::try_from(meta.len()).unwrap_or(usize::MAX));
                load_jsonl_sized(
                    std::io::BufReader::with_capacity(1 << 16, file),
                    &path.display().to_string(),
                    size,
                )
            }
            Format::Json => load_json(&std::fs::read(path).map_err(io)?),
        }
    }

    /// Loads a JSON array of messages, ignoring nothing.
    ///
    /// # Errors
    /// As [`Context::load`] for [`Format::Json`]: [`Error::Json`], [`Error::TooDeep`],
    /// [`Error::NotAnArray`] or [`Error::Message`].
    pub fn from_json(text: &str) -> Result<Context> {
        load_json(text.as_bytes()).map(|loaded| loaded.context)
    }

    /// Builds a context from already-normalised messages, folding as loading
    /// does (type errors become diagnostics, R12). Fails only on an invalid
    /// schema (R25).
    ///
    /// # Errors
    /// [`Error::Message`] when a message's `schema` is not a valid JSON Schema (R25) or its
    /// fields nest past R33's limit, naming its index.
    pub fn from_messages(messages: Vec<Message>) -> Result<Context> {
        let mut context = Context::new();
        for (index, message) in messages.into_iter().enumerate() {
            context.push_loaded(message, index, None)?;
        }
        Ok(context)
    }

    fn push_loaded(&mut self, message: Message, index: usize, line: Option<usize>) -> Result<()> {
        let schema = self
            .compile_schema(&message)
            .map_err(|fault| Error::Message { index, line, fault })?;
        self.push_unchecked(message, schema)
            .map_err(|fault| Error::Message { index, line, fault })
    }

    /// Normalises `value` (R1) and adds its messages, compiling every
    /// schema first. `text` is the value's compact text when its line was
    /// exactly that ([`from_str_compact_within`]): a message holding the
    /// input's fields unchanged is stored as that text, not written again.
    /// `scratch` is reused from value to value.
    ///
    /// [`from_str_compact_within`]: agent_core::json::from_str_compact_within
    pub(crate) fn push_value(
        &mut self,
        value: Value,
        at: (usize, Option<usize>),
        text: Option<&str>,
        scratch: &mut Vec<Message>,
    ) -> Result<()> {
        let (index, line) = at;
        let at = |fault| Error::Message { index, line, fault };
        scratch.clear();
        let verbatim = normalise(value, scratch).map_err(at)?;
        if let ([message], true) = (scratch.as_slice(), verbatim) {
            let schema = self.compile_schema(message).map_err(at)?;
            return match scratch.pop() {
                Some(message) => self.push_text(message, schema, text).map_err(at),
                None => Ok(()),
            };
        }
        let schemas = scratch
            .iter()
            .map(|message| self.compile_schema(message).map_err(at))
            .collect::<Result<Vec<_>>>()?;
        scratch
            .drain(..)
            .zip(schemas)
            .try_for_each(|(message, schema)| self.push_unchecked(message, schema).map_err(at))
    }

    /// Normalises one input value (R1) and compiles each resulting
    /// message's schema (R25) into `out`, adding nothing yet. Extending a
    /// context checks a whole tail this way first, so a bad message leaves
    /// the context unchanged.
    pub(crate) fn check_value(
        &mut self,
        value: Value,
        index: usize,
        line: Option<usize>,
        out: &mut Vec<Checked>,
    ) -> Result<()> {
        let at = |fault| Error::Message { index, line, fault };
        let mut normalised = Vec::with_capacity(1);
        let _verbatim = normalise(value, &mut normalised).map_err(at)?;
        for message in normalised {
            let schema = self.compile_schema(&message).map_err(at)?;
            out.push((message, schema, index, line));
        }
        Ok(())
    }

    /// Adds messages checked by [`Context::check_value`].
    fn push_checked(&mut self, checked: Vec<Checked>) -> Result<()> {
        checked
            .into_iter()
            .try_for_each(|(message, schema, index, line)| {
                self.push_unchecked(message, schema)
                    .map_err(|fault| Error::Message { index, line, fault })
            })
    }
}

/// A message normalised and its schema compiled, with where it came from
/// (message index, file line) for errors.
pub(crate) type Checked = (
    Message,
    Option<std::sync::Arc<crate::schema::Compiled>>,
    usize,
    Option<usize>,
);

/// Hands each element of a JSON array context, with its index, to `sink`
/// as it is parsed, depth-checked (R33) before parsing: memory holds one
/// element at a time besides what `sink` keeps. Returns the number of
/// elements. Errors are those of parsing the whole array first: a JSON
/// error anywhere in `bytes` (or a top level that is not an array) wins
/// over an error of `sink`, which stops the calls to it.
fn parse_array(bytes: &[u8], sink: &mut dyn FnMut(Value, usize) -> Result<()>) -> Result<usize> {
    // The outer array is one level; each message may nest MAX_DEPTH more.
    if let Some(offset) = too_deep(bytes, MAX_DEPTH + 1) {
        return Err(Error::TooDeep {
            depth: TooDeep { limit: MAX_DEPTH },
            offset,
            line: None,
        });
    }
    let Some(ranges) = crate::elements::ranges(bytes) else {
        return Err(whole_array_fault(bytes));
    };
    let mut failed = None;
    for (index, &(start, end)) in ranges.iter().enumerate() {
        let Ok(item) = parse(&bytes[start..end], 0, MAX_DEPTH) else {
            return Err(whole_array_fault(bytes));
        };
        if failed.is_none()
            && let Err(error) = sink(item, index)
        {
            failed = Some(error);
        }
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(ranges.len()),
    }
}

/// The fault of a JSON array context that does not read element by
/// element, as the reader reports it for the whole text (line and column
/// of the file).
fn whole_array_fault(bytes: &[u8]) -> Error {
    match parse(bytes, 0, MAX_DEPTH + 1) {
        Err(error) => error,
        Ok(value) => Error::NotAnArray {
            found: json_type(&value),
        },
    }
}

fn load_json(bytes: &[u8]) -> Result<Loaded> {
    let mut context = Context::new();
    let mut compacted = 0;
    let mut scratch = Vec::with_capacity(1);
    let count = parse_array(bytes, &mut |item, index| {
        context.push_value(item, (index, None), None, &mut scratch)?;
        context.compact_behind(&mut compacted);
        Ok(())
    })?;
    context.compact();
    Ok(Loaded {
        context,
        warnings: Vec::new(),
        end: Position {
            line: bytes.iter().filter(|b| **b == b'\n').count(),
            offset: bytes.len(),
        },
        items: count,
        unterminated: false,
    })
}

/// JSONL, read line by line: memory holds one line at a time besides the
/// context being built (R34's torn last line is recognised at the end).
pub(crate) fn load_jsonl(reader: impl BufRead, source: &str) -> Result<Loaded> {
    load_jsonl_sized(reader, source, 0)
}

/// [`load_jsonl`] of input about `bytes` long: room for the layers of
/// that many bytes of one-write instances is made at once, instead of the
/// layer map growing (and rehashing) a doubling at a time. What is not
/// used is given back.
fn load_jsonl_sized(reader: impl BufRead, source: &str, bytes: usize) -> Result<Loaded> {
    load_jsonl_onto(Context::new(), reader, source, Start::default(), bytes)
}

/// Where a load onto a context starts: its place in the file, and the
/// message lines before it (errors number lines from there).
#[derive(Debug, Clone, Copy, Default)]
struct Start {
    at: Position,
    items: usize,
}

/// [`load_jsonl_sized`] onto the end of `context`, the JSONL read from
/// `reader` starting at `start` in its file.
fn load_jsonl_onto(
    mut context: Context,
    reader: impl BufRead,
    source: &str,
    start: Start,
    bytes: usize,
) -> Result<Loaded> {
    // At most the room of a few million layers on a hint alone: the table
    // writes its control bytes when made, and a planted length is not
    // lines read.
    context
        .layers
        .reserve((bytes / SHORTEST_INSTANCE_LINE).min(MOST_LAYERS_RESERVED));
    context.log.reserve(bytes);
    let mut loading = Loading::new(context, bytes);
    loading.items_before = start.items;
    let read = read_jsonl(reader, source, start.at, &mut loading)?;
    let mut context = loading.finish();
    context.compact();
    context.log.give_back_excess();
    if context.layers.len() < context.layers.capacity() / 4 {
        // Few layers for the input's size (a long log of few kinds): the
        // room made for many is given back.
        context.layers.shrink_to_fit();
    }
    Ok(Loaded {
        context,
        warnings: read.warnings,
        end: read.end,
        items: read.items,
        unterminated: read.unterminated,
    })
}

/// Where a piece of JSONL starts in its file: what came before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Position {
    /// Lines before it.
    pub line: usize,
    /// Bytes before it.
    pub offset: usize,
}

/// What [`Context::extend_jsonl`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extended {
    /// Where the complete lines read end: the position to read on from.
    /// A torn last line (R34) is not part of it.
    pub end: Position,
    /// Warnings, in file order.
    pub warnings: Vec<Warning>,
    /// True when the last line read lacks its newline (it parsed, so it
    /// is a message): the next append must start with one.
    pub unterminated: bool,
    /// Message lines read (a line may normalise to several messages, R1).
    pub items: usize,
}

impl Context {
    /// Loads a JSONL context streamed from `reader` (memory holds one line
    /// at a time besides the context); `source` names it in I/O errors.
    ///
    /// # Errors
    /// [`Error::Io`] when `reader` fails, naming `source`; [`Error::Json`] for a bad line other
    /// than a torn last one (R34); [`Error::TooDeep`] for a line nested past R33's limit;
    /// [`Error::Message`] for a message R1 does not accept or whose `schema` is invalid (R25),
    /// naming its index and line.
    pub fn load_jsonl_reader(reader: impl BufRead, source: &str) -> Result<Loaded> {
        load_jsonl(reader, source)
    }

    /// [`Context::load_jsonl_reader`] of input about `size_hint` bytes
    /// long (a file's length): room for the layers of that much input is
    /// made at once, instead of the layer map growing a doubling at a time
    /// while it loads; what is not used is given back. A wrong hint costs
    /// time or room, never a different context.
    ///
    /// # Errors
    /// As [`Context::load_jsonl_reader`].
    pub fn load_jsonl_reader_sized(
        reader: impl BufRead,
        source: &str,
        size_hint: usize,
    ) -> Result<Loaded> {
        load_jsonl_sized(reader, source, size_hint)
    }

    /// Loads JSONL streamed from `reader` onto the end of this context, as
    /// [`Context::load_jsonl_reader_sized`] loads a whole one: `reader`
    /// starts at `at` in its file, after `items` message lines (what a load
    /// of the lines before returned as its `end` and `items`), so errors
    /// name the lines of the file. What is returned counts only the lines
    /// read here. A check that needs the fold at a point of the log (a
    /// snapshot's views) loads to that point, looks, and loads on.
    ///
    /// # Errors
    /// As [`Context::load_jsonl_reader`]; the context is consumed either way.
    ///
    /// # Examples
    /// ```
    /// use agent_data::{Context, Format};
    /// let text = "{\"type\":\"state\",\"data\":{\"a\":1}}\n{\"type\":\"state\",\"data\":{\"b\":2}}\n";
    /// let cut = text.find('\n').map_or(0, |at| at + 1);
    /// let first = Context::load_jsonl_reader(&text.as_bytes()[..cut], "c.jsonl")?;
    /// let whole = first.context.load_jsonl_onto(&text.as_bytes()[cut..], "c.jsonl", first.end, first.items, 0)?;
    /// assert_eq!(whole.context.head(), Context::load(text.as_bytes(), Format::Jsonl)?.context.head());
    /// # Ok::<(), agent_data::Error>(())
    /// ```
    pub fn load_jsonl_onto(
        self,
        reader: impl BufRead,
        source: &str,
        at: Position,
        items: usize,
        size_hint: usize,
    ) -> Result<Loaded> {
        load_jsonl_onto(self, reader, source, Start { at, items }, size_hint)
    }

    /// Loads the elements of a JSON array context after the first `skip`
    /// onto the end of this context — what a store does when other writers
    /// appended to a JSON array file. All or nothing, like
    /// [`Context::extend_jsonl`]. Returns the number of elements in `bytes`.
    ///
    /// # Errors
    /// As [`Context::load`] for [`Format::Json`], over the whole of `bytes` (a JSON error
    /// anywhere wins); [`Error::Message`] names the message's index in `bytes`. On error the
    /// context is unchanged.
    pub fn extend_json(&mut self, bytes: &[u8], skip: usize) -> Result<usize> {
        let mut checked = Vec::new();
        let count = parse_array(bytes, &mut |item, index| {
            if index < skip {
                return Ok(());
            }
            self.check_value(item, index, None, &mut checked)
        })?;
        self.push_checked(checked)?;
        Ok(count)
    }

    /// Loads JSONL `tail` — the part of a file after `at`, where this
    /// context's messages end — onto the end of the context: what a store
    /// does when other writers appended. All or nothing: a bad line is an
    /// error (naming its message index and file line) and the context is
    /// unchanged. A torn last line (R34) is ignored with a warning.
    ///
    /// # Errors
    /// [`Error::Json`] for a bad line other than a torn last one (R34); [`Error::TooDeep`] for
    /// a line nested past R33's limit; [`Error::Message`] for a message R1 does not accept or
    /// whose `schema` is invalid (R25), naming its index in the context and its file line. On
    /// error the context is unchanged.
    pub fn extend_jsonl(&mut self, tail: &[u8], at: Position) -> Result<Extended> {
        let mut checked = Vec::new();
        let base = self.len();
        let mut extending = Extending {
            context: self,
            base,
            checked: &mut checked,
        };
        let read = read_jsonl(tail, "<tail>", at, &mut extending)?;
        self.push_checked(checked)?;
        Ok(read)
    }
}

/// The length of a short JSONL line of a one-write instance, with its
/// newline (`{"type":"data","kind":"item","data":{"n":1},"_instance":"i1"}`
/// is 62): loading `n` bytes makes room for `n` / this many layers at once.
const SHORTEST_INSTANCE_LINE: usize = 64;

/// The most layers a size hint makes room for at once (about 4 MB of the
/// table's control bytes written); a larger input grows the map as it
/// reads.
const MOST_LAYERS_RESERVED: usize = 1 << 22;

/// Parses one JSON document at most `limit` deep (on failure `too_deep`
/// places a depth fault); errors report lines shifted by `first_line`.
fn parse(bytes: &[u8], first_line: usize, limit: usize) -> Result<Value> {
    parse_compact(bytes, first_line, limit).map(|(value, _)| value)
}

/// [`parse`], and whether `bytes` are the value's compact text.
pub(crate) fn parse_compact(
    bytes: &[u8],
    first_line: usize,
    limit: usize,
) -> Result<(Value, bool)> {
    let text = std::str::from_utf8(bytes).map_err(|e| not_utf8(bytes, e, first_line))?;
    agent_core::json::from_str_compact_within(text, limit).map_err(|e| Error::Json {
        line: e.line() + first_line,
        column: e.column(),
        reason: e.to_string(),
    })
}

/// Bytes that are not UTF-8, reported where serde_json's reader did.
fn not_utf8(bytes: &[u8], error: std::str::Utf8Error, first_line: usize) -> Error {
    let before = &bytes[..error.valid_up_to()];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let column = before.len()
        - before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    Error::Json {
        line: line + first_line,
        column,
        reason: format!("invalid unicode code point at line {line} column {column}"),
    }
}

/// Offset of the first `[` or `{` nested deeper than `limit`, outside strings.
pub(crate) fn too_deep(bytes: &[u8], limit: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}
