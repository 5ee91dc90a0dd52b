//! Validating one instance's writes against a shared, unchanged context,
//! then committing them: the two halves of a parallel batch append.
//!
//! Writes for instance X read only global layers and X's own (R5) and
//! write only X's layers (R6), so writes for different instances can be
//! validated concurrently against `&Context`. Because the log is
//! append-only, the length of a layer is its version: `commit` checks that
//! every layer a validation read is still as long as it was, and refuses
//! (changing nothing) if not.

use crate::schema::Compiled;
use crate::{Context, Error, Identity, Message, MessageFault, Result};
use agent_core::{Instance, Kind, check_write, write};
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// One instance's writes, validated by [`Context::stage`], waiting for
/// [`Context::commit`].
#[derive(Debug)]
pub struct Staged {
    instance: Instance,
    /// Layers read during validation, with their lengths then.
    read: Vec<(Identity, usize)>,
    items: Vec<(usize, ItemOutcome)>,
}

type ItemOutcome = std::result::Result<Vec<(Message, Option<Arc<Compiled>>)>, (usize, Error)>;

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
            let mut trial = scratch.clone();
            let outcome = self.stage_item(instance, messages, &mut trial, &mut read);
            if outcome.is_ok() {
                scratch = trial;
            }
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
            if !crate::load::message_within_depth(&message) {
                let fault = MessageFault::TooDeep {
                    limit: crate::MAX_DEPTH,
                };
                return fail(Error::Message {
                    index: offset,
                    line: None,
                    fault,
                });
            }
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
            if let Err(e) = write(
                view,
                data.destination(),
                data.method(),
                data.value().clone(),
            ) {
                return fail(type_error(e));
            }
            let schema = own_schema
                .clone()
                .or_else(|| scratch.schemas.get(&kind).cloned())
                .or_else(|| self.compiled_schema(&kind, Some(instance)));
            if let (Some(schema), Some(view)) = (schema, view.as_ref()) {
                let violations = schema.violations(view, false);
                if !violations.is_empty() {
                    return fail(Error::Schema {
                        index: offset,
                        identity,
                        violations,
                    });
                }
            }
            if let Some(compiled) = &own_schema {
                scratch.schemas.insert(kind, Arc::clone(compiled));
            }
            accepted.push((message, own_schema));
        }
        Ok(accepted)
    }

    /// Appends staged writes, all items of all batches in the order of their
    /// keys, and returns each item's result by key: the range of its
    /// messages, or why it was refused (with the index its message would
    /// have had, as if the items had been appended one by one).
    ///
    /// Fails with [`Error::Stale`], changing nothing, when a layer read
    /// during staging has grown since, or two batches stage the same instance.
    pub fn commit(&mut self, staged: Vec<Staged>) -> Result<Vec<(usize, Result<Range<usize>>)>> {
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
                        .and_then(|(m, _)| m.as_data())
                        .and_then(|d| d.instance())
                    {
                        self.instances.insert(x.clone());
                    }
                    // Staging checked each message's depth, so none is refused here.
                    let pushed: std::result::Result<(), MessageFault> = messages
                        .into_iter()
                        .try_for_each(|(message, schema)| self.push_unchecked(message, schema));
                    let result = match pushed {
                        Ok(()) => Ok(start..self.len()),
                        Err(fault) => Err(Error::Message {
                            index: self.len(),
                            line: None,
                            fault,
                        }),
                    };
                    results.push((key, result));
                }
                Err((offset, error)) => results.push((key, Err(error.at_index(start + offset)))),
            }
        }
        Ok(results)
    }
}
