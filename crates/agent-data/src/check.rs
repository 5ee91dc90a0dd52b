//! `check` (R26, R27): every fold diagnostic and schema violation of a
//! context.

use crate::layer::{Diagnostic, Layer};
use crate::schema::CheckMode;
use crate::{Context, Identity, SchemaViolation};
use agent_core::json::Value;
use std::borrow::Cow;
use std::fmt;

/// One problem [`Context::check`] found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Problem {
    /// A write the fold skipped (R12).
    Fold(Diagnostic),
    /// A view that breaks its layer's schema.
    Schema {
        /// The layer.
        identity: Identity,
        /// What is wrong.
        violation: SchemaViolation,
    },
    /// A layer with a schema whose view was not checked: agent-data was
    /// built without its `schema` feature (D61: features cut).
    Unchecked {
        /// The layer.
        identity: Identity,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Fold(d) => d.fmt(f),
            Problem::Schema {
                identity,
                violation,
            } => write!(f, "¶{identity}: schema violated {violation}"),
            Problem::Unchecked { identity } => write!(
                f,
                "¶{identity}: schema not checked: agent-data was built without its `schema` feature"
            ),
        }
    }
}

impl Context {
    /// Every write the fold skipped, layer by layer (R12). Instance layers
    /// are folded over the current global view (R5).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut diagnostics = Vec::new();
        for (identity, layer) in &self.layers {
            self.folded(identity, layer, &mut diagnostics);
        }
        diagnostics
    }

    /// A layer's view as read (an instance layer folded over the global
    /// view, R5), with the writes that fold skipped added to `diagnostics`.
    fn folded<'a>(
        &'a self,
        identity: &Identity,
        layer: &'a Layer,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Option<Cow<'a, Value>> {
        match &identity.instance {
            None => {
                diagnostics.extend(layer.diagnostics().iter().cloned());
                layer.view(&self.log).map(Cow::Borrowed)
            }
            Some(_) => {
                let global = self
                    .layer(&identity.kind, None)
                    .and_then(|l| l.view(&self.log).cloned());
                self.fold_instance(layer, global, Some(diagnostics))
                    .map(Cow::Owned)
            }
        }
    }

    /// Every fold diagnostic and schema violation, layer by layer in order of
    /// first appearance (R27; with [`CheckMode::Complete`], R26).
    pub fn check(&self, mode: CheckMode) -> Vec<Problem> {
        let mut problems = Vec::new();
        for (identity, layer) in &self.layers {
            self.check_layer(identity, layer, mode, &mut problems);
        }
        problems
    }

    /// What [`Context::check`] finds in the layer of `kind` and `instance`
    /// alone: nothing when there is no such layer.
    ///
    /// ```
    /// use agent_data::{CheckMode, Context, Format};
    /// let lines = concat!(
    ///     r#"{"type":"data","kind":"user","data":{"age":"ten"},"#,
    ///     r#""schema":{"type":"object","properties":{"age":{"type":"integer"}}}}"#,
    /// );
    /// // Loaded as stored: a log may hold what an append would refuse.
    /// let ctx = Context::load(lines.as_bytes(), Format::Jsonl)?.context;
    /// let user = agent_core::Kind::new("user")?;
    /// assert_eq!(ctx.check_layer_of(&user, None, CheckMode::Normal).len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_layer_of(
        &self,
        kind: &agent_core::Kind,
        instance: Option<&agent_core::Instance>,
        mode: CheckMode,
    ) -> Vec<Problem> {
        let mut problems = Vec::new();
        let probe = crate::identity::IdentityRef::new(kind, instance);
        if let Some((_, identity, layer)) = self.layers.get_full(probe) {
            self.check_layer(identity, layer, mode, &mut problems);
        }
        problems
    }

    fn check_layer(
        &self,
        identity: &Identity,
        layer: &Layer,
        mode: CheckMode,
        problems: &mut Vec<Problem>,
    ) {
        let complete = mode == CheckMode::Complete;
        let mut diagnostics = Vec::new();
        let view = self.folded(identity, layer, &mut diagnostics);
        problems.extend(diagnostics.into_iter().map(Problem::Fold));
        let schema = self.compiled_schema(&identity.kind, identity.instance.as_ref());
        if let (Some(schema), Some(view)) = (schema, view) {
            match schema.violations(&view, complete) {
                Some(violations) => {
                    problems.extend(violations.into_iter().map(|violation| Problem::Schema {
                        identity: identity.clone(),
                        violation,
                    }))
                }
                None => problems.push(Problem::Unchecked {
                    identity: identity.clone(),
                }),
            }
        }
    }
}
