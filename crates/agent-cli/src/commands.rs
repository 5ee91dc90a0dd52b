//! One function per subcommand; each returns what to print on stdout.

use crate::Failure;
use crate::input::{load_context, print_value};
use agent_core::{Instance, Kind};
use agent_data::CheckMode;
use serde_json::Value;

fn parse_kind(kind: &str) -> Result<Kind, Failure> {
    Kind::new(kind).map_err(Failure::invalid)
}

fn parse_instance(instance: Option<&str>) -> Result<Option<Instance>, Failure> {
    instance
        .map(Instance::new)
        .transpose()
        .map_err(Failure::invalid)
}

/// `agentctx view CONTEXT KIND [--instance ID]`.
pub(crate) fn view(
    context: &str,
    kind: &str,
    instance: Option<&str>,
    pretty: bool,
) -> Result<String, Failure> {
    let ctx = load_context(context)?;
    let kind = parse_kind(kind)?;
    let instance = parse_instance(instance)?;
    let label = match &instance {
        Some(x) => format!("¶{kind}@{x}"),
        None => format!("¶{kind}"),
    };
    if !ctx.has_messages(&kind, instance.as_ref()) {
        return Err(Failure::unresolved(format!(
            "{label}: no message of this kind"
        )));
    }
    match ctx.view(&kind, instance.as_ref()) {
        Some(view) => Ok(print_value(&view, pretty)),
        None => Err(Failure::unresolved(format!(
            "{label}: the view is absent (every write was skipped; run `agentctx check`)"
        ))),
    }
}

/// `agentctx instances CONTEXT`.
pub(crate) fn instances(context: &str) -> Result<String, Failure> {
    let ctx = load_context(context)?;
    let ids = ctx.instances().map(|x| Value::from(x.as_str())).collect();
    Ok(print_value(&Value::Array(ids), false))
}

/// `agentctx check CONTEXT [--complete]`: exit 1 when any problem exists.
pub(crate) fn check(context: &str, complete: bool) -> Result<String, Failure> {
    let ctx = load_context(context)?;
    let mode = if complete {
        CheckMode::Complete
    } else {
        CheckMode::Normal
    };
    let problems = ctx.check(mode);
    if problems.is_empty() {
        return Ok("ok\n".into());
    }
    let report: String = problems.iter().map(|p| format!("{p}\n")).collect();
    // The problems are the output; the `error:` line on stderr summarises.
    Err(Failure::invalid(format!("{} problem(s) found", problems.len())).with_stdout(report))
}
