//! `agentctx apply`: write a call's result (R19–R23), optionally durably (R34).

use crate::Failure;
use crate::input::{json_arg, load_context_file};
use agent_output::{Clock, FixedClock, Outcome, SystemClock};
use std::path::Path;

/// The arguments of `agentctx apply`.
pub(crate) struct ApplyArgs {
    pub(crate) context: String,
    pub(crate) call: String,
    pub(crate) result: Option<String>,
    pub(crate) failure: Option<String>,
    pub(crate) outcome: Option<usize>,
    pub(crate) message: Option<String>,
    pub(crate) date: Option<String>,
    pub(crate) tool_schema: Option<String>,
    pub(crate) write: bool,
}

/// Applies the outcome and prints the appended messages as JSONL.
pub(crate) fn apply(args: ApplyArgs) -> Result<String, Failure> {
    if args.write && args.context == "-" {
        return Err(Failure::usage("--write needs a CONTEXT file, not stdin"));
    }
    let (loaded, format) = load_context_file(&args.context)?;
    let mut context = loaded.context;
    let call = json_arg("CALL", &args.call)?;
    let outcome = outcome(&args)?;
    if let Some(schema) = &args.tool_schema {
        let schema = json_arg("--tool-schema", schema)?;
        agent_output::check_tool_schema(&call, &schema).map_err(Failure::invalid)?;
    }
    let clock: Box<dyn Clock> = match &args.date {
        Some(date) => {
            let time = chrono::DateTime::parse_from_rfc3339(date)
                .map_err(|e| Failure::invalid(format!("--date {date:?} is not RFC 3339: {e}")))?;
            Box::new(FixedClock(time.with_timezone(&chrono::Utc)))
        }
        None => Box::new(SystemClock),
    };
    let appended = agent_output::apply(&mut context, &call, outcome, clock.as_ref())
        .map_err(Failure::invalid)?;
    if args.write && !appended.is_empty() {
        agent_output::save_appended(
            Path::new(&args.context),
            format,
            &context,
            &appended,
            &loaded.warnings,
        )
        .map_err(|e| Failure::invalid(format!("cannot write {}: {e}", args.context)))?;
    }
    Ok(appended
        .iter()
        .map(|m| format!("{}\n", m.to_value()))
        .collect())
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
