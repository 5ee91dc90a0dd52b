//! Snapshots: a context's folded state at a known length, so a store can
//! open a long context by reading the snapshot and the messages after it
//! instead of folding the whole log again (D37: snapshots; D48: snapshot holds once).
//!
//! A snapshot is a cache, never a replacement for the log. It is one line
//! of JSON, the *header*, followed by the *held* messages, one per line as
//! the log holds them or packed (`lines.rs`, D87: packed snapshot lines):
//!
//! - the header holds what reads and appends need of the global layers —
//!   each one's view, skipped writes (R12), newest schema and description
//!   (R24) and its position among the layers — and which messages follow
//!   it, as runs of indexes;
//! - the held messages are those of instance layers, whose writes are
//!   folded again whenever the global view under them changes (R5,
//!   decision D4). Everything else about an instance layer (its identity,
//!   its place in the instance list, its schema and description, its view)
//!   is read from them: a message body is never written twice, and a
//!   snapshot of a context of many instances is smaller than their
//!   messages when their lines pack (D87: packed snapshot lines), as an instance write's
//!   normalised line does; about their size otherwise.
//!
//! Global layers' messages, text messages and opaque messages are not in
//! it: a context opened from a snapshot holds them only from the snapshot
//! on ([`Context::is_complete`]). The store that writes one adds an
//! *anchor*, its own record of where in the log the snapshot was taken,
//! kept here verbatim.

pub(crate) mod lines;

use crate::identity::Identity;
use crate::layer::Layer;
use crate::load::too_deep;
use crate::log::Log;
use crate::{Context, Diagnostic, Digest, Error, Result};
use agent_core::json::{self, Map, Value};
use agent_core::{DisplayPath, Instance, Kind, MAX_DEPTH, Path};
use serde::ser::{Error as _, SerializeSeq};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::io::Write;

/// What the first field of every snapshot says.
const FORMAT: &str = "agentctx-snapshot";

/// The version of the layout below; another is refused (and the store
/// reads the whole log instead). Version 3 differs only in holding no
/// packed line (D87: packed snapshot lines), so it is read too.
const VERSION: u32 = 4;

/// Levels the header adds around a view: the object, `globals`, the layer.
const WRAPPING: usize = 3;

/// The header as [`Context::from_snapshot`] reads it.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
    /// The store's record of where the snapshot was taken.
    #[serde(skip)]
    anchor: Value,
    /// The context's length.
    messages: usize,
    /// The chain's digest after the last message summarised: a tail read
    /// after the snapshot continues the chain from it.
    head: Digest,
    /// How many layers the context has, global and instance.
    layers: usize,
    /// The global layers, by position.
    #[serde(skip)]
    globals: Vec<GlobalState>,
    /// The indexes of the held messages that follow the header, as
    /// ascending runs `[first, count]`.
    held: Vec<(usize, usize)>,
}

#[derive(Deserialize)]
struct GlobalState {
    /// The layer's position among all layers (order of first message).
    at: usize,
    kind: String,
    /// Messages of the layer, none of them held.
    summarised: usize,
    /// The fold of the layer's writes; absent when it has none (a `null`
    /// here is a view that is null).
    #[serde(skip)]
    view: Option<Value>,
    #[serde(skip)]
    schema: Option<Value>,
    #[serde(default)]
    description: Option<String>,
    /// Skipped writes (R12): `[index, path, reason]`.
    #[serde(default)]
    skipped: Vec<(usize, String, String)>,
}

/// What restoring reads of a held message: its identity, schema and
/// description. The rest (its write) is folded when a read needs it.
#[derive(Deserialize)]
struct HeldFields<'a> {
    #[serde(rename = "type", borrow)]
    type_: Cow<'a, str>,
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(rename = "_instance", default, borrow)]
    instance: Option<Cow<'a, str>>,
    #[serde(skip)]
    schema: Option<Value>,
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
}

/// The header as [`Context::snapshot`] writes it, borrowing.
#[derive(Serialize)]
struct HeaderOut<'a> {
    format: &'a str,
    version: u32,
    anchor: &'a Value,
    messages: usize,
    head: Digest,
    layers: usize,
    globals: Globals<'a>,
    held: &'a [(usize, usize)],
}

/// The context's global layers, each a [`GlobalState`] as [`GlobalOut`].
struct Globals<'a>(&'a Context);

impl Serialize for Globals<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let context = self.0;
        let mut seq = serializer.serialize_seq(None)?;
        for (at, (identity, layer)) in context.layers.iter().enumerate() {
            if identity.instance.is_some() {
                continue;
            }
            let skipped = layer
                .diagnostics()
                .iter()
                .map(|d| match &d.error {
                    agent_core::Error::Type { at, reason } => {
                        Ok((d.index, at.0.to_string(), reason.as_str()))
                    }
                    other => Err(S::Error::custom(format!(
                        "a skipped write that is not a type error: {other}"
                    ))),
                })
                .collect::<std::result::Result<_, _>>()?;
            // A dropped view is folded again for this, not kept (D40: short layers refolded).
            let view = match layer.view_once(&context.log) {
                Cow::Borrowed(view) => view.as_ref().map(Cow::Borrowed),
                Cow::Owned(view) => view.map(Cow::Owned),
            };
            seq.serialize_element(&GlobalOut {
                at,
                kind: identity.kind.as_str(),
                summarised: layer.len(),
                view,
                schema: layer.schema().map(|s| s.schema()),
                description: layer.description(),
                skipped,
            })?;
        }
        seq.end()
    }
}

/// A [`GlobalState`] as written, borrowing.
#[derive(Serialize)]
struct GlobalOut<'a> {
    at: usize,
    kind: &'a str,
    summarised: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    view: Option<Cow<'a, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<(usize, String, &'a str)>,
}

impl Context {
    /// True when a snapshot would spare an open at least half the log: at
    /// least half the messages are global writes, text or opaque, which a
    /// snapshot replaces by the views. Instance layers' messages are held
    /// in it as they are and folded again on restore, so for a context of
    /// mostly instance writes a snapshot is about as costly to read as the
    /// log and only costs its writing (D106: snapshots that pay). Stores
    /// write one when due only when this holds.
    ///
    /// ```
    /// use agent_data::Context;
    ///
    /// let folded = Context::from_json(r#"[{"type":"state","n":1},{"type":"state","n":2}]"#)?;
    /// assert!(folded.snapshot_pays());
    /// let instances = Context::from_json(
    ///     r#"[{"type":"state","n":1,"_instance":"a"},{"type":"state","n":2,"_instance":"b"}]"#,
    /// )?;
    /// assert!(!instances.snapshot_pays());
    /// # Ok::<(), agent_data::Error>(())
    /// ```
    pub fn snapshot_pays(&self) -> bool {
        let folded = self.len().saturating_sub(self.instance_writes);
        folded.saturating_mul(2) >= self.len()
    }

    /// The context's folded state as a snapshot, with the store's `anchor`
    /// kept verbatim; [`Context::from_snapshot`] reads it back. Everything
    /// but text, opaque and global-layer messages is in it.
    ///
    /// # Errors
    /// [`Error::Snapshot`] when an instance layer's message is not held (the context was opened
    /// from a snapshot that did not keep it) or a global layer records a skipped write that is
    /// not a type error.
    pub fn snapshot(&self, anchor: &Value) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.snapshot_to(anchor, &mut out)?;
        Ok(out)
    }

    /// [`Context::snapshot`] written to `out` as it is produced, borrowing
    /// from the context: a snapshot is never held whole in memory. An
    /// error of `out` is an [`Error::Snapshot`] naming it.
    ///
    /// # Errors
    /// [`Error::Snapshot`] as [`Context::snapshot`], and when writing to `out` fails.
    pub fn snapshot_to(&self, anchor: &Value, out: &mut dyn Write) -> Result<()> {
        let held = self.held_runs()?;
        let header = HeaderOut {
            format: FORMAT,
            version: VERSION,
            anchor,
            messages: self.len(),
            head: self.head(),
            layers: self.layers.len(),
            globals: Globals(self),
            held: &held,
        };
        let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
        serde_json::to_writer(&mut out, &header).map_err(|e| invalid(e.to_string()))?;
        let write = |e: std::io::Error| invalid(format!("cannot write it: {e}"));
        out.write_all(b"\n").map_err(write)?;
        let mut packed = Vec::new();
        for (index, layer) in self.log.held() {
            if self.is_instance_layer(layer) {
                packed.clear();
                crate::snapshot::lines::pack(self.log.json(index).unwrap_or_default(), &mut packed);
                packed.push(b'\n');
                out.write_all(&packed).map_err(write)?;
            }
        }
        out.flush().map_err(write)
    }

    /// True when `layer` is the position of an instance layer.
    fn is_instance_layer(&self, layer: Option<usize>) -> bool {
        layer
            .and_then(|at| self.layers.get_index(at))
            .is_some_and(|(id, _)| id.instance.is_some())
    }

    /// The indexes of instance layers' messages, as runs; an error when
    /// one is not held (the context was opened from a snapshot that did
    /// not keep it, which [`Context::snapshot`] never writes).
    fn held_runs(&self) -> Result<Vec<(usize, usize)>> {
        for (identity, layer) in &self.layers {
            if identity.instance.is_some()
                && let Some(index) = layer
                    .messages()
                    .iter()
                    .find(|&&i| self.log.json(i).is_none())
            {
                return Err(invalid(format!(
                    "message {index} of ¶{identity} is not held"
                )));
            }
        }
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (index, layer) in self.log.held() {
            if !self.is_instance_layer(layer) {
                continue;
            }
            match runs.last_mut() {
                Some((first, count)) if *first + *count == index => *count += 1,
                _ => runs.push((index, 1)),
            }
        }
        Ok(runs)
    }

    /// Reads a snapshot written by [`Context::snapshot`]: the context it
    /// summarises (holding only the messages it kept) and the store's
    /// anchor. A damaged snapshot, or one of another version, is an
    /// [`Error::Snapshot`].
    ///
    /// # Errors
    /// [`Error::Snapshot`] when `bytes` has no header line, the header is not JSON, nests too
    /// deep or is of another format or version, the header and the held messages disagree,
    /// or a held line starts as a packed one (D87: packed snapshot lines) and is not.
    pub fn from_snapshot(bytes: &[u8]) -> Result<(Context, Value)> {
        let split = header_end(bytes)?;
        let (header, held) = bytes.split_at(split);
        restore_read(read_header(header)?, &mut &held[..], held.len())
    }

    /// [`Context::from_snapshot`] reading the snapshot from `reader` to its
    /// end: each held line goes into the log's buffer as it is read
    /// (unpacked, D87: packed snapshot lines), so opening holds the snapshot's lines once and no
    /// whole copy of the snapshot. `size` is what the snapshot's length is
    /// thought to be, header included (it sizes the buffer; 0 if not
    /// known).
    ///
    /// # Errors
    /// [`Error::Snapshot`] as [`Context::from_snapshot`], and when `reader`
    /// fails.
    pub fn from_snapshot_reader(
        reader: &mut dyn std::io::BufRead,
        size: usize,
    ) -> Result<(Context, Value)> {
        let failed = |e: std::io::Error| invalid(format!("cannot read it: {e}"));
        let mut header = Vec::new();
        reader.read_until(b'\n', &mut header).map_err(failed)?;
        if header.last() != Some(&b'\n') {
            return Err(invalid("EOF while parsing its header".to_owned()));
        }
        // The held lines are what follows the header.
        let held = size.saturating_sub(header.len());
        restore_read(read_header(&header)?, reader, held)
    }

    /// [`Context::from_snapshot`] taking the snapshot's bytes: held
    /// messages none of which is packed stay where they are and become the
    /// log; packed ones are unpacked into a buffer of their own.
    ///
    /// # Errors
    /// [`Error::Snapshot`] as [`Context::from_snapshot`].
    pub fn from_snapshot_bytes(mut bytes: Vec<u8>) -> Result<(Context, Value)> {
        let split = header_end(&bytes)?;
        let header = read_header(&bytes[..split])?;
        bytes.drain(..split);
        if crate::snapshot::lines::any_packed(&bytes) {
            let held = std::mem::take(&mut bytes);
            return restore_read(header, &mut &held[..], held.len());
        }
        restore(header, bytes, None)
    }
}

/// Where the header ends: after its newline.
fn header_end(bytes: &[u8]) -> Result<usize> {
    memchr::memchr(b'\n', bytes)
        .map(|at| at + 1)
        .ok_or_else(|| invalid("EOF while parsing its header".to_owned()))
}

/// Parses and checks the header line.
fn read_header(bytes: &[u8]) -> Result<Header> {
    // Views nest at most as deep as messages do.
    if let Some(offset) = too_deep(bytes, MAX_DEPTH + WRAPPING) {
        return Err(invalid(format!("nested too deep at byte {offset}")));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| invalid(e.to_string()))?;
    let value =
        json::from_str_within(text, MAX_DEPTH + WRAPPING).map_err(|e| invalid(e.to_string()))?;
    // Values are taken out as they are (moved, every number's text kept);
    // serde reads only the header's own fields.
    let mut fields = object(value, "its header")?;
    let anchor = fields.remove("anchor");
    let globals = fields.remove("globals");
    let mut header: Header =
        json::from_value(Value::Object(fields)).map_err(|e| invalid(e.to_string()))?;
    header.anchor = anchor.ok_or_else(|| invalid("missing field `anchor`".to_owned()))?;
    header.globals = match globals {
        Some(Value::Array(items)) => items.into_iter().map(global_state).collect::<Result<_>>()?,
        Some(_) => return Err(invalid("`globals` is not an array".to_owned())),
        None => return Err(invalid("missing field `globals`".to_owned())),
    };
    if header.format != FORMAT || !(3..=VERSION).contains(&header.version) {
        return Err(invalid(format!(
            "{} version {} (this build reads {FORMAT} versions 3 to {VERSION})",
            header.format, header.version
        )));
    }
    Ok(header)
}

/// [`restore`] from held lines read from `reader` to its end, unpacked
/// into the log's buffer as they are read (`size`: about how many bytes
/// they take, to size it).
fn restore_read(
    header: Header,
    reader: &mut dyn std::io::BufRead,
    size: usize,
) -> Result<(Context, Value)> {
    // Packed lines grow by about half again once unpacked. Only a hint: a
    // length no allocation can hold (a planted sparse file) leaves the
    // buffer to grow as lines arrive.
    let mut held = Vec::new();
    let _ = held.try_reserve(size.saturating_add(size / 2));
    let bad = crate::snapshot::lines::unpack(reader, &mut held)
        .map_err(|e| invalid(format!("cannot read it: {e}")))?;
    restore(header, held, bad)
}

/// Builds the context a snapshot describes from its header and its held
/// messages (`held`, JSONL), checking that they are consistent: runs
/// ascending within the length, as many lines as they count, each line an
/// instance layer's data message, layers where the header puts them.
/// `bad`: the first held line that looked packed and was not (D87: packed snapshot lines).
fn restore(header: Header, held: Vec<u8>, bad: Option<usize>) -> Result<(Context, Value)> {
    let length = header.messages;
    let lines = memchr::memchr_iter(b'\n', &held).count();
    let mut indexes = Vec::with_capacity(lines);
    for &(first, count) in &header.held {
        let end = first.checked_add(count).filter(|&end| end <= length);
        let after = indexes.last().is_none_or(|&last| last < first);
        let (Some(end), true) = (end, after) else {
            return Err(invalid(format!(
                "held messages {first}+{count} out of order or past its length"
            )));
        };
        if indexes.len() + count > lines {
            return Err(invalid(format!(
                "it lists more held messages than the {lines} it holds"
            )));
        }
        indexes.extend(first..end);
    }
    if indexes.len() != lines {
        return Err(invalid(format!(
            "it lists {} held messages and holds {lines}",
            indexes.len()
        )));
    }
    // Past the last index is a line with no newline: the log refuses it
    // below, as it did any such line.
    if let Some(&index) = bad.and_then(|at| indexes.get(at)) {
        return Err(invalid(format!("held message {index}: not a packed line")));
    }
    let mut context = Context::new();
    // Room for the layers the header counts, made once; no more than the
    // held lines and global layers can make, whatever the header says.
    context.layers.reserve(
        header
            .layers
            .min(lines.saturating_add(header.globals.len())),
    );
    let mut globals = header.globals.into_iter().peekable();
    let mut positions = Vec::with_capacity(lines);
    let mut object = agent_core::json::CompactObject::new();
    let mut start = 0;
    for &index in &indexes {
        let end = memchr::memchr(b'\n', &held[start..]).map_or(held.len(), |at| start + at);
        let line = held.get(start..end).unwrap_or_default();
        start = end + 1;
        let at = |reason: String| invalid(format!("held message {index}: {reason}"));
        let (kind, instance, schema, description) =
            match held_identity(line, &mut object, &mut context) {
                Some((kind, instance)) => (kind, instance, None, None),
                None => {
                    let fields = read_held(line).map_err(at)?;
                    let kind = match fields.kind {
                        Some(kind) => {
                            Kind::new(kind.into_owned()).map_err(|e| at(e.to_string()))?
                        }
                        None => Kind::data(),
                    };
                    let instance = Instance::new(
                        fields
                            .instance
                            .ok_or_else(|| at("not an instance layer's".to_owned()))?
                            .into_owned(),
                    )
                    .map_err(|e| at(e.to_string()))?;
                    let schema = fields
                        .schema
                        .map(|s| context.schemas.get(&s))
                        .transpose()
                        .map_err(|e| at(e.to_string()))?;
                    (
                        kind,
                        instance,
                        schema,
                        fields.description.map(Cow::into_owned),
                    )
                }
            };
        let position = match context.find_layer(&kind, Some(&instance)) {
            (_, Some(position)) => position,
            (hash, None) => {
                while globals.peek().is_some_and(|g| g.at == context.layers.len()) {
                    if let Some(global) = globals.next() {
                        insert_global(&mut context, global)?;
                    }
                }
                context.add_layer(&kind, Some(&instance), Layer::default(), hash)
            }
        };
        if let Some((_, layer)) = context.layers.get_index_mut(position) {
            layer.hold(index, schema, description);
        }
        positions.push(position);
    }
    for global in globals {
        insert_global(&mut context, global)?;
    }
    if context.layers.len() != header.layers {
        return Err(invalid(format!(
            "it lists {} layers and describes {}",
            header.layers,
            context.layers.len()
        )));
    }
    let counted = context
        .layers
        .values()
        .fold(0usize, |sum, layer| sum.saturating_add(layer.len()));
    if counted > length {
        return Err(invalid(format!(
            "its layers hold {counted} messages, more than the {length} it summarises"
        )));
    }
    context.instance_writes = indexes.len();
    context.log = Log::restored(length, header.head, held, indexes, &positions)
        .ok_or_else(|| invalid("its held messages are not JSONL text".to_owned()))?;
    Ok((context, header.anchor))
}

/// The identity of a held message whose line is the compact text of a
/// data message without a schema or description, found without reading
/// its values (as loading finds a first instance write's, D81: unread instance lines); `None`
/// for any other line, which [`read_held`] reads (and reports on).
fn held_identity(
    line: &[u8],
    object: &mut agent_core::json::CompactObject,
    context: &mut Context,
) -> Option<(Kind, Instance)> {
    let text = std::str::from_utf8(line).ok()?;
    if !object.read(text, MAX_DEPTH) {
        return None;
    }
    let (kind, instance) =
        crate::unread::data_identity(text, object, |key| !matches!(key, "schema" | "description"))?;
    context.identity_named(kind, instance)
}

/// The identity, schema and description of a held message's line.
fn read_held(line: &[u8]) -> std::result::Result<HeldFields<'_>, String> {
    if let Some(offset) = too_deep(line, MAX_DEPTH) {
        return Err(format!("nested too deep at byte {offset}"));
    }
    // Depth was bounded by `too_deep` first.
    let text = std::str::from_utf8(line).map_err(|e| e.to_string())?;
    let value = json::from_str_within(text, MAX_DEPTH).map_err(|e| e.to_string())?;
    let Value::Object(mut members) = value else {
        return Err("not an object".to_owned());
    };
    let schema = members.remove("schema");
    let mut fields: HeldFields<'_> =
        json::from_value(Value::Object(members)).map_err(|e| e.to_string())?;
    fields.schema = schema;
    if fields.type_ != "data" {
        return Err(format!("a {} message, not a data message", fields.type_));
    }
    Ok(fields)
}

/// Adds a global layer as the header describes it, at the position it
/// names, which must be the next.
fn insert_global(context: &mut Context, state: GlobalState) -> Result<()> {
    let identity = Identity::global(Kind::new(state.kind).map_err(|e| invalid(e.to_string()))?);
    if state.at != context.layers.len() {
        return Err(invalid(format!(
            "layer ¶{identity} is at position {}, not {}",
            state.at,
            context.layers.len()
        )));
    }
    if state.summarised == 0 {
        return Err(invalid(format!("layer ¶{identity} has no message")));
    }
    let schema = state
        .schema
        .map(|s| context.schemas.get(&s))
        .transpose()
        .map_err(|e| invalid(format!("¶{identity}: {e}")))?;
    let diagnostics = state
        .skipped
        .into_iter()
        .map(|(index, at, reason)| {
            let at = if at.is_empty() {
                Path::root()
            } else {
                Path::parse(&at).map_err(|e| invalid(e.to_string()))?
            };
            Ok(Diagnostic {
                index,
                identity: identity.clone(),
                error: agent_core::Error::Type {
                    at: DisplayPath(at),
                    reason,
                },
            })
        })
        .collect::<Result<_>>()?;
    let layer = Layer::restored(
        state.summarised,
        Vec::new(),
        state.view,
        diagnostics,
        schema,
        state.description,
    );
    let (_, added) = context.insert_layer(&identity.kind, None, layer);
    if !added {
        return Err(invalid(format!("layer ¶{identity} listed twice")));
    }
    Ok(())
}

/// The members of `value`, an object.
fn object(value: Value, what: &str) -> Result<Map> {
    match value {
        Value::Object(members) => Ok(members),
        other => Err(invalid(format!(
            "{what} is {}, not an object",
            agent_core::json_type(&other)
        ))),
    }
}

/// One global layer of the header: its view and schema moved out as they
/// are (a `null` is a view that is null; a missing one, no view), the rest
/// read by serde.
fn global_state(value: Value) -> Result<GlobalState> {
    let mut members = object(value, "a global layer")?;
    let view = members.remove("view");
    let schema = members.remove("schema");
    let mut state: GlobalState =
        json::from_value(Value::Object(members)).map_err(|e| invalid(e.to_string()))?;
    state.view = view;
    state.schema = schema;
    Ok(state)
}

fn invalid(reason: String) -> Error {
    Error::Snapshot { reason }
}
