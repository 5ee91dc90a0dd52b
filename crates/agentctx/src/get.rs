//! Reading by reference in one call, and the facade's appends and
//! applies on a context in memory.

use crate::{Appendable, Error, Result};
use agent_core::json::Value;
use agent_core::{Instance, Reference};
use agent_data::{Context, Message};
use agent_output::{Call, Clock, Outcome, SystemClock};
use agent_vars::{Evaluation, Expression, Resolution, Scope};

/// Reads a [`Context`] by expression, the way a model does
/// (`"†state.user.name || †input.name"`), without parsing, scoping and
/// matching on the evaluation by hand; and appends and applies as a
/// [`StoredContext`](crate::StoredContext) does, with the same checks and
/// the same messages. The append is named [`append_value`](Self::append_value)
/// here, since [`Context::append`] is the layer's own; `apply` takes a
/// parsed [`Call`] (as `StoredContext::apply_call` does), and there is no
/// in-memory `apply_all` (appending the messages of each result in turn
/// is the same thing in memory).
///
/// ```
/// use agentctx::prelude::*;
/// use agentctx::json;
///
/// let ctx = Context::from_json(r#"[
///   {"type": "state", "data": {"lang": "en"}},
///   {"type": "state", "data": {"lang": "fr"}, "_instance": "①"}
/// ]"#)?;
/// assert_eq!(ctx.get("†state.lang")?, json!("en"));
/// assert_eq!(ctx.get_in("†state.lang", "①")?, json!("fr"));
/// assert!(ctx.get("†state.name || †input.name").unwrap_err().is_unresolved());
/// # Ok::<(), agentctx::Error>(())
/// ```
pub trait ContextExt {
    /// The value of `expression` read globally (spec R5, R17). Text that is
    /// not an expression is an [`Error::Syntax`] (a forgotten `†` is
    /// pointed out); nothing present is [`Error::Unresolved`].
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] and [`Error::Unresolved`], as above.
    fn get(&self, expression: &str) -> Result<Value>;

    /// The value of `expression` read for `instance`: its layers over the
    /// global ones (R5).
    ///
    /// # Errors
    ///
    /// Those of [`get`](Self::get), and [`Error::Core`] for an instance id
    /// R2 refuses.
    fn get_in(&self, expression: &str, instance: &str) -> Result<Value>;

    /// `call` with every reference in its parameters replaced by its value,
    /// read in the call's `_instance` (R18); [`Error::Unresolved`] while one
    /// is missing.
    ///
    /// # Errors
    ///
    /// [`Error::Unresolved`] while a reference is missing, [`Error::Syntax`]
    /// for a parameter that does not parse, and [`Error::Vars`] for a call
    /// that is not an object or has a bad `_instance`.
    fn resolve_call(&self, call: &Value) -> Result<Value>;

    /// The value of one reference, borrowed from the context: what
    /// [`get`](Self::get) returns for it, without the copy. `get`
    /// evaluates whole expressions — `||` picks an alternative, `&&` needs
    /// several values present — and so returns an owned value; text that
    /// is more than one reference is [`Error::NotAReference`]. A `null`
    /// is not present (R16), as for `get`.
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::json;
    ///
    /// let ctx = Context::from_json(r#"[{"type": "state", "data": {"user": {"name": "Ada"}}}]"#)?;
    /// let name: &Value = ctx.get_ref("†state.user.name")?;
    /// assert_eq!(name, &ctx.get("†state.user.name")?);
    /// assert!(ctx.get_ref("†state.user.age").unwrap_err().is_unresolved());
    /// # Ok::<(), agentctx::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] for text that does not parse,
    /// [`Error::NotAReference`] for an expression of several references,
    /// [`Error::Unresolved`] when the reference is not present.
    fn get_ref(&self, reference: &str) -> Result<&Value>;

    /// [`get_ref`](Self::get_ref) read for `instance`: its layers over the
    /// global ones (R5), as [`get_in`](Self::get_in) reads.
    ///
    /// # Errors
    ///
    /// Those of [`get_ref`](Self::get_ref), and [`Error::Core`] for an
    /// instance id R2 refuses.
    fn get_ref_in(&self, reference: &str, instance: &str) -> Result<&Value>;

    /// Appends `messages` — a JSON message or an array of them, or
    /// [`Message`]s ([`Appendable`]) — validated (R13, R25), all or none,
    /// as [`StoredContext::append`](crate::StoredContext::append) does: a
    /// `_` key the engine does not read is refused as the typo it most
    /// likely is (D63: typos refused). Returns how many messages were appended.
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::json;
    ///
    /// let mut ctx = Context::new();
    /// let two = json!([{"type": "input", "data": {"n": 1}}, {"type": "state", "data": {"n": 2}}]);
    /// assert_eq!(ctx.append_value(two)?, 2);
    /// let typo = ctx.append_value(json!({"type": "state", "data": {}, "_outputpath": "†state.n"}));
    /// assert_eq!(typo.unwrap_err().to_string(),
    ///     r#"message 0: unknown key "_outputpath"; did you mean "_outputPath"?"#);
    /// # Ok::<(), agentctx::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Data`] for a message that is not valid, an unknown `_` key
    /// or an append refused (R13, R25). Nothing is appended on error.
    fn append_value(&mut self, messages: impl Appendable) -> Result<usize>;

    /// Records a call's result where its `_outputPath` says (R19–R22),
    /// dated by the system clock, and returns the messages appended (none
    /// without `_outputPath`, R21): the messages
    /// [`StoredContext::apply_call`](crate::StoredContext::apply_call)
    /// writes, byte for byte, for the same clock. A `_` key the engine
    /// does not read is refused (D63: typos refused).
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::json;
    ///
    /// let mut ctx = Context::new();
    /// let call = Call::parse(json!({"_tool": "weather", "_outputPath": "†state.forecast"}))?;
    /// ctx.apply(&call, Outcome::Success(json!("sunny")))?;
    /// assert_eq!(ctx.get_ref("†state.forecast")?, "sunny");
    /// # Ok::<(), agentctx::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Output`] for a call with an unknown `_` key, an outcome
    /// the call has no place for, or a refused append. Nothing is
    /// appended on error.
    fn apply(&mut self, call: &Call, outcome: Outcome) -> Result<Vec<Message>>;

    /// [`apply`](Self::apply) with `clock` for the results' `_date` (a
    /// fixed one makes output reproducible).
    ///
    /// # Errors
    ///
    /// Those of [`apply`](Self::apply).
    fn apply_with_clock(
        &mut self,
        call: &Call,
        outcome: Outcome,
        clock: &dyn Clock,
    ) -> Result<Vec<Message>>;
}

impl ContextExt for Context {
    fn get(&self, expression: &str) -> Result<Value> {
        evaluate(self, expression, None)
    }

    fn get_in(&self, expression: &str, instance: &str) -> Result<Value> {
        let instance = Instance::new(instance)?;
        evaluate(self, expression, Some(&instance))
    }

    fn resolve_call(&self, call: &Value) -> Result<Value> {
        match agent_vars::resolve_call(call, self)? {
            Resolution::Ready(value) => Ok(value),
            Resolution::Pending(missing) => Err(Error::Unresolved {
                what: "the call".into(),
                missing,
            }),
        }
    }

    fn get_ref(&self, reference: &str) -> Result<&Value> {
        read(self, reference, None)
    }

    fn get_ref_in(&self, reference: &str, instance: &str) -> Result<&Value> {
        let instance = Instance::new(instance)?;
        read(self, reference, Some(&instance))
    }

    fn append_value(&mut self, messages: impl Appendable) -> Result<usize> {
        crate::append::append(self, messages, &[])
    }

    fn apply(&mut self, call: &Call, outcome: Outcome) -> Result<Vec<Message>> {
        crate::append::apply(self, call, outcome, &SystemClock, &[])
    }

    fn apply_with_clock(
        &mut self,
        call: &Call,
        outcome: Outcome,
        clock: &dyn Clock,
    ) -> Result<Vec<Message>> {
        crate::append::apply(self, call, outcome, clock, &[])
    }
}

/// One reference's value, borrowed; anything else an error naming why.
fn read<'c>(context: &'c Context, text: &str, instance: Option<&Instance>) -> Result<&'c Value> {
    let expression = Expression::parse(text)?;
    let Some(reference) = expression.as_reference() else {
        return Err(Error::NotAReference {
            expression: text.to_owned(),
        });
    };
    match context.read(reference, instance) {
        Some(value) if !value.is_null() => Ok(value),
        _ => Err(unresolved(reference)),
    }
}

/// What [`ContextExt::get`] says of a lone reference that is not present.
fn unresolved(reference: &Reference) -> Error {
    Error::Unresolved {
        what: reference.to_string(),
        missing: vec![reference.clone()],
    }
}

fn evaluate(context: &Context, text: &str, instance: Option<&Instance>) -> Result<Value> {
    let expression = Expression::parse(text)?;
    match expression.evaluate(&Scope::new(context, instance)) {
        Evaluation::Value(value) => Ok(value.into_owned()),
        Evaluation::Unresolved(missing) => Err(Error::Unresolved {
            what: expression.to_string(),
            missing,
        }),
    }
}
