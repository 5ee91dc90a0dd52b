//! Validating and appending a call's result (R20, R23).

use crate::{Call, Clock, Error, Outcome, Result, messages_for};
use agent_core::json::{Map, Value};
use agent_data::Append;
use agent_data::{CheckMode, Context, Message, Schema};
use agent_vars::Resolution;

/// Checks a call against its tool's schema (R23): the `_`-keys
/// (`_tool`, `_outputPath`, `_outputMethod`, `_instance`, …) as written, the
/// parameters after resolution in `context` (in the call's instance), so
/// `"days": "†input.days"` passes an `{"type": "integer"}` parameter when
/// the input holds an integer. A `_`-key the schema does not declare in its
/// `properties` is the engine's, not the tool's, and never trips
/// `additionalProperties: false`. A parameter whose reference is missing
/// cannot be judged: [`Error::ToolSchemaUnresolved`]. When `_outputPath`
/// has several destinations (`&&`, `||`), a declared `pattern` is checked
/// against each destination, written canonically, and the rest of its
/// schema (`const`, `enum`) against the whole expression.
///
/// # Errors
///
/// [`Error::ToolSchema`] with every violation, [`Error::ToolSchemaUnresolved`]
/// when a parameter's reference is missing, [`Error::BadToolSchema`] for an
/// invalid schema (or a build without agent-data's `schema` feature), and
/// [`Error::Call`] when the call's parameters do not resolve.
///
/// ```
/// use agent_data::Context;
/// use agent_output::{check_tool_schema, Call};
/// use agent_core::json;
///
/// let ctx = Context::from_json(r#"[{"type":"input","data":{"days":3}}]"#)?;
/// let schema = json!({
///     "properties": {"_outputPath": {"pattern": "^†"}, "days": {"type": "integer"}},
///     "additionalProperties": false
/// });
/// let call = Call::parse(json!({"_tool": "plan", "days": "†input.days", "_outputPath": "†state.x"}))?;
/// assert!(check_tool_schema(&call, &ctx, &schema).is_ok());
/// let call = Call::parse(json!({"_tool": "plan", "days": "†input.days", "_outputPath": "†state.y"}))?;
/// let closed = json!({"properties": {"_outputPath": {"const": "†state.x"}}});
/// assert!(check_tool_schema(&call, &ctx, &closed).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_tool_schema(call: &Call, context: &Context, tool_schema: &Value) -> Result<()> {
    let resolved = match call.resolve(context)? {
        Resolution::Ready(resolved) => resolved,
        Resolution::Pending(missing) => {
            return Err(Error::ToolSchemaUnresolved {
                missing: missing.iter().map(ToString::to_string).collect(),
            });
        }
    };
    let mut whole = admitting_meta_keys(tool_schema, &resolved);
    let destinations = call
        .output_path()
        .map(|path| path.outcomes().iter().flatten().collect::<Vec<_>>())
        .unwrap_or_default();
    // A `pattern` constrains each destination, written canonically: the
    // whole expression is checked against everything else (`const`,
    // `enum`, `type`), so `"†state.x && †input.city"` cannot pass
    // `"^†state\\."` on the strength of its first destination, and
    // `†state["safe"].b` is judged as `†state.safe.b` alone or beside
    // others — one rule for one destination and many.
    let each = match destinations.len() {
        0 => None,
        _ => take_pattern(&mut whole),
    };
    let schema = Schema::compile(&whole).map_err(Error::BadToolSchema)?;
    let mut violations = schema.violations(&resolved, CheckMode::Complete);
    if let Some(each) = each {
        let schema = Schema::compile(&each).map_err(Error::BadToolSchema)?;
        for destination in destinations {
            let text = Value::String(destination.to_string());
            for mut violation in schema.violations(&text, CheckMode::Complete) {
                violation.instance_path = "/_outputPath".into();
                violation.message = format!("destination {}", violation.message);
                violations.push(violation);
            }
        }
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(Error::ToolSchema(violations))
    }
}

/// Moves `pattern` out of `properties._outputPath` of `schema` (an object
/// schema after [`admitting_meta_keys`]), returning the schema each single
/// destination must match: that pattern and whatever else `_outputPath`'s
/// schema says of a string, but not `const` or `enum`, which name whole
/// expressions. `None` when `_outputPath` declares no pattern.
fn take_pattern(schema: &mut Value) -> Option<Value> {
    let declared = schema
        .get_mut("properties")?
        .get_mut("_outputPath")?
        .as_object_mut()?;
    let pattern = declared.shift_remove("pattern")?;
    let mut each = declared.clone();
    each.shift_remove("const");
    each.shift_remove("enum");
    each.insert("pattern".into(), pattern);
    Some(Value::Object(each))
}

/// `tool_schema` with every `_`-key of `call` it does not declare added to
/// its `properties` as `true`: accepted, so `additionalProperties` (or
/// `unevaluatedProperties`) cannot reject the engine's keys, while a
/// declared `_outputPath` keeps its constraint.
fn admitting_meta_keys(tool_schema: &Value, call: &Value) -> Value {
    let (Value::Object(schema), Value::Object(call)) = (tool_schema, call) else {
        return tool_schema.clone();
    };
    let mut schema = schema.clone();
    let properties =
        schema.get_or_insert_with("properties".to_owned(), || Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        for key in call.keys().filter(|k| k.starts_with('_')) {
            if !properties.contains_key(key) {
                properties.insert(key.to_owned(), Value::Bool(true));
            }
        }
    }
    Value::Object(schema)
}

/// Writes `outcome` of `call` into `target` (R20–R22): builds the
/// messages, validates them all against the current views (R13) and schemas
/// (R25), and appends them together or not at all. Returns the appended
/// messages (none for a call without `_outputPath`, R21). `target` is a
/// [`Context`](agent_data::Context) in memory, or a stored context
/// (agent-store's `Stored`) whose append is a durable commit.
///
/// # Errors
///
/// Those of [`messages_for`](crate::messages_for); [`Error::Append`] when
/// the append is refused (R13, R25) and [`Error::Store`] when the store
/// fails. Nothing is appended on error.
///
/// ```
/// use agent_data::Context;
/// use agent_output::{apply, Call, Outcome, SystemClock};
/// use agent_core::json;
///
/// let mut ctx = Context::from_json(r#"[{"type":"data","data":{"user":{"name":"Alex","status":"active"}}}]"#)?;
/// let call = Call::parse(json!({"_tool": "updateUserStatus", "_outputPath": "†data.user.status"}))?;
/// apply(&mut ctx, &call, Outcome::Success(json!("inactive")), &SystemClock)?;
/// assert_eq!(ctx.read(&"†data.user.status".parse()?, None), Some(&json!("inactive")));
/// assert_eq!(ctx.read(&"†data.user.name".parse()?, None), Some(&json!("Alex")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply(
    target: &mut (impl Append + ?Sized),
    call: &Call,
    outcome: Outcome,
    clock: &dyn Clock,
) -> Result<Vec<Message>> {
    let messages = messages_for(call, outcome, clock)?;
    if messages.is_empty() {
        return Ok(messages);
    }
    target.append_all(&messages)?;
    Ok(messages)
}
