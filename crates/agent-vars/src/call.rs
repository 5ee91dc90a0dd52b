//! Resolving a call's parameters (R18).

use crate::{Error, Evaluation, Lookup, Result, Scope, Text, parse};
use agent_core::json::{Map, Value};
use agent_core::{Instance, MAX_DEPTH, Reference, TooDeep, json_type};
use agent_data::Context;

/// A call after resolution (R18).
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Every expression resolved: the call with each replaced by its value.
    Ready(Value),
    /// Some expressions did not resolve: every missing reference, in the
    /// order met, without repeats.
    Pending(Vec<Reference>),
}

/// What a call reads: its references and the instance whose scope reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct CallReads {
    /// The call's `_instance`; `None` reads global layers only (R5).
    pub instance: Option<Instance>,
    /// Every reference in every parameter, in order, repeats removed.
    pub references: Vec<Reference>,
}

/// The `_instance` of a call, validated (R2). A call that is not a JSON
/// object is an error (R18).
///
/// # Errors
///
/// [`Error::CallNotObject`] for a call that is not an object,
/// [`Error::InstanceNotString`] / [`Error::Instance`] for an `_instance`
/// that is not a string or that R2 refuses.
pub fn call_instance(call: &Value) -> Result<Option<Instance>> {
    match as_call(call)?.get("_instance") {
        None => Ok(None),
        Some(Value::String(id)) => Instance::new(id.as_str())
            .map(Some)
            .map_err(Error::Instance),
        Some(_) => Err(Error::InstanceNotString),
    }
}

/// Resolves a call against `context`, reading in the call's `_instance`
/// scope (R18): `_`-prefixed keys are kept as they are; every other value is
/// walked at any depth and each expression string replaced by its value;
/// `\†` literals are unescaped.
///
/// # Errors
///
/// Those of [`resolve_call_with`].
///
/// ```
/// use agent_data::Context;
/// use agent_vars::{resolve_call, Resolution};
/// use agent_core::json;
///
/// let ctx = Context::from_json(r#"[{"type":"input","data":{"userName":"ada"}}]"#)?;
/// let call = json!({"_tool": "greet", "name": "†input.userName", "note": "\\†verbatim"});
/// assert_eq!(
///     resolve_call(&call, &ctx)?,
///     Resolution::Ready(json!({"_tool": "greet", "name": "ada", "note": "†verbatim"}))
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resolve_call(call: &Value, context: &Context) -> Result<Resolution> {
    let instance = call_instance(call)?;
    resolve_call_with(call, &Scope::new(context, instance.as_ref()))
}

/// Resolves a call against any [`Lookup`] (the scope is the caller's choice).
///
/// # Errors
///
/// Those of [`call_instance`], [`Error::Syntax`] for a parameter whose
/// expression does not parse, and [`Error::TooDeep`] for a call nested past
/// the limit (R33). A missing reference is not an error:
/// [`Resolution::Pending`] names it.
pub fn resolve_call_with(call: &Value, lookup: &impl Lookup) -> Result<Resolution> {
    let fields = as_call(call)?;
    // Checked whole, its own object counted (agent_core's one convention):
    // this bounds the recursion of `walk` below.
    if !agent_core::within_depth(call, MAX_DEPTH) {
        return Err(Error::TooDeep(TooDeep { limit: MAX_DEPTH }));
    }
    let mut missing = Missing::default();
    let mut out = Map::with_capacity(fields.len());
    for (key, value) in fields {
        let resolved = if key.starts_with('_') {
            value.clone()
        } else {
            let mut at = format!("/{}", escape_pointer(key));
            walk(value, lookup, &mut at, &mut missing)?
        };
        out.insert(key.to_owned(), resolved);
    }
    Ok(if missing.order.is_empty() {
        Resolution::Ready(Value::Object(out))
    } else {
        Resolution::Pending(missing.order)
    })
}

/// Every reference a call reads, with the instance it reads in (R18).
///
/// # Errors
///
/// As [`resolve_call_with`]: a call that is not an object, a bad
/// `_instance`, or an expression that does not parse.
pub fn call_reads(call: &Value) -> Result<CallReads> {
    let instance = call_instance(call)?;
    // Against a lookup that finds nothing, every reference is missing, in
    // order and without repeats: exactly the list of what the call reads.
    let references = match resolve_call_with(call, &Nothing)? {
        Resolution::Pending(references) => references,
        Resolution::Ready(_) => Vec::new(),
    };
    Ok(CallReads {
        instance,
        references,
    })
}

/// Missing references in the order met, once each; the set keeps
/// de-duplication linear (a list alone made 100,000 references quadratic).
#[derive(Default)]
struct Missing {
    order: Vec<Reference>,
    seen: std::collections::HashSet<Reference>,
}

impl Missing {
    fn add(&mut self, reference: Reference) {
        if !self.seen.contains(&reference) {
            self.seen.insert(reference.clone());
            self.order.push(reference);
        }
    }
}

/// A lookup in which nothing is present.
struct Nothing;

impl Lookup for Nothing {
    fn lookup(&self, _: &Reference) -> Option<std::borrow::Cow<'_, Value>> {
        None
    }
}

fn as_call(call: &Value) -> Result<&Map> {
    call.as_object().ok_or(Error::CallNotObject {
        found: json_type(call),
    })
}

fn walk(
    value: &Value,
    lookup: &impl Lookup,
    at: &mut String,
    missing: &mut Missing,
) -> Result<Value> {
    Ok(match value {
        Value::String(text) => match parse(text).map_err(|error| syntax(at, error))? {
            Text::Literal(literal) => Value::String(literal.into_owned()),
            Text::Expression(expression) => match expression.evaluate(lookup) {
                Evaluation::Value(v) => v.into_owned(),
                Evaluation::Unresolved(refs) => {
                    for r in refs {
                        missing.add(r);
                    }
                    Value::Null
                }
            },
        },
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("/{i}"));
                out.push(walk(item, lookup, at, missing)?);
                at.truncate(len);
            }
            Value::Array(out.into())
        }
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (key, item) in map {
                let len = at.len();
                at.push('/');
                at.push_str(&escape_pointer(key));
                out.insert(key.to_owned(), walk(item, lookup, at, missing)?);
                at.truncate(len);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

fn syntax(at: &str, error: crate::SyntaxError) -> Error {
    Error::Syntax {
        at: at.to_owned(),
        error,
    }
}

/// JSON Pointer escaping of one key (RFC 6901).
fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
