//! `agentctx run` and `agentctx demo`: plans executed with activities.

use crate::Failure;
use crate::input::{json_arg, load_context, open_stored};
use agent_core::quoted;
use agent_data::Context;
use agent_output::{Outcome, SystemClock};
use agent_plan::{Activities, Activity, Plan, Report, Status};
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

/// How much of a failed command's stderr its failure value keeps: the end,
/// where the error usually is.
const STDERR_TAIL_BYTES: usize = 2000;

/// An activity that runs a shell command: the resolved call as JSON on
/// stdin, the result as JSON on stdout. A non-zero exit is a failure whose
/// value is `{"exitStatus": N, "stderr": "…"}` (the end of its stderr).
struct ShellActivity {
    tool: String,
    command: String,
}

/// The failure of a command that could not be run at all.
fn not_run(text: String) -> Outcome {
    Outcome::Failure(json!({ "error": text }))
}

impl Activity for ShellActivity {
    fn run(&self, call: &Value) -> Outcome {
        let child = Command::new("sh")
            .args(["-c", &self.command])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => return not_run(format!("cannot start sh: {e}")),
        };
        let input = call.to_string();
        let stdin = child.stdin.take();
        // Write from another thread so a command that prints before reading
        // all its input cannot deadlock against us.
        let writer = std::thread::spawn(move || {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(input.as_bytes());
            }
        });
        let out = match child.wait_with_output() {
            Ok(out) => out,
            Err(e) => return not_run(format!("waiting for the command failed: {e}")),
        };
        let _ = writer.join();
        if !out.status.success() {
            return Outcome::Failure(json!({
                // A command killed by a signal has no exit code.
                "exitStatus": out.status.code(),
                "stderr": tail(&out.stderr, STDERR_TAIL_BYTES),
            }));
        }
        // A command that succeeds may still say something: pass it on,
        // each line marked with the tool it came from.
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            eprintln!("{}: {line}", self.tool);
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.trim().is_empty() {
            return Outcome::Success(Value::Null);
        }
        match serde_json::from_str(&stdout) {
            Ok(value) => Outcome::Success(value),
            Err(e) => Outcome::Failure(json!({
                "exitStatus": 0,
                "error": format!("stdout is not JSON: {e}"),
                "stderr": tail(&out.stderr, STDERR_TAIL_BYTES),
            })),
        }
    }
}

/// The last `max` bytes of `bytes` as text, trimmed, starting at a
/// character boundary; `…` marks a cut.
fn tail(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

/// The arguments of `agentctx run`.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// Context file, or - for stdin (not with --write).
    context: String,
    /// The plan: a JSON array of calls, inline or @path.
    plan: String,
    /// NAME=COMMAND: run tool NAME through `sh -c COMMAND` (the resolved
    /// call on stdin, the result as JSON on stdout). Repeatable.
    #[arg(long = "activity")]
    activities: Vec<String>,
    /// Validate the plan and print its waves and the tools that have no
    /// --activity; run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Append each result to CONTEXT durably as it is written, validated
    /// against the file as it is then (other writers' appends included).
    #[arg(long)]
    write: bool,
    /// The write time for `_date` (RFC 3339); default: now.
    #[arg(long)]
    date: Option<String>,
    /// Pretty-print the JSON.
    #[arg(long)]
    pretty: bool,
}

/// Runs PLAN against CONTEXT and prints the report. Exit 0 when every call
/// is done, 1 when the plan is invalid or a call failed, 3 when calls were
/// only blocked or skipped.
pub(crate) fn run(args: RunArgs) -> Result<String, Failure> {
    let calls = match json_arg("PLAN", &args.plan)? {
        Value::Array(calls) => calls,
        other => {
            return Err(Failure::invalid(format!(
                "PLAN must be a JSON array of calls, found {other}"
            )));
        }
    };
    let plan = Plan::new(calls).map_err(Failure::invalid)?;
    let mut activities = Activities::new();
    for spec in &args.activities {
        let (name, command) = spec.split_once('=').ok_or_else(|| {
            Failure::usage(format!(
                "--activity {}: expected NAME=COMMAND",
                quoted(spec)
            ))
        })?;
        activities.register(
            name,
            ShellActivity {
                tool: name.to_owned(),
                command: command.to_owned(),
            },
        );
    }
    if args.dry_run {
        load_context(&args.context)?;
        let missing = plan.tools_without_activity(&activities);
        return Ok(crate::input::print_value(
            &json!({"waves": plan.waves(), "missingActivities": missing}),
            args.pretty,
        ));
    }
    // With --write, each call's result is committed as it is written, so it
    // is validated against the file as it is then (R34b).
    let clock = crate::input::clock(args.date.as_deref())?;
    let report = if args.write {
        plan.run(
            &mut open_stored(&args.context, false)?,
            &activities,
            clock.as_ref(),
        )
    } else {
        plan.run(
            &mut load_context(&args.context)?,
            &activities,
            clock.as_ref(),
        )
    };
    finish(&report, args.pretty)
}

/// The report on stdout, with the exit status its calls call for.
fn finish(report: &Report, pretty: bool) -> Result<String, Failure> {
    let text = crate::input::print_value(&report.to_json(), pretty);
    let count = |f: fn(&Status) -> bool| report.calls.iter().filter(|c| f(&c.status)).count();
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

const DEMO_CONTEXT: &str = include_str!("../../../examples/moderation/context.jsonl");
const DEMO_PLAN: &str = include_str!("../../../examples/moderation/plan.json");

/// `agentctx demo`: three comments, each its own instance, through a
/// three-step plan with built-in activities; prints the report and what the
/// model would see next.
pub(crate) fn demo() -> Result<String, Failure> {
    let mut context = Context::load(DEMO_CONTEXT.as_bytes(), agent_data::Format::Jsonl)
        .map_err(Failure::invalid)?
        .context;
    let calls: Vec<Value> = serde_json::from_str(DEMO_PLAN).map_err(Failure::invalid)?;
    let plan = Plan::new(calls).map_err(Failure::invalid)?;
    let report = plan.run(&mut context, &demo_activities(), &SystemClock);
    let chat = agent_render::Renderer::new().render(&context, agent_render::RenderMode::Merged);
    let transcript = agent_render::payload(&chat, agent_render::Provider::Text)
        .map_err(Failure::invalid)?
        .to_text(false);
    let waves: Vec<String> = plan.waves().iter().map(|w| format!("{w:?}")).collect();
    Ok(format!(
        "# Plan: {} calls in waves {}\n\n# Report\n{}\n# What the model sees next\n\n{transcript}",
        plan.calls().len(),
        waves.join(" → "),
        crate::input::print_value(&report.to_json(), true),
    ))
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
