//! Reading by reference in one call: parse, evaluate, done.

use crate::{Error, Result};
use agent_core::Instance;
use agent_core::json::Value;
use agent_data::Context;
use agent_vars::{Evaluation, Expression, Resolution, Scope};

/// Reads a [`Context`] by expression, the way a model does
/// (`"†state.user.name || †input.name"`), without parsing, scoping and
/// matching on the evaluation by hand.
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
