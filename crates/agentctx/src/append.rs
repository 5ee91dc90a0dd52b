//! What both contexts append and apply: the same checks and the same
//! messages, in memory or through a store.

use crate::{Error, Result};
use agent_core::json::Value;
use agent_data::Append;
use agent_data::{Message, MessageFault};
use agent_output::{Call, Clock, Outcome};
use std::borrow::Borrow;

/// What [`StoredContext::append`](crate::StoredContext::append) and
/// [`ContextExt::append_value`](crate::ContextExt::append_value) take:
/// one message or an array of them as JSON (R1 shapes, normalised as
/// loading would), a [`Message`], or a slice or `Vec` of them. Either way
/// every message's `_` keys are checked (D63: typos refused) and the batch is
/// appended all or none.
///
/// Implemented here only (sealed), so it can grow without breaking
/// anyone.
///
/// ```
/// use agentctx::prelude::*;
/// use agentctx::json;
///
/// let mut ctx = Context::new();
/// assert_eq!(ctx.append_value(json!({"type": "state", "data": {"n": 1}}))?, 1);
/// let messages = Message::from_value(json!({"type": "state", "data": {"n": 2}}))?;
/// assert_eq!(ctx.append_value(&messages)?, 1);
/// assert_eq!(ctx.get("†state.n")?, json!(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Appendable: sealed::Sealed {
    /// Checks the messages' `_` keys against `allowed` and hands the batch
    /// to `append`.
    #[doc(hidden)]
    fn append_checked(
        self,
        allowed: &[String],
        append: &mut dyn FnMut(&[Message]) -> Result<usize>,
    ) -> Result<usize>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Value {}
    impl Sealed for super::Message {}
    impl Sealed for &super::Message {}
    impl Sealed for &[super::Message] {}
    impl Sealed for Vec<super::Message> {}
    impl Sealed for &Vec<super::Message> {}
}

/// A message refused before it reaches the context, named by its place in
/// the batch as given.
fn fault_at(index: usize) -> impl Fn(MessageFault) -> Error {
    move |fault| {
        Error::Data(agent_data::Error::Message {
            index,
            line: None,
            fault,
        })
    }
}

fn checked(
    messages: &[Message],
    allowed: &[String],
    append: &mut dyn FnMut(&[Message]) -> Result<usize>,
) -> Result<usize> {
    for (index, message) in messages.iter().enumerate() {
        message.check_keys(allowed).map_err(fault_at(index))?;
    }
    append(messages)
}

impl Appendable for Value {
    fn append_checked(
        self,
        allowed: &[String],
        append: &mut dyn FnMut(&[Message]) -> Result<usize>,
    ) -> Result<usize> {
        let items = match self {
            Value::Array(items) => items.into_vec(),
            one => vec![one],
        };
        let mut batch = Vec::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            // Named by the item given, which may normalise to several.
            let normalised = Message::from_value(item).map_err(fault_at(index))?;
            for message in &normalised {
                message.check_keys(allowed).map_err(fault_at(index))?;
            }
            batch.extend(normalised);
        }
        append(&batch)
    }
}

impl Appendable for &[Message] {
    fn append_checked(
        self,
        allowed: &[String],
        append: &mut dyn FnMut(&[Message]) -> Result<usize>,
    ) -> Result<usize> {
        checked(self, allowed, append)
    }
}

impl Appendable for &Message {
    fn append_checked(
        self,
        allowed: &[String],
        append: &mut dyn FnMut(&[Message]) -> Result<usize>,
    ) -> Result<usize> {
        checked(std::slice::from_ref(self), allowed, append)
    }
}

impl Appendable for Message {
    fn append_checked(
        self,
        allowed: &[String],
        append: &mut dyn FnMut(&[Message]) -> Result<usize>,
    ) -> Result<usize> {
        checked(std::slice::from_ref(&self), allowed, append)
    }
}

impl Appendable for Vec<Message> {
    fn append_checked(
        self,
        allowed: &[String],
        append: &mut dyn FnMut(&[Message]) -> Result<usize>,
    ) -> Result<usize> {
        checked(&self, allowed, append)
    }
}

impl Appendable for &Vec<Message> {
    fn append_checked(
        self,
        allowed: &[String],
        append: &mut dyn FnMut(&[Message]) -> Result<usize>,
    ) -> Result<usize> {
        checked(self, allowed, append)
    }
}

/// Appends `messages` to `target`, checked; returns how many landed.
pub(crate) fn append(
    target: &mut (impl Append + ?Sized),
    messages: impl Appendable,
    allowed: &[String],
) -> Result<usize> {
    messages.append_checked(allowed, &mut |batch| {
        target
            .append_all(batch)
            .map(|range| range.len())
            .map_err(Error::from)
    })
}

/// Writes one call's result to `target` (R19–R22) after checking the
/// call's `_` keys.
pub(crate) fn apply(
    target: &mut (impl Append + ?Sized),
    call: &Call,
    outcome: Outcome,
    clock: &dyn Clock,
    allowed: &[String],
) -> Result<Vec<Message>> {
    call.check_keys(allowed)?;
    Ok(agent_output::apply(target, call, outcome, clock)?)
}

/// Writes every result to `target` in one append, all or none. An error a
/// result is to blame for is [`Error::Batch`] naming it.
pub(crate) fn apply_all<C: Borrow<Call>>(
    target: &mut (impl Append + ?Sized),
    results: impl IntoIterator<Item = (C, Outcome)>,
    clock: &dyn Clock,
    allowed: &[String],
) -> Result<Vec<Message>> {
    let mut batch = Vec::new();
    // Where each result's messages end in the batch.
    let mut ends = Vec::new();
    for (index, (call, outcome)) in results.into_iter().enumerate() {
        let call = call.borrow();
        let blamed = |error: agent_output::Error| Error::batch(index, error.into());
        call.check_keys(allowed).map_err(blamed)?;
        batch.extend(agent_output::messages_for(call, outcome, clock).map_err(blamed)?);
        ends.push(batch.len());
    }
    match target.append_all(&batch) {
        Ok(_) => Ok(batch),
        Err(error) => {
            // A refused commit has caught the context up to what it was
            // validated against (in memory, it is unchanged), so the
            // refused message's index less the length is its place in
            // the batch.
            let base = target.context().len();
            let error = agent_output::Error::from(error);
            let offset = refused_index(&error).and_then(|index| index.checked_sub(base));
            match offset.map(|offset| ends.partition_point(|&end| end <= offset)) {
                Some(index) if index < ends.len() => Err(Error::batch(index, error.into())),
                _ => Err(error.into()),
            }
        }
    }
}

/// The index of the message an append refused, when it names one.
fn refused_index(error: &agent_output::Error) -> Option<usize> {
    match error {
        agent_output::Error::Append(
            agent_data::Error::Message { index, .. }
            | agent_data::Error::TypeError { index, .. }
            | agent_data::Error::Schema { index, .. }
            | agent_data::Error::SchemaUnchecked { index, .. },
        ) => Some(*index),
        _ => None,
    }
}
