//! Evaluating expressions (R16, R17) through instance-scoped reads (R5).

use crate::Expression;
use agent_core::json::Value;
use agent_core::{Instance, Reference};
use agent_data::Context;
use std::borrow::Cow;
use std::collections::HashSet;

/// Where references are read from.
///
/// [`Scope`] reads an agent context for one instance; tests and embedders
/// may implement it over anything else.
pub trait Lookup {
    /// The value at `reference`, or `None` when the path is absent.
    fn lookup(&self, reference: &Reference) -> Option<Cow<'_, Value>>;
}

/// Reads of a [`Context`] as seen by one instance (or globally) (R5).
#[derive(Debug, Clone, Copy)]
pub struct Scope<'c> {
    /// The context read.
    pub context: &'c Context,
    /// The instance reading; `None` reads only global layers.
    pub instance: Option<&'c Instance>,
}

impl<'c> Scope<'c> {
    /// A scope over `context` for `instance`.
    pub fn new(context: &'c Context, instance: Option<&'c Instance>) -> Self {
        Scope { context, instance }
    }
}

impl Lookup for Scope<'_> {
    fn lookup(&self, reference: &Reference) -> Option<Cow<'_, Value>> {
        self.context
            .read(reference, self.instance)
            .map(Cow::Borrowed)
    }
}

/// The result of evaluating an expression (R17).
#[derive(Debug, Clone, PartialEq)]
pub enum Evaluation<'v> {
    /// The value of the first satisfied alternative.
    Value(Cow<'v, Value>),
    /// No alternative was satisfied: every reference that was not present,
    /// in source order, without repeats.
    Unresolved(Vec<Reference>),
}

/// A reference is present when its path exists and is not `null` (R16).
fn present<'v>(lookup: &'v impl Lookup, reference: &Reference) -> Option<Cow<'v, Value>> {
    lookup.lookup(reference).filter(|v| !v.is_null())
}

impl Expression {
    /// Evaluates the expression (R17): the value of the last reference of
    /// the first alternative whose references are all present (R16).
    ///
    /// ```
    /// use agent_data::Context;
    /// use agent_vars::{Evaluation, Expression, Scope};
    /// use agent_core::json;
    ///
    /// let ctx = Context::from_json(r#"[{"type":"state","data":{"default":"en","empty":null}}]"#)?;
    /// let scope = Scope::new(&ctx, None);
    /// let lang = Expression::parse("†input.lang || †state.empty || †state.default")?;
    /// assert_eq!(lang.evaluate(&scope), Evaluation::Value(std::borrow::Cow::Owned(json!("en"))));
    /// let missing = Expression::parse("†input.lang && †state.default")?;
    /// match missing.evaluate(&scope) {
    ///     Evaluation::Unresolved(refs) => assert_eq!(refs[0].to_string(), "†input.lang"),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn evaluate<'v>(&self, lookup: &'v impl Lookup) -> Evaluation<'v> {
        // In order, once each; the set keeps de-duplication linear in the
        // number of references (with a list alone, 100,000 took a minute).
        let mut missing: Vec<&Reference> = Vec::new();
        let mut seen: HashSet<&Reference> = HashSet::new();
        for alternative in &self.alternatives {
            let mut last = None;
            let mut satisfied = true;
            for reference in &alternative.references {
                match present(lookup, reference) {
                    Some(value) => last = Some(value),
                    None => {
                        satisfied = false;
                        if seen.insert(reference) {
                            missing.push(reference);
                        }
                    }
                }
            }
            if let (true, Some(value)) = (satisfied, last) {
                return Evaluation::Value(value);
            }
        }
        Evaluation::Unresolved(missing.into_iter().cloned().collect())
    }
}
