//! `agentctx run` and `agentctx demo`: plans executed with activities.

use crate::Failure;
use crate::input::{Reading, json_arg, load_context, open_stored};
use crate::keyed::Noting;
use agent_core::{json, json::Value};
use agent_data::Append as _;
use agent_data::Context;
use agent_output::SystemClock;
use agent_plan::{Activities, Plan, Progress, Report, Status};
use std::io::IsTerminal;

/// The arguments of `agentctx run`.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// Context file or PostgreSQL URL, or - for stdin (not with --write).
    context: String,
    /// The plan: a JSON array of calls, inline or @path.
    plan: String,
    /// NAME=COMMAND: run tool NAME through `sh -c COMMAND` (the resolved
    /// call on stdin, the result as JSON on stdout). Repeatable.
    #[arg(long = "activity")]
    activities: Vec<String>,
    /// 'COMMAND ARGS…' (or 'NAME=COMMAND…'): start this MCP server and run
    /// each of its tools as the activity of that name (NAME.TOOL); the
    /// call's parameters are the tool's arguments. Repeatable.
    #[arg(long = "mcp", value_name = "COMMAND")]
    mcp: Vec<String>,
    /// URL (or NAME=URL): an MCP server over Streamable HTTP, its tools
    /// activities as with --mcp. Repeatable.
    #[arg(long = "mcp-http", value_name = "URL")]
    mcp_http: Vec<String>,
    /// Seconds an activity may run before it and every process it started
    /// are killed (the call fails: "timed out after S s").
    #[arg(long, default_value_t = 600)]
    activity_timeout: u64,
    /// Validate the plan and print its waves and the tools that have no
    /// --activity; run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Append each result to CONTEXT durably as it is written, validated
    /// against the file as it is then (other writers' appends included).
    #[arg(long)]
    write: bool,
    /// With --write: append each call's result at most once, under KEY/call-N
    /// (see --help).
    #[arg(long, value_name = "KEY", requires = "write", value_parser = crate::keyed::parse_key,
          long_help = RUN_KEY_HELP)]
    key: Option<agent_data::AppendKey>,
    /// The write time for `_date` (RFC 3339); default: now.
    #[arg(long)]
    date: Option<String>,
    /// Pretty-print the JSON.
    #[arg(long)]
    pretty: bool,
    /// Print the report as JSON even on a terminal (a pipe gets JSON; a
    /// terminal, a line per call).
    #[arg(long)]
    json: bool,
}

impl RunArgs {
    /// Whether JSON was asked for even on a terminal.
    pub(crate) fn wants_json(&self) -> bool {
        self.json || self.pretty
    }
}

/// Runs PLAN against CONTEXT and prints the report. Exit 0 when every call
/// is done, 1 when the plan is invalid or a call failed, 3 when calls were
/// only blocked or skipped.
pub(crate) fn run(args: RunArgs) -> Result<String, Failure> {
    let calls = match json_arg("PLAN", &args.plan)? {
        Value::Array(calls) => calls.into_vec(),
        other => {
            return Err(Failure::invalid(format!(
                "PLAN must be a JSON array of calls, found {other}"
            )));
        }
    };
    let plan = Plan::new(calls).map_err(Failure::invalid)?;
    for (i, call) in plan.calls().iter().enumerate() {
        crate::hints::check_call(call, &format!("PLAN call {i}"))?;
    }
    // The servers stay alive until this command ends: their tools are activities.
    let (activities, _servers) = crate::activity::activities_with_mcp(
        &args.activities,
        &args.mcp,
        &args.mcp_http,
        args.activity_timeout,
    )?;
    if args.dry_run {
        let warnings =
            warn_literal_references(&plan, &load_context(&args.context, Reading::Views)?);
        let missing = plan.tools_without_activity(&activities);
        let mut dry = json!({"waves": plan.waves(), "missingActivities": missing});
        if !warnings.is_empty() {
            dry["warnings"] = json!(warnings);
        }
        return Ok(crate::input::print_value(&dry, args.pretty));
    }
    // With --write, each call's result is committed as it is written, so it
    // is validated against the file as it is then (R34b).
    let clock = crate::input::clock(args.date.as_deref())?;
    // On a terminal, one live line of the calls' progress, cleared at the end.
    let live = std::io::stderr().is_terminal();
    let mut progress = |p: Progress| {
        if live {
            eprint!(
                "{}run: {} running, {} done, {} waiting",
                crate::looping::CLEAR,
                p.running,
                p.done,
                p.waiting
            );
            if p.running == 0 {
                eprint!("{}", crate::looping::CLEAR);
            }
        }
    };
    let warnings;
    let report = if let Some(key) = &args.key {
        // Every call's key must be valid before anything runs.
        key.derive(&format!("call-{}", plan.calls().len()))
            .map_err(|e| Failure::usage(format!("--key: {e}")))?;
        let mut stored = open_stored(&args.context, false, Reading::Views)?;
        warnings = warn_literal_references(&plan, stored.context());
        let mut noting = Noting::new(&mut stored, key)?;
        let report = plan.run_observed(
            &mut noting,
            &activities,
            clock.as_ref(),
            Some(key),
            &mut progress,
        );
        noting.report();
        crate::input::print_head(stored.context());
        report
    } else if args.write {
        let mut stored = open_stored(&args.context, false, Reading::Views)?;
        warnings = warn_literal_references(&plan, stored.context());
        let report = plan.run_observed(
            &mut stored,
            &activities,
            clock.as_ref(),
            None,
            &mut progress,
        );
        crate::input::print_head(stored.context());
        report
    } else {
        let mut context = load_context(&args.context, Reading::Views)?;
        warnings = warn_literal_references(&plan, &context);
        let before = context.len();
        let report = plan.run_observed(
            &mut context,
            &activities,
            clock.as_ref(),
            None,
            &mut progress,
        );
        // The results were appended to a copy in memory: say so where a
        // person reads it, since the next `view` will not show them.
        if live && context.len() > before {
            eprintln!(
                "(not written: {} message(s) appended in memory only; add --write to save them)",
                context.len() - before
            );
        }
        report
    };
    finish(&report, &warnings, args.pretty)
}

/// A warning for each parameter that looks like a reference missing its
/// `†` and names a value of the context, and for each reference to a kind
/// nothing has or writes: printed on stderr now, and kept for the report.
fn warn_literal_references(plan: &Plan, context: &Context) -> Vec<String> {
    let mut warnings = Vec::new();
    for (i, call) in plan.calls().iter().enumerate() {
        warnings.extend(crate::hints::literal_references(
            call,
            context,
            &format!("PLAN call {i}"),
        ));
    }
    warnings.extend(crate::hints::unknown_kinds(plan.calls(), context));
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    warnings
}

/// What `run --key` says in its help.
const RUN_KEY_HELP: &str = "With --write: append each call's result at most once, under the key \
    KEY/call-N (N: the call's index). Running the plan again with the same KEY after a failure — \
    an append that may have landed — appends nothing already written; the activities still run \
    again (their side effects happen again), and a result already written is reported done. \
    KEY: printable ASCII without spaces; every KEY/call-N at most 128 bytes. Kept 7 days, \
    in PostgreSQL and beside JSONL files (not JSON arrays)";

/// The report on stdout (with the warnings given before the run, when
/// there were any), with the exit status its calls call for.
fn finish(report: &Report, warnings: &[String], pretty: bool) -> Result<String, Failure> {
    let mut shown = json!(report);
    if !warnings.is_empty() {
        shown["warnings"] = json!(warnings);
    }
    let text = crate::input::print_value(&shown, pretty);
    let count = |f: fn(&Status) -> bool| report.calls.iter().filter(|c| f(&c.status)).count();
    // The store failed: nothing after it ran (D42: one readiness rule).
    if let Some(error) = report.calls.iter().find_map(|c| match &c.status {
        Status::Stopped { error } => Some(error),
        _ => None,
    }) {
        return Err(Failure::invalid(format!("the run stopped: {error}")).with_stdout(text));
    }
    let failed = count(|s| matches!(s, Status::Failed { .. }));
    let stuck = count(|s| matches!(s, Status::Blocked { .. } | Status::Skipped { .. }));
    match (failed, stuck) {
        (0, 0) => Ok(text),
        (0, n) => {
            Err(Failure::unresolved(format!("{n} call(s) blocked or skipped")).with_stdout(text))
        }
        (n, _) => Err(Failure::invalid(format!("{n} call(s) failed")).with_stdout(text)),
    }
}

// The demo ships inside this package; examples/moderation/ at the
// repository top holds identical copies for the README (tidy compares them).
const DEMO_CONTEXT: &str = include_str!("../demo/moderation/context.jsonl");
const DEMO_PLAN: &str = include_str!("../demo/moderation/plan.json");

/// The file the demo writes its context to when not told another.
pub(crate) const DEMO_FILE: &str = "agentctx-demo.jsonl";

/// `agentctx demo`: three comments, each its own instance, through a
/// three-step plan with built-in activities; writes the context to `file`,
/// prints the report and what the model would see next, and says how to
/// look at every step.
pub(crate) fn demo(json: bool, file: &std::path::Path) -> Result<String, Failure> {
    let mut context = Context::load(DEMO_CONTEXT.as_bytes(), agent_data::Format::Jsonl)
        .map_err(Failure::invalid)?
        .context;
    let plan = agent_core::json::from_str(DEMO_PLAN).map_err(Failure::invalid)?;
    let calls: Vec<Value> = agent_core::json::from_value(plan).map_err(Failure::invalid)?;
    // The plan is recorded in the context before it runs, as a worker's
    // is: `inspect` shows it, and what each call did, at every point.
    let recorded = agent_data::OpaqueMessage::new(json!({"type": "plan", "calls": calls.clone()}))
        .map_err(Failure::invalid)?;
    context
        .append_all(&[recorded.into()])
        .map_err(Failure::invalid)?;
    let plan = Plan::new(calls).map_err(Failure::invalid)?;
    let report = plan.run(&mut context, &demo_activities(), &SystemClock);
    write_whole(&context, file)?;
    let shown = file.display().to_string();
    let chat = agent_render::Renderer::new().render(&context, agent_render::RenderMode::Merged);
    let transcript = agent_render::payload(&chat, agent_render::PayloadFormat::Text)
        .map_err(Failure::invalid)?
        .to_text(false);
    if json {
        return Ok(crate::input::print_value(
            &json!({
                "plan": {"calls": plan.calls().len(), "waves": plan.waves()},
                "report": report,
                "transcript": transcript,
                "context": shown,
            }),
            false,
        ));
    }
    let waves: Vec<String> = plan.waves().iter().map(|w| format!("{w:?}")).collect();
    let quoted = shell_word(&shown);
    Ok(format!(
        "# Plan: {} calls in waves {}\n\n# Report\n{}\n# What the model sees next\n\n{transcript}\n\
         # Look at every step\n\nThe context ({} messages) is in {shown}. To see its views, its log \
         and the plan after any message, in a browser:\n\n    agentctx inspect {quoted} --open\n",
        plan.calls().len(),
        waves.join(" → "),
        crate::input::print_value(&json!(report), true),
        context.len(),
    ))
}

/// Writes `context` to `file` as JSONL, replacing it whole: the lines go
/// to a new file beside it, synced, then renamed over it, so a reader never
/// sees half of it and a symbolic link planted at `file` is replaced, not
/// followed.
fn write_whole(context: &Context, file: &std::path::Path) -> Result<(), Failure> {
    use std::io::Write as _;
    let fail = |e: std::io::Error| {
        Failure::invalid(format!(
            "cannot write the demo's context to {}: {e}",
            file.display()
        ))
    };
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    let mut out = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    for index in 0..context.len() {
        let line = context.message_json(index).unwrap_or_default();
        writeln!(out, "{line}").map_err(fail)?;
    }
    out.as_file().sync_all().map_err(fail)?;
    out.persist(file).map_err(|e| fail(e.error))?;
    Ok(())
}

/// `text` as one shell word: as is when it needs no quoting.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./+=:@,".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The demo's activities: a keyword classifier, a scorer, and a decision
/// that refuses to decide on personal attacks (a handled failure, written
/// to `†state.escalation`).
fn demo_activities() -> Activities {
    let mut activities = Activities::new();
    activities.register("classify", |call: &Value| {
        let text = call["text"].as_str().unwrap_or_default().to_lowercase();
        let label = if text.contains("buy") || text.contains("cheap") {
            "spam"
        } else if text.contains("idiot") {
            "attack"
        } else {
            "ok"
        };
        Ok(json!(label))
    });
    activities.register("score", |call: &Value| {
        Ok(json!(match call["label"].as_str() {
            Some("spam") => 0.9,
            Some("attack") => 0.8,
            _ => 0.1,
        }))
    });
    activities.register("decide", |call: &Value| {
        if call["label"] == json!("attack") {
            return Err(json!({"reason": "personal attack: a human moderator decides", "score": call["score"]}));
        }
        let remove = call["score"].as_f64().unwrap_or(0.0) >= call["threshold"].as_f64().unwrap_or(0.5);
        Ok(json!(if remove { "remove" } else { "keep" }))
    });
    activities.register("notify", |_: &Value| Ok(Value::Null));
    activities
}
