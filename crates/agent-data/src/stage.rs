//! Validating one instance's writes against a shared, unchanged context,
//! then committing them: the two halves of a parallel batch append.
//!
//! Writes for instance X read only global layers and X's own (R5) and
//! write only X's layers (R6), so writes for different instances can be
//! validated concurrently against `&Context`. Because the log is
//! append-only, the length of a layer is its version: `commit` checks that
//! every layer a validation read is still as long as it was, and refuses
//! (changing nothing) if not.

use crate::log::Line;
use crate::schema::Compiled;
use crate::{Context, Error, Identity, Message, MessageFault, Result};
use agent_core::{Instance, Kind, check_write, write};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// One committed item of staged writes: where its messages landed, and the
/// messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    /// Context indexes of the item's messages.
    pub range: Range<usize>,
    /// The messages, in order.
    pub messages: Vec<Message>,
}

/// One instance's writes, validated by [`Context::stage`], waiting for
/// [`Context::commit`].
#[derive(Debug)]
pub struct Staged {
    instance: Instance,
    /// Layers read during validation, with their lengths then.
    read: Vec<(Identity, usize)>,
    items: Vec<(usize, ItemOutcome)>,
}

type ItemOutcome = std::result::Result<Vec<Accepted>, (usize, Error)>;

/// A staged message with its schema, compiled, and its JSON line.
type Accepted = (Message, Option<Arc<Compiled>>, Line);

/// What validation works on: the layered view per kind and the schema the
/// staged writes themselves declared.
#[derive(Clone, Default)]
struct Scratch {
    views: HashMap<Kind, Option<Value>>,
    schemas: HashMap<Kind, Arc<Compiled>>,
}

impl Context {
    /// Validates items of writes for `instance` without changing the
    /// context. Each item (keyed by the caller, e.g. a call's position in a
    /// batch) is a group of data messages of that instance that must land
    /// together; items are validated in order, each against the views the
    /// accepted earlier ones leave (R13, R25). A refused item is reported
    /// by [`Context::commit`] and the rest go on.
    pub fn stage(&self, instance: &Instance, items: Vec<(usize, Vec<Message>)>) -> Staged {
        let mut scratch = Scratch::default();
        let mut read = Vec::new();
        let mut outcomes = Vec::with_capacity(items.len());
        for (key, messages) in items {
            // A refused single write leaves the scratch views as they were,
            // so only items of several writes need a copy to fall back to.
            let outcome = if messages.len() == 1 {
                self.stage_item(instance, messages, &mut scratch, &mut read)
            } else {
                let mut trial = scratch.clone();
                let outcome = self.stage_item(instance, messages, &mut trial, &mut read);
                if outcome.is_ok() {
                    scratch = trial;
                }
                outcome
            };
            outcomes.push((key, outcome));
        }
        Staged {
            instance: instance.clone(),
            read,
            items: outcomes,
        }
    }

    fn stage_item(
        &self,
        instance: &Instance,
        messages: Vec<Message>,
        scratch: &mut Scratch,
        read: &mut Vec<(Identity, usize)>,
    ) -> ItemOutcome {
        let mut accepted = Vec::with_capacity(messages.len());
        for (offset, message) in messages.into_iter().enumerate() {
            let fail = |error| Err((offset, error));
            // Serialised here, concurrently, so the commit only copies bytes;
            // this also enforces the depth limit before anything recursive.
            let line = match crate::log::serialise(message.fields()) {
                Ok(line) => line,
                Err(fault) => {
                    return fail(Error::Message {
                        index: offset,
                        line: None,
                        fault,
                    });
                }
            };
            let data = match &message {
                Message::Data(d) if d.instance() == Some(instance) => d,
                _ => {
                    let fault = MessageFault::WrongInstance {
                        expected: instance.to_string(),
                    };
                    return fail(Error::Message {
                        index: offset,
                        line: None,
                        fault,
                    });
                }
            };
            let own_schema = match data.schema() {
                Some(s) => match self
                    .schemas
                    .lookup(s)
                    .map_or_else(|| crate::Schema::compile(s).map(|s| s.0), Ok)
                {
                    Ok(compiled) => Some(compiled),
                    Err(fault) => {
                        return fail(Error::Message {
                            index: offset,
                            line: None,
                            fault,
                        });
                    }
                },
                None => None,
            };
            let kind = data.kind().clone();
            let identity = Identity {
                kind: kind.clone(),
                instance: Some(instance.clone()),
            };
            for id in [Identity::global(kind.clone()), identity.clone()] {
                if !read.iter().any(|(seen, _)| *seen == id) {
                    let len = self.layers.get(&id).map_or(0, |l| l.messages.len());
                    read.push((id, len));
                }
            }
            let view = scratch
                .views
                .entry(kind.clone())
                .or_insert_with(|| self.view(&kind, Some(instance)).cloned());
            let type_error = |source| Error::TypeError {
                index: offset,
                identity: identity.clone(),
                source,
            };
            if let Err(e) = check_write(
                view.as_ref(),
                data.destination(),
                data.method(),
                data.value(),
            ) {
                return fail(type_error(e));
            }
            let schema = own_schema
                .clone()
                .or_else(|| scratch.schemas.get(&kind).cloned())
                .or_else(|| self.compiled_schema(&kind, Some(instance)));
            // A refused write leaves `view` as it was: without a schema the
            // write cannot fail after `check_write`; with one, it is tried
            // on a copy first.
            let mut next = schema.as_ref().map(|_| view.clone());
            let target = next.as_mut().unwrap_or(view);
            if let Err(e) = write(
                target,
                data.destination(),
                data.method(),
                data.value().clone(),
            ) {
                return fail(type_error(e));
            }
            if let (Some(schema), Some(Some(next_view))) = (schema, next.as_ref()) {
                let violations = schema.violations(next_view, false);
                if !violations.is_empty() {
                    return fail(Error::Schema {
                        index: offset,
                        identity,
                        violations,
                    });
                }
            }
            if let Some(next) = next {
                *view = next;
            }
            if let Some(compiled) = &own_schema {
                scratch.schemas.insert(kind, Arc::clone(compiled));
            }
            accepted.push((message, own_schema, line));
        }
        Ok(accepted)
    }

    /// Appends staged writes, all items of all batches in the order of their
    /// keys, and returns each item's result by key: the range of its
    /// messages and the messages themselves (handed back, so the caller
    /// need not read them out of the context again), or why it was refused
    /// (with the index its message would have had, as if the items had been
    /// appended one by one).
    ///
    /// Fails with [`Error::Stale`], changing nothing, when a layer read
    /// during staging has grown since, or two batches stage the same instance.
    pub fn commit(&mut self, staged: Vec<Staged>) -> Result<Vec<(usize, Result<Committed>)>> {
        for (i, batch) in staged.iter().enumerate() {
            let fresh = batch
                .read
                .iter()
                .all(|(id, len)| self.layers.get(id).map_or(0, |l| l.messages.len()) == *len);
            let unique = staged[..i]
                .iter()
                .all(|other| other.instance != batch.instance);
            if !fresh || !unique {
                return Err(Error::Stale {
                    instance: batch.instance.to_string(),
                });
            }
        }
        let mut items: Vec<(usize, ItemOutcome)> =
            staged.into_iter().flat_map(|b| b.items).collect();
        items.sort_by_key(|(key, _)| *key);
        let mut results = Vec::with_capacity(items.len());
        for (key, outcome) in items {
            let start = self.len();
            match outcome {
                Ok(messages) => {
                    if let Some(x) = messages
                        .first()
                        .and_then(|(m, _, _)| m.as_data())
                        .and_then(|d| d.instance())
                    {
                        self.instances.insert(x.clone());
                    }
                    for (message, schema, line) in &messages {
                        let written = self.log.write_serialised(line);
                        self.push_written(Cow::Borrowed(message), schema.clone(), written);
                    }
                    let committed = Committed {
                        range: start..self.len(),
                        messages: messages.into_iter().map(|(m, _, _)| m).collect(),
                    };
                    results.push((key, Ok(committed)));
                }
                Err((offset, error)) => results.push((key, Err(error.at_index(start + offset)))),
            }
        }
        Ok(results)
    }
}
