//! `agentctx apply`: write a call's result (R19–R23), optionally durably (R34).

use crate::Failure;
use crate::input::{Reading, json_arg, load_context, open_stored};
use crate::keyed::Noting;
use agent_output::{Call, Outcome};
use agent_store::{Append, AppendKey, KeyedAppend};

/// The arguments of `agentctx apply`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("how").required(true).args(["result", "failure", "message"])))]
pub(crate) struct ApplyArgs {
    /// Context file, or - for stdin (not with --write).
    context: String,
    /// The call as the model wrote it: inline JSON, or @path.
    call: String,
    /// The call succeeded with this value (JSON or @path).
    #[arg(long)]
    result: Option<String>,
    /// The call failed with this value (JSON or @path).
    #[arg(long)]
    failure: Option<String>,
    /// Write --result to this outcome (0-based) instead of outcome 0.
    #[arg(long, requires = "result")]
    outcome: Option<usize>,
    /// The activity returned this whole data message, appended as given
    /// (JSON or @path).
    #[arg(long)]
    message: Option<String>,
    /// The write time for `_date` (RFC 3339); default: now.
    #[arg(long)]
    date: Option<String>,
    /// Check the call against this tool schema first (JSON or @path): its
    /// `_` keys as written, its parameters with references resolved.
    #[arg(long)]
    tool_schema: Option<String>,
    /// Also append the messages to CONTEXT: durably, all or none, validated
    /// against the file as it is when they land (other writers' included).
    #[arg(long)]
    write: bool,
    /// With --write: append at most once per KEY (see --help).
    #[arg(long, value_name = "KEY", requires = "write", value_parser = crate::keyed::parse_key,
          long_help = crate::keyed::HELP)]
    key: Option<AppendKey>,
}

/// Applies the outcome and prints the appended messages as JSONL.
pub(crate) fn apply(args: ApplyArgs) -> Result<String, Failure> {
    let call = Call::parse(json_arg("CALL", &args.call)?).map_err(Failure::invalid)?;
    let outcome = outcome(&args)?;
    let tool_schema = match &args.tool_schema {
        Some(schema) => Some(json_arg("--tool-schema", schema)?),
        None => None,
    };
    let clock = crate::input::clock(args.date.as_deref())?;
    // With --write, the append is a commit: validated against the file as it
    // is when the append lands, other writers' appends included (R34b).
    let appended = if args.write {
        let mut stored = open_stored(&args.context, false, Reading::Views)?;
        check_tool_schema(&call, stored.context(), tool_schema.as_ref())?;
        let applied = match &args.key {
            None => agent_output::apply(&mut stored, &call, outcome, clock.as_ref()),
            Some(key) => {
                let mut noting = Noting::new(&mut stored, key)?;
                let applied = agent_output::apply(
                    &mut KeyedAppend::new(&mut noting, key.clone()),
                    &call,
                    outcome,
                    clock.as_ref(),
                );
                noting.report();
                applied
            }
        };
        if applied.is_ok() {
            crate::input::print_head(stored.context());
        }
        applied
    } else {
        let mut context = load_context(&args.context, Reading::Views)?;
        check_tool_schema(&call, &context, tool_schema.as_ref())?;
        agent_output::apply(&mut context, &call, outcome, clock.as_ref())
    }
    .map_err(Failure::invalid)?;
    Ok(appended
        .iter()
        .map(|m| format!("{}\n", m.to_value()))
        .collect())
}

/// The tool schema check (R23), when a schema was given: exit 3 when a
/// parameter's reference is missing, 1 when the call breaks the schema.
fn check_tool_schema(
    call: &Call,
    context: &agent_data::Context,
    schema: Option<&serde_json::Value>,
) -> Result<(), Failure> {
    let Some(schema) = schema else {
        return Ok(());
    };
    agent_output::check_tool_schema(call, context, schema).map_err(|e| match e {
        agent_output::Error::ToolSchemaUnresolved { .. } => Failure::unresolved(e),
        other => Failure::invalid(other),
    })
}

fn outcome(args: &ApplyArgs) -> Result<Outcome, Failure> {
    Ok(match (&args.result, &args.failure, &args.message) {
        (Some(v), None, None) => {
            let value = json_arg("--result", v)?;
            match args.outcome {
                Some(index) => Outcome::Chosen { index, value },
                None => Outcome::Success(value),
            }
        }
        (None, Some(v), None) => Outcome::Failure(json_arg("--failure", v)?),
        (None, None, Some(m)) => Outcome::Message(json_arg("--message", m)?),
        _ => {
            return Err(Failure::usage(
                "give exactly one of --result, --failure, --message",
            ));
        }
    })
}
