//! Validating and appending a call's result (R20, R23).

use crate::{Clock, Error, Outcome, Result, messages_for};
use agent_data::{CheckMode, Message, Schema};
use agent_store::Append;
use serde_json::Value;

/// Checks a call — `_outputPath` included — against its tool's schema (R23).
///
/// ```
/// use agent_output::check_tool_schema;
/// use serde_json::json;
/// let schema = json!({"properties": {"_outputPath": {"type": "string", "pattern": "^†"}}});
/// assert!(check_tool_schema(&json!({"_outputPath": "†state.x"}), &schema).is_ok());
/// assert!(check_tool_schema(&json!({"_outputPath": "state.x"}), &schema).is_err());
/// ```
pub fn check_tool_schema(call: &Value, tool_schema: &Value) -> Result<()> {
    let schema = Schema::compile(tool_schema).map_err(Error::BadToolSchema)?;
    let violations = schema.violations(call, CheckMode::Complete);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(Error::ToolSchema(violations))
    }
}

/// Writes `outcome` of `call` into `target` (R20–R22): builds the
/// messages, validates them all against the current views (R13) and schemas
/// (R25), and appends them together or not at all. Returns the appended
/// messages (none for a call without `_outputPath`, R21). `target` is a
/// [`Context`](agent_data::Context) in memory, or a stored context
/// ([`agent_store::Stored`]) whose append is a durable commit.
///
/// ```
/// use agent_data::Context;
/// use agent_output::{apply, Outcome, SystemClock};
/// use serde_json::json;
///
/// let mut ctx = Context::from_json(r#"[{"type":"data","data":{"user":{"name":"Alex","status":"active"}}}]"#)?;
/// let call = json!({"_tool": "updateUserStatus", "_outputPath": "†data.user.status"});
/// apply(&mut ctx, &call, Outcome::Success(json!("inactive")), &SystemClock)?;
/// assert_eq!(ctx.read(&"†data.user.status".parse()?, None), Some(&json!("inactive")));
/// assert_eq!(ctx.read(&"†data.user.name".parse()?, None), Some(&json!("Alex")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply(
    target: &mut (impl Append + ?Sized),
    call: &Value,
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
