//! JSON Schema validation of views (R24–R26), with compiled validators
//! cached per distinct schema.
//!
//! Without the `schema` feature nothing is compiled: a layer keeps its
//! schema as declared, and whatever would have to be checked against it is
//! refused instead (D61: features cut), so no build accepts what it cannot check.

use crate::{MessageFault, SchemaViolation};
#[cfg(feature = "schema")]
use agent_core::json::Map;
use agent_core::json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// How strict [`Context::check`](crate::Context::check) and
/// [`Schema::violations`] are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CheckMode {
    /// `required` is tolerated, as while views are being built (R25, R27).
    #[default]
    Normal,
    /// Every schema rule, `required` included (R26).
    Complete,
}

/// A schema compiled twice: in full (R26) and with every `required` removed,
/// for views still being built up (R25).
pub(crate) struct Compiled {
    /// The schema as declared: a layer's schema is read from here, so the
    /// message that declared it need not be parsed again.
    schema: Value,
    #[cfg(feature = "schema")]
    full: jsonschema::Validator,
    #[cfg(feature = "schema")]
    lenient: jsonschema::Validator,
}

impl fmt::Debug for Compiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Compiled(..)")
    }
}

impl Compiled {
    /// Every violation of `view`; `complete` also enforces `required`.
    /// The schema as declared.
    pub(crate) fn schema(&self) -> &Value {
        &self.schema
    }

    /// `None` when this build cannot check schemas (no `schema` feature):
    /// the caller refuses what it was asked to check (D61: features cut).
    #[cfg(feature = "schema")]
    pub(crate) fn violations(&self, view: &Value, complete: bool) -> Option<Vec<SchemaViolation>> {
        let validator = if complete { &self.full } else { &self.lenient };
        let original = view;
        let view = serde_json::Value::from(view);
        let found = validator.iter_errors(&view).map(|e| SchemaViolation {
            instance_path: e.instance_path().to_string(),
            rule: e.kind().keyword().to_owned(),
            schema_path: e.schema_path().to_string(),
            // The value as the view holds it (exact, in order), not as
            // the validator's copy does.
            value: view_at(original, &e.instance_path().to_string()),
            message: e.to_string(),
        });
        Some(found.collect())
    }

    /// `None` when this build cannot check schemas (no `schema` feature):
    /// the caller refuses what it was asked to check (D61: features cut).
    #[cfg(not(feature = "schema"))]
    pub(crate) fn violations(
        &self,
        _view: &Value,
        _complete: bool,
    ) -> Option<Vec<SchemaViolation>> {
        None
    }
}

/// A compiled JSON Schema, for validating values that are not views — a
/// tool's call against the tool's schema (R23), say.
///
/// ```
/// use agent_data::{CheckMode, Schema};
/// use agent_core::json;
/// let schema = Schema::compile(&json!({"properties": {"_outputPath": {"const": "†data.x"}}}))?;
/// assert!(schema.violations(&json!({"_outputPath": "†data.x"}), CheckMode::Complete).is_empty());
/// assert_eq!(schema.violations(&json!({"_outputPath": "†data.y"}), CheckMode::Complete)[0].rule, "const");
/// # Ok::<(), agent_data::MessageFault>(())
/// ```
#[derive(Debug, Clone)]
pub struct Schema(pub(crate) Arc<Compiled>);

impl Schema {
    /// Compiles `schema`.
    ///
    /// # Errors
    ///
    /// [`MessageFault::InvalidSchema`] for a schema that is not a valid JSON
    /// Schema (or whose `$ref` chains are too long), and
    /// [`MessageFault::SchemaUnsupported`] in a build without the `schema`
    /// feature, which can check nothing against it (D61: features cut).
    pub fn compile(schema: &Value) -> Result<Self, MessageFault> {
        if cfg!(not(feature = "schema")) {
            return Err(MessageFault::SchemaUnsupported);
        }
        SchemaCache::default().get(schema).map(Schema)
    }

    /// Every violation of `value`; [`CheckMode::Normal`]
    /// tolerates `required` (R25), `Complete` does not (R26).
    pub fn violations(&self, value: &Value, mode: CheckMode) -> Vec<SchemaViolation> {
        // A `Schema` exists only where `compile` succeeded, which is only
        // in a build with the `schema` feature: `None` cannot occur here.
        self.0
            .violations(value, mode == CheckMode::Complete)
            .unwrap_or_default()
    }
}

/// Compiled validators keyed by the schema's JSON text, so each distinct
/// schema is compiled once however many messages carry it.
#[derive(Clone, Default)]
pub(crate) struct SchemaCache {
    compiled: HashMap<String, Arc<Compiled>>,
}

impl SchemaCache {
    /// The compiled form of `schema`, if it was compiled before.
    pub(crate) fn lookup(&self, schema: &Value) -> Option<Arc<Compiled>> {
        self.compiled.get(&schema.to_string()).map(Arc::clone)
    }

    /// The compiled form of `schema`: cached, or compiled now without
    /// caching it (validation borrows the context; landing caches it).
    pub(crate) fn compile(&self, schema: &Value) -> Result<Arc<Compiled>, MessageFault> {
        match self.lookup(schema) {
            Some(compiled) => Ok(compiled),
            None => SchemaCache::default().get(schema),
        }
    }

    /// Caches a schema compiled by [`SchemaCache::compile`].
    pub(crate) fn insert(&mut self, compiled: &Arc<Compiled>) {
        self.compiled
            .entry(compiled.schema().to_string())
            .or_insert_with(|| Arc::clone(compiled));
    }

    /// The compiled form of `schema`, compiling it on first sight.
    pub(crate) fn get(&mut self, schema: &Value) -> Result<Arc<Compiled>, MessageFault> {
        let key = schema.to_string();
        if let Some(compiled) = self.compiled.get(&key) {
            return Ok(Arc::clone(compiled));
        }
        let depth = crate::refs::ref_depth(schema, crate::refs::MAX_REF_DEPTH);
        if depth > crate::refs::MAX_REF_DEPTH {
            return Err(MessageFault::InvalidSchema {
                reason: format!(
                    "a `$ref` leads through more than {} others",
                    crate::refs::MAX_REF_DEPTH
                ),
            });
        }
        let compiled = Arc::new(compile(schema)?);
        self.compiled.insert(key, Arc::clone(&compiled));
        Ok(compiled)
    }
}

/// Both validators of `schema`.
#[cfg(feature = "schema")]
fn compile(schema: &Value) -> Result<Compiled, MessageFault> {
    let invalid = |e: jsonschema::ValidationError<'_>| MessageFault::InvalidSchema {
        reason: e.to_string(),
    };
    Ok(Compiled {
        schema: schema.clone(),
        full: jsonschema::validator_for(&serde_json::Value::from(schema)).map_err(invalid)?,
        lenient: jsonschema::validator_for(&serde_json::Value::from(&without_required(schema)))
            .map_err(invalid)?,
    })
}

/// The schema as declared, uncompiled: this build checks nothing against
/// it, and refuses whatever would need checking (D61: features cut).
#[cfg(not(feature = "schema"))]
fn compile(schema: &Value) -> Result<Compiled, MessageFault> {
    Ok(Compiled {
        schema: schema.clone(),
    })
}

impl fmt::Debug for SchemaCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SchemaCache({} schemas)", self.compiled.len())
    }
}

/// Keywords whose value is a map from names to subschemas.
#[cfg(feature = "schema")]
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is a subschema or an array of subschemas.
#[cfg(feature = "schema")]
const SCHEMA_SLOTS: [&str; 15] = [
    "items",
    "additionalItems",
    "additionalProperties",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "prefixItems",
    "allOf",
    "anyOf",
    "oneOf",
];

/// A copy of `schema` with every `required` keyword removed, walking only
/// schema positions (a property *named* `required` is kept).
#[cfg(feature = "schema")]
pub(crate) fn without_required(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        let key: &str = key;
        let value = match (key, value) {
            ("required", Value::Array(_)) => continue,
            (k, Value::Object(inner)) if SCHEMA_MAPS.contains(&k) => Value::Object(
                inner
                    .iter()
                    .map(|(name, s)| (name, without_required(s)))
                    .collect(),
            ),
            ("dependencies", Value::Object(inner)) => Value::Object(
                inner
                    .iter()
                    .map(|(name, s)| (name, without_required(s)))
                    .collect(),
            ),
            (k, Value::Array(items)) if SCHEMA_SLOTS.contains(&k) => {
                Value::Array(items.iter().map(without_required).collect())
            }
            (k, s) if SCHEMA_SLOTS.contains(&k) => without_required(s),
            (_, other) => other.clone(),
        };
        out.insert(key.to_owned(), value);
    }
    Value::Object(out)
}

#[cfg(all(test, feature = "schema"))]
mod tests {
    use super::*;
    use agent_core::json;

    #[test]
    fn r25_without_required_strips_only_keywords() {
        let schema = json!({
            "required": ["a"],
            "properties": {"required": {"type": "string", "required": ["x"]}},
            "anyOf": [{"required": ["b"]}],
            "items": {"required": ["c"]},
            "dependencies": {"d": ["e"]}
        });
        assert_eq!(
            without_required(&schema),
            json!({
                "properties": {"required": {"type": "string"}},
                "anyOf": [{}],
                "items": {},
                "dependencies": {"d": ["e"]}
            })
        );
    }
}

/// The value at a JSON Pointer into `view` (`null` where nothing is, which
/// a validator's path into the same view never meets).
#[cfg(feature = "schema")]
fn view_at(view: &Value, pointer: &str) -> Value {
    view.pointer(pointer).cloned().unwrap_or(Value::Null)
}
