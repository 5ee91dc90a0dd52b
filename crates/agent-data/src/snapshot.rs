//! Snapshots: a context's folded state at a known length, so a store can
//! open a long context by reading the snapshot and the messages after it
//! instead of folding the whole log again (decision D37).
//!
//! A snapshot is a cache, never a replacement for the log: it holds what
//! reads and appends need — every layer's view, skipped writes (R12),
//! newest schema and description (R24), the instances in order (R2) — and
//! the messages of instance layers, whose writes are folded again whenever
//! the global view under them changes (R5, decision D4). Global layers'
//! messages, text messages and opaque messages are not in it: a context
//! opened from a snapshot holds them only from the snapshot on
//! ([`Context::is_complete`]). The store that writes one adds an *anchor*,
//! its own record of where in the log the snapshot was taken, kept here
//! verbatim.

use crate::identity::Identity;
use crate::layer::Layer;
use crate::load::too_deep;
use crate::log::Log;
use crate::{Context, Diagnostic, Digest, Error, Result};
use agent_core::{DisplayPath, Instance, Kind, MAX_DEPTH, Path};
use serde::ser::{Error as _, SerializeSeq};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// What the first field of every snapshot says.
const FORMAT: &str = "agentctx-snapshot";

/// The version of the layout below; another is refused (and the store
/// reads the whole log instead).
const VERSION: u32 = 2;

/// Levels a snapshot adds around a view: the object, `layers`, the layer.
const WRAPPING: usize = 3;

/// A snapshot as [`Context::from_snapshot`] reads it.
#[derive(Deserialize)]
struct Snapshot<'a> {
    format: &'a str,
    version: u32,
    /// The store's record of where the snapshot was taken.
    anchor: Value,
    /// The context's length.
    messages: usize,
    /// The chain's digest after the last message summarised: a tail read
    /// after the snapshot continues the chain from it.
    head: Digest,
    /// Instance ids in order of first appearance.
    #[serde(borrow)]
    instances: Vec<Cow<'a, str>>,
    #[serde(borrow)]
    layers: Vec<LayerState<'a>>,
    /// Held messages, ascending by index: `[index, layer position, message]`.
    #[serde(borrow)]
    held: Vec<(usize, usize, &'a RawValue)>,
}

#[derive(Deserialize)]
struct LayerState<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    instance: Option<Cow<'a, str>>,
    /// Messages of the layer that are not held.
    summarised: usize,
    /// The fold of the layer's own writes; absent when it has none (a
    /// `null` here is a view that is null).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    view: Option<Value>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    schema: Option<Value>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    description: Option<Cow<'a, str>>,
    /// Skipped writes (R12): `[index, path, reason]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<(usize, String, String)>,
}

/// A [`Snapshot`] as [`Context::snapshot`] writes it, borrowing.
#[derive(Serialize)]
struct Written<'a> {
    format: &'a str,
    version: u32,
    anchor: &'a Value,
    messages: usize,
    head: Digest,
    instances: Instances<'a>,
    layers: Layers<'a>,
    held: Held<'a>,
}

/// The context's instance ids, in order.
struct Instances<'a>(&'a Context);

impl Serialize for Instances<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.instances().map(Instance::as_str))
    }
}

/// The context's layers, each a [`LayerState`] as [`LayerOut`].
struct Layers<'a>(&'a Context);

impl Serialize for Layers<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let context = self.0;
        let mut seq = serializer.serialize_seq(Some(context.layers.len()))?;
        for (identity, layer) in &context.layers {
            let summarised = match identity.instance {
                None => layer.len(),
                Some(_) => layer.summarised(),
            };
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
            // A dropped view is folded again for this, not kept (D40).
            let view = match layer.view_once(&context.log) {
                Cow::Borrowed(view) => view.as_ref().map(Cow::Borrowed),
                Cow::Owned(view) => view.map(Cow::Owned),
            };
            seq.serialize_element(&LayerOut {
                kind: identity.kind.as_str(),
                instance: identity.instance.as_ref().map(Instance::as_str),
                summarised,
                view,
                schema: layer.schema().map(|s| s.schema()),
                description: layer.description(),
                skipped,
            })?;
        }
        seq.end()
    }
}

/// A [`LayerState`] as written, borrowing.
#[derive(Serialize)]
struct LayerOut<'a> {
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instance: Option<&'a str>,
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

/// The messages of instance layers, ascending, each written as `[index,
/// layer position, message]` with the message's text verbatim.
struct Held<'a>(&'a Context);

impl Serialize for Held<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let context = self.0;
        let mut seq = serializer.serialize_seq(None)?;
        for (index, layer) in context.log.held() {
            let Some(position) = layer else { continue };
            let instance = context
                .layers
                .get_index(position)
                .map(|(id, _)| &id.instance);
            if let Some(Some(_)) = instance {
                let line = context.log.json(index).unwrap_or_default();
                let message: &RawValue = serde_json::from_str(line).map_err(S::Error::custom)?;
                seq.serialize_element(&(index, position, message))?;
            }
        }
        seq.end()
    }
}

impl Context {
    /// The context's folded state as a snapshot (JSON text), with the
    /// store's `anchor` kept verbatim; [`Context::from_snapshot`] reads it
    /// back. Everything but text, opaque and global-layer messages is in it.
    pub fn snapshot(&self, anchor: &Value) -> Result<Vec<u8>> {
        // Written as it is serialised, borrowing from the context: a context
        // of many instances would otherwise be held a second time, as
        // copies of its views and messages.
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
        let snapshot = Written {
            format: FORMAT,
            version: VERSION,
            anchor,
            messages: self.len(),
            head: self.head(),
            instances: Instances(self),
            layers: Layers(self),
            held: Held(self),
        };
        serde_json::to_vec(&snapshot).map_err(|e| invalid(e.to_string()))
    }

    /// Reads a snapshot written by [`Context::snapshot`]: the context it
    /// summarises (holding only the messages it kept) and the store's
    /// anchor. A damaged snapshot, or one of another version, is an
    /// [`Error::Snapshot`].
    pub fn from_snapshot(bytes: &[u8]) -> Result<(Context, Value)> {
        // Views nest at most as deep as messages do.
        if let Some(offset) = too_deep(bytes, MAX_DEPTH + WRAPPING) {
            return Err(invalid(format!("nested too deep at byte {offset}")));
        }
        let mut de = serde_json::Deserializer::from_slice(bytes);
        de.disable_recursion_limit();
        let snapshot = Snapshot::deserialize(&mut de).map_err(|e| invalid(e.to_string()))?;
        de.end().map_err(|e| invalid(e.to_string()))?;
        if snapshot.format != FORMAT || snapshot.version != VERSION {
            return Err(invalid(format!(
                "{} version {} (this build reads {FORMAT} version {VERSION})",
                snapshot.format, snapshot.version
            )));
        }
        restore(snapshot)
    }
}

/// Builds the context a parsed snapshot describes, checking that it is
/// consistent (every count within the length, held messages in order).
fn restore(snapshot: Snapshot<'_>) -> Result<(Context, Value)> {
    let length = snapshot.messages;
    let mut context = Context {
        log: Log::after(length, snapshot.head),
        ..Context::default()
    };
    let mut held: Vec<Vec<usize>> = vec![Vec::new(); snapshot.layers.len()];
    for (index, position, message) in snapshot.held {
        let layer = held
            .get_mut(position)
            .ok_or_else(|| invalid(format!("message {index} names no layer")))?;
        if !context.log.keep(index, message.get(), Some(position)) {
            return Err(invalid(format!("held message {index} out of order")));
        }
        layer.push(index);
    }
    let mut counted = 0usize;
    for (state, messages) in snapshot.layers.into_iter().zip(held) {
        let identity = Identity {
            kind: Kind::new(state.kind.into_owned()).map_err(|e| invalid(e.to_string()))?,
            instance: state
                .instance
                .map(|x| Instance::new(x.into_owned()))
                .transpose()
                .map_err(|e| invalid(e.to_string()))?,
        };
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
            messages,
            state.view,
            diagnostics,
            schema,
            state.description.map(Cow::into_owned),
        );
        counted = counted.saturating_add(layer.len());
        let (_, added) = context.insert_layer(&identity.kind, identity.instance.as_ref(), layer);
        if !added {
            return Err(invalid(format!("layer ¶{identity} listed twice")));
        }
    }
    // The instance list is the layers' instances in order of first
    // appearance; the context finds it through them.
    let listed = snapshot.instances.iter().map(|x| x.as_ref());
    if !context.instances().map(Instance::as_str).eq(listed) {
        return Err(invalid(
            "its instances are not those of its layers in order".to_owned(),
        ));
    }
    if counted > length {
        return Err(invalid(format!(
            "its layers hold {counted} messages, more than the {length} it summarises"
        )));
    }
    Ok((context, snapshot.anchor))
}

/// A field that is there, even when it is `null` (serde reads a `null`
/// `Option` as `None`; a missing field is `None` through `default`).
fn present<'de, D: serde::Deserializer<'de>>(
    de: D,
) -> std::result::Result<Option<Value>, D::Error> {
    Value::deserialize(de).map(Some)
}

fn invalid(reason: String) -> Error {
    Error::Snapshot { reason }
}
