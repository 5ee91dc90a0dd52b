//! `agentctx apply`: write a call's result (R19–R23), optionally durably (R34).

use crate::Failure;
use crate::input::{Reading, json_arg, load_context, open_stored};
use crate::keyed::Noting;
use agent_data::{Append, AppendKey, KeyedAppend};
use agent_output::{Call, Outcome};

/// The arguments of `agentctx apply`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("how").required(true).args(["result", "result_text", "failure", "message"])))]
pub(crate) struct ApplyArgs {
    /// Context file or PostgreSQL URL, or - for stdin (not with --write).
    context: String,
    /// The call as the model wrote it: inline JSON, or @path.
    call: String,
    /// The call succeeded with this value (JSON or @path: a string needs
    /// its quotes, '"Rome"'; negative numbers as they are, -1).
    #[arg(long, allow_hyphen_values = true)]
    result: Option<String>,
    /// The call succeeded with this text, as a JSON string (no quotes
    /// needed).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    result_text: Option<String>,
    /// The call failed with this value (JSON or @path).
    #[arg(long, allow_hyphen_values = true)]
    failure: Option<String>,
    /// Write --result to this outcome (0-based) instead of outcome 0.
    #[arg(long)]
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
    /// Print the messages as JSONL even on a terminal (a pipe gets JSONL;
    /// a terminal, each message indented).
    #[arg(long)]
    json: bool,
}

impl ApplyArgs {
    /// `apply CONTEXT CALL --result RESULT --write [--key KEY]`: the
    /// arguments `agentctx mcp`'s `apply` tool runs with (CALL and RESULT
    /// as JSON text).
    pub(crate) fn written(
        context: &str,
        call: String,
        result: String,
        key: Option<AppendKey>,
    ) -> ApplyArgs {
        ApplyArgs {
            context: context.to_owned(),
            call,
            result: Some(result),
            result_text: None,
            failure: None,
            outcome: None,
            message: None,
            date: None,
            tool_schema: None,
            write: true,
            key,
            json: true,
        }
    }

    /// Whether JSONL was asked for even on a terminal.
    pub(crate) fn wants_json(&self) -> bool {
        self.json
    }
}

/// Applies the outcome and prints the appended messages as JSONL.
pub(crate) fn apply(args: ApplyArgs) -> Result<String, Failure> {
    let call = Call::parse(json_arg("CALL", &args.call)?).map_err(Failure::invalid)?;
    crate::hints::check_call(&call, "CALL")?;
    let outcome = outcome(&args)?;
    if let Outcome::Message(message) = &outcome {
        let messages = agent_data::Message::from_value(message.clone())
            .map_err(|e| Failure::invalid(format!("--message: {e}")))?;
        crate::hints::check_messages(&messages, "--message")?;
    }
    let tool_schema = match &args.tool_schema {
        Some(schema) => Some(json_arg("--tool-schema", schema)?),
        None => None,
    };
    let clock = crate::input::clock(args.date.as_deref())?;
    // With --write, the append is a commit: validated against the file as it
    // is when the append lands, other writers' appends included (R34b).
    let appended = if args.write {
        let mut stored = open_stored(&args.context, false, Reading::Views)?;
        crate::hints::warn_literal_references(&call, stored.context(), "CALL");
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
        crate::hints::warn_literal_references(&call, &context, "CALL");
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
    schema: Option<&agent_core::json::Value>,
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
    let success = match (&args.result, &args.result_text) {
        (Some(v), None) => Some(value_arg("--result", v)?),
        (None, Some(text)) => Some(agent_core::json::Value::from(text.as_str())),
        (None, None) => None,
        (Some(_), Some(_)) => {
            return Err(Failure::usage("give --result or --result-text, not both"));
        }
    };
    if args.outcome.is_some() && success.is_none() {
        return Err(Failure::usage(
            "--outcome chooses where --result (or --result-text) goes: give one",
        ));
    }
    Ok(match (success, &args.failure, &args.message) {
        (Some(value), None, None) => match args.outcome {
            Some(index) => Outcome::Chosen { index, value },
            None => Outcome::Success(value),
        },
        (None, Some(v), None) => Outcome::Failure(value_arg("--failure", v)?),
        (None, None, Some(m)) => Outcome::Message(json_arg("--message", m)?),
        _ => {
            return Err(Failure::usage(
                "give exactly one of --result, --result-text, --failure, --message",
            ));
        }
    })
}

/// A `--result` or `--failure` value: JSON or @path. Text that is not
/// JSON is most often a string without its quotes, and the error says how
/// to give one.
fn value_arg(what: &str, arg: &str) -> Result<agent_core::json::Value, Failure> {
    json_arg(what, arg).map_err(|failure| {
        if arg.starts_with('@') {
            return failure;
        }
        // Meant as an object or array: quoting it whole would make it a
        // string. Single quotes for double is the common slip.
        if arg.trim_start().starts_with(['{', '[']) {
            let fixed = arg.replace('\'', "\"");
            let hint = if agent_core::json::from_str(&fixed).is_ok() {
                format!(
                    "; JSON quotes keys and strings with \": {what} {}",
                    shell_word(&fixed)
                )
            } else {
                format!("; {what} takes JSON, and this object or array is not valid JSON")
            };
            return Failure::invalid(format!("{}{hint}", failure.message));
        }
        let quoted = agent_core::quoted(arg);
        let text = if what == "--result" {
            format!(" (or --result-text {})", shell_word(arg))
        } else {
            String::new()
        };
        Failure::invalid(format!(
            "{}; a string needs its JSON quotes: {what} {}{text}",
            failure.message,
            shell_word(&quoted)
        ))
    })
}

/// `text` as one shell word: as it is when it is plain, else in single
/// quotes.
fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,:/@%+=".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
