//! Batch operations over instances: inputs, splitting, grouping, and
//! resolving and applying many calls, sequentially or on all cores.

use crate::{Error, Result};
use agent_core::json::{Map, Value};
use agent_core::{Instance, Kind};
use agent_data::Append;
use agent_data::{Context, DataMessage, Message};
use agent_output::{Call, Clock, Outcome};
use agent_vars::Resolution;
use indexmap::IndexMap;
#[cfg(feature = "rayon")]
use rayon::prelude::*;
#[cfg(not(feature = "rayon"))]
use sequential::{IntoParIter, ParIter};

/// How a batch runs. Both schedules produce the same results and the same
/// context, message order included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Schedule {
    /// One call after another, on the calling thread.
    Sequential,
    /// Instances in parallel on rayon's thread pool; in a build without
    /// the `rayon` feature, in sequence like [`Schedule::Sequential`].
    #[default]
    Parallel,
}

/// Puts each input into a new instance: one targeted `input` message per
/// value, with ids from [`fresh_ids`](crate::fresh_ids). All are appended
/// together, or none (R13). `target` is a [`Context`] in memory or a stored
/// context (agent-store's `Stored`); there the ids are chosen against the
/// context as it is when the messages land, so writers assigning at once
/// never share an instance. Returns the new ids and the messages appended.
///
/// # Errors
///
/// [`Error::Data`] when an input cannot be an `input` message or the
/// append is refused (nothing is appended), and [`Error::Store`] when a
/// stored context cannot be read or written.
pub fn assign_inputs(
    target: &mut (impl Append + ?Sized),
    inputs: Vec<Value>,
) -> Result<(Vec<Instance>, Vec<Message>)> {
    // The ids and messages of the attempt that landed.
    let mut assigned = (Vec::new(), Vec::new());
    let mut build = |context: &Context| {
        let ids = crate::fresh_ids(context, inputs.len());
        // The index an invalid input's message would have had in the context.
        let start = context.len();
        let messages = ids
            .iter()
            .zip(inputs.iter().cloned())
            .enumerate()
            .map(|(i, (id, data))| {
                let mut fields = Map::new();
                fields.insert("type".into(), "data".into());
                fields.insert("kind".into(), "input".into());
                fields.insert("data".into(), data);
                fields.insert("_instance".into(), id.as_str().into());
                DataMessage::from_value(Value::Object(fields))
                    .map(Message::from)
                    .map_err(|fault| agent_data::Error::Message {
                        index: start + i,
                        line: None,
                        fault,
                    })
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        assigned = (ids, messages.clone());
        Ok(messages)
    };
    target.append_built(&mut build)?;
    Ok(assigned)
}

/// One context per instance (in order of first appearance): every message
/// without an `_instance`, plus that instance's messages, in context order.
///
/// # Errors
///
/// [`Error::Data`] when an instance's messages do not form a valid
/// context on their own.
pub fn split(context: &Context) -> Result<IndexMap<Instance, Context>> {
    context
        .instances()
        .map(|x| {
            let messages = (0..context.len())
                .filter(|&i| {
                    context
                        .message_identity(i)
                        .and_then(|id| id.instance.as_ref())
                        .is_none_or(|own| own == x)
                })
                .filter_map(|i| context.message(i))
                .collect();
            Ok((x.clone(), Context::from_messages(messages)?))
        })
        .collect()
}

/// Call positions grouped by `_instance` (`None`: global), groups in order
/// of first appearance.
pub fn group_calls(calls: &[Call]) -> IndexMap<Option<Instance>, Vec<usize>> {
    let mut groups: IndexMap<Option<Instance>, Vec<usize>> = IndexMap::new();
    for (i, call) in calls.iter().enumerate() {
        groups.entry(call.instance().cloned()).or_default().push(i);
    }
    groups
}

/// The view of `kind` for every instance, in order of first appearance (R5).
pub fn views(context: &Context, kind: &Kind) -> IndexMap<Instance, Option<Value>> {
    context
        .instances()
        .map(|x| (x.clone(), context.view(kind, Some(x)).cloned()))
        .collect()
}

/// Resolves every call in its own instance scope (R18, R5).
pub fn resolve_batch(
    context: &Context,
    calls: &[Call],
    schedule: Schedule,
) -> Vec<Result<Resolution>> {
    let resolve = |call: &Call| call.resolve(context).map_err(Error::from);
    match schedule {
        Schedule::Sequential => calls.iter().map(resolve).collect(),
        Schedule::Parallel => calls.par_iter().map(resolve).collect(),
    }
}

/// Writes each call's outcome (R20–R22), in batch order; a refused item
/// appends nothing and the others go on. Returns each item's appended
/// messages or error.
///
/// In [`Schedule::Parallel`], the messages of every item are built and, per
/// instance, validated concurrently (`Context::stage`), then appended in
/// batch order (`Context::commit`); the result equals [`Schedule::Sequential`]'s
/// exactly. A batch with a global write runs sequentially, since a global
/// write changes what every instance reads.
pub fn apply_batch(
    context: &mut Context,
    items: Vec<(Call, Outcome)>,
    clock: &(dyn Clock + Sync),
    schedule: Schedule,
) -> Vec<Result<Vec<Message>>> {
    if schedule == Schedule::Sequential {
        return sequential(context, items, clock);
    }
    let built: Vec<Result<Vec<Message>>> = items
        .par_iter()
        .map(|(call, outcome)| {
            agent_output::messages_for(call, outcome.clone(), clock).map_err(Error::from)
        })
        .collect();
    let global = built
        .iter()
        .flatten()
        .flatten()
        .any(|m| m.as_data().is_some_and(|d| d.instance().is_none()));
    if global {
        return sequential(context, items, clock);
    }
    let mut groups: IndexMap<Instance, Vec<Item>> = IndexMap::new();
    let mut results: Vec<Option<Result<Vec<Message>>>> = Vec::with_capacity(built.len());
    for (key, outcome) in built.into_iter().enumerate() {
        match outcome {
            Ok(messages) if !messages.is_empty() => {
                let instance = messages[0]
                    .as_data()
                    .and_then(DataMessage::instance)
                    .cloned();
                if let Some(x) = instance {
                    groups.entry(x).or_default().push((key, messages));
                }
                results.push(None);
            }
            other => results.push(Some(other)),
        }
    }
    let shared: &Context = context;
    let groups: Vec<(Instance, Vec<Item>)> = groups.into_iter().collect();
    let staged: Vec<agent_data::Staged> = groups
        .into_par_iter()
        .map(|(instance, group)| shared.stage(&instance, group))
        .collect();
    match context.commit(staged) {
        Ok(committed) => {
            for (key, outcome) in committed {
                results[key] = Some(match outcome {
                    Ok(committed) => Ok(committed.messages),
                    Err(e) => Err(Error::Output(agent_output::Error::Append(e))),
                });
            }
            results
                .into_iter()
                .map(|r| r.unwrap_or_else(|| Ok(Vec::new())))
                .collect()
        }
        // Unreachable (nothing changed between staging and commit), but if
        // it happens nothing was committed and the sequential path is exact.
        Err(_) => sequential(context, items, clock),
    }
}

/// One batch item's messages, keyed by its position in the batch.
type Item = (usize, Vec<Message>);

fn sequential(
    context: &mut Context,
    items: Vec<(Call, Outcome)>,
    clock: &dyn Clock,
) -> Vec<Result<Vec<Message>>> {
    items
        .into_iter()
        .map(|(call, outcome)| {
            agent_output::apply(context, &call, outcome, clock).map_err(Error::from)
        })
        .collect()
}

/// Without the `rayon` feature the same pipelines run in sequence on the
/// calling thread, with the same results (D61: features cut).
#[cfg(not(feature = "rayon"))]
mod sequential {
    /// `par_iter` as a plain `iter`.
    pub(crate) trait ParIter<T> {
        fn par_iter(&self) -> std::slice::Iter<'_, T>;
    }
    impl<T> ParIter<T> for [T] {
        fn par_iter(&self) -> std::slice::Iter<'_, T> {
            self.iter()
        }
    }
    /// `into_par_iter` as a plain `into_iter`.
    pub(crate) trait IntoParIter: IntoIterator + Sized {
        fn into_par_iter(self) -> Self::IntoIter {
            self.into_iter()
        }
    }
    impl<T> IntoParIter for Vec<T> {}
}
