//! One function per subcommand; each returns what to print on stdout.

use crate::Failure;
use crate::input::{
    Reading, json_arg, load_context, missing_list, print_value, stream_value, syntax_failure,
};
use agent_core::{Instance, Kind};

use agent_data::{CheckMode, Context};

fn parse_kind(kind: &str) -> Result<Kind, Failure> {
    Kind::new(kind).map_err(Failure::invalid)
}

fn parse_instance(ctx: &Context, instance: Option<&str>) -> Result<Option<Instance>, Failure> {
    // Reading in an instance that has no message is allowed (R5: the global
    // layers show through), but it is most likely a typo: the warning says
    // so and names the instances there are.
    crate::hints::instance_arg(ctx, instance)
}

/// CONTEXT as `--at K` asks (R34f): as it was after its first K
/// messages, which needs them all held, so the whole log is read; without
/// `--at`, the views as they are now.
pub(crate) fn load_at(context: &str, at: Option<usize>) -> Result<Context, Failure> {
    match at {
        None => load_context(context, Reading::Views),
        Some(k) => load_context(context, Reading::Whole)?
            .prefix(k)
            .map_err(|e| Failure::invalid(format!("--at {k}: {e}"))),
    }
}

/// `agentctx view CONTEXT KIND [--instance ID] [--at K]`.
pub(crate) fn view(
    context: &str,
    kind: &str,
    instance: Option<&str>,
    at: Option<usize>,
    pretty: bool,
) -> Result<String, Failure> {
    let ctx = load_at(context, at)?;
    let kind = parse_kind(kind)?;
    let instance = parse_instance(&ctx, instance)?;
    let label = match &instance {
        Some(x) => format!("¶{kind}@{x}"),
        None => format!("¶{kind}"),
    };
    if !ctx.has_messages(&kind, instance.as_ref()) {
        return Err(Failure::unresolved(format!(
            "{label}: no message of this kind{}",
            crate::hints::kind_hint(&ctx, &kind)
        )));
    }
    // The value is printed as the log folds it; that it breaks its schema
    // is said beside it, as `check` says it.
    for problem in ctx.check_layer_of(&kind, instance.as_ref(), CheckMode::Normal) {
        if matches!(problem, agent_data::Problem::Schema { .. }) {
            eprintln!("warning: {problem}");
        }
    }
    match ctx.view(&kind, instance.as_ref()) {
        Some(view) => Ok(stream_value(view, pretty)),
        None => Err(Failure::unresolved(format!(
            "{label}: the view is absent (erased, or every write was skipped: `agentctx check` lists those)"
        ))),
    }
}

/// `agentctx resolve CONTEXT EXPR [--instance ID] [--at K]`: an
/// expression prints its value, or exits 3 listing what is missing (R17).
pub(crate) fn resolve(
    context: &str,
    expr: &str,
    instance: Option<&str>,
    at: Option<usize>,
    pretty: bool,
) -> Result<String, Failure> {
    let ctx = load_at(context, at)?;
    let instance = parse_instance(&ctx, instance)?;
    // `resolve` evaluates an expression; plain text is a slip (a forgotten
    // `†`), not a value to echo back, and the parser's error says so.
    let expression = agent_vars::Expression::parse(expr).map_err(|e| syntax_failure("", &e))?;
    let scope = agent_vars::Scope::new(&ctx, instance.as_ref());
    match expression.evaluate(&scope) {
        agent_vars::Evaluation::Value(value) => Ok(print_value(&value, pretty)),
        agent_vars::Evaluation::Unresolved(missing) => Err(Failure::unresolved(format!(
            "unresolved: not present: {}",
            missing_list(&missing)
        ))),
    }
}

/// `agentctx resolve-call CONTEXT CALL`: the resolved call, or exit 3
/// listing the missing references (R18).
pub(crate) fn resolve_call(context: &str, call: &str, pretty: bool) -> Result<String, Failure> {
    let ctx = load_context(context, Reading::Views)?;
    let call = json_arg("CALL", call)?;
    // A call that does not parse is judged by the resolution below, as before.
    if let Ok(parsed) = agent_output::Call::parse(call.clone()) {
        crate::hints::check_call(&parsed, "CALL")?;
        crate::hints::warn_literal_references(&parsed, &ctx, "CALL");
    }
    match agent_vars::resolve_call(&call, &ctx) {
        Ok(agent_vars::Resolution::Ready(resolved)) => Ok(print_value(&resolved, pretty)),
        Ok(agent_vars::Resolution::Pending(missing)) => Err(Failure::unresolved(format!(
            "pending: not present: {}",
            missing_list(&missing)
        ))),
        Err(agent_vars::Error::Syntax { at, error }) => {
            Err(syntax_failure(&format!("CALL at {at}: "), &error))
        }
        Err(other) => Err(Failure::invalid(other)),
    }
}

/// `agentctx render CONTEXT [--provider P] [--mode M] [--tokens]` (R28–R31).
pub(crate) fn render(
    context: &str,
    provider: &str,
    mode: &str,
    tokens: bool,
    pretty: bool,
) -> Result<String, Failure> {
    let provider: agent_render::PayloadFormat = provider.parse().map_err(Failure::usage)?;
    let mode = crate::input::render_mode(mode)?;
    let ctx = load_context(context, Reading::Whole)?;
    let chat = agent_render::Renderer::new().render(&ctx, mode);
    let payload = agent_render::payload(&chat, provider).map_err(Failure::invalid)?;
    let mut text = payload.to_text(pretty);
    if tokens {
        eprintln!("tokens: {} (o200k_base)", agent_render::count_tokens(&text));
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// `agentctx instances CONTEXT [--aliases]`.
pub(crate) fn instances(context: &str, aliases: bool, as_text: bool) -> Result<String, Failure> {
    let ctx = load_context(context, Reading::Views)?;
    if aliases {
        let known: Vec<&Instance> = ctx.instances().collect();
        let map: agent_core::json::Map = known
            .iter()
            .map(|x| {
                let alias = crate::hints::alias(x.as_str(), &known);
                (
                    x.as_str().to_owned(),
                    alias.unwrap_or_else(|| x.as_str().to_owned()).into(),
                )
            })
            .collect();
        return Ok(print_value(&agent_core::json::Value::Object(map), false));
    }
    // Streamed to a pipe; kept whole for the text a terminal gets.
    let listed = if as_text {
        print_value(&agent_core::json!(Ids(&ctx)), false)
    } else {
        stream_value(&Ids(&ctx), false)
    };
    crate::input::drop_aside(ctx);
    Ok(listed)
}

/// A context's instance ids as a JSON array, serialised from the context.
struct Ids<'a>(&'a Context);

impl serde::Serialize for Ids<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.instances().map(|x| x.as_str()))
    }
}

/// `agentctx check CONTEXT [--complete] [--json]`: exit 1 when any
/// problem exists.
pub(crate) fn check(context: &str, complete: bool, json: bool) -> Result<String, Failure> {
    let ctx = load_context(context, Reading::Whole)?;
    let mode = if complete {
        CheckMode::Complete
    } else {
        CheckMode::Normal
    };
    let problems = ctx.check(mode);
    if json {
        let texts: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let text = print_value(
            &agent_core::json!({"ok": texts.is_empty(), "problems": texts}),
            false,
        );
        return match texts.len() {
            0 => Ok(text),
            n => Err(Failure::invalid(format!("{n} problem(s) found")).with_stdout(text)),
        };
    }
    if problems.is_empty() {
        return Ok("ok\n".into());
    }
    let report: String = problems.iter().map(|p| format!("{p}\n")).collect();
    // The problems are the output; the `error:` line on stderr summarises.
    Err(Failure::invalid(format!("{} problem(s) found", problems.len())).with_stdout(report))
}

/// `verify`: the chain recomputed and every recorded digest compared; the
/// report on stdout, exit 1 when something does not match. With `chain`,
/// the lines are hashed as stored where the store can tell they may be
/// (D111: verify at hashing speed).
pub(crate) fn verify(
    context: &str,
    expect: Option<&str>,
    chain: bool,
    pretty: bool,
) -> Result<String, Failure> {
    let expected = expect
        .map(str::parse::<agent_data::Digest>)
        .transpose()
        .map_err(|e| Failure::usage(format!("--expect: {e}")))?;
    let mut verified = if context == "-" {
        agent_store::Verified::of("-", &load_context(context, Reading::Whole)?)
    } else {
        let mut store = crate::input::open_store(context)?;
        match chain {
            true => store.verify_chain(),
            false => store.verify(),
        }
        .map_err(Failure::invalid)?
    };
    if let Some(expected) = expected {
        verified.expect(expected);
    }
    let text = print_value(&agent_core::json!(verified), pretty);
    match verified.findings.len() {
        0 => Ok(text),
        n => Err(
            Failure::invalid(format!("{n} finding(s): {}", verified.findings[0])).with_stdout(text),
        ),
    }
}
