//! `agentctx loop`: the model in the loop (docs/spec.md §12).

use crate::Failure;
use crate::input::{Reading, json_arg, load_context, open_stored, print_value, render_mode};
use agent_core::json::Value;
use agent_loop::{
    Anthropic, Confirm, Event, Finish, Gates, Loop, MAX_ANSWER_BYTES, OpenAi, Provider, Retry,
    RetryNotice, Tool,
};
use agent_output::Call;
use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

/// The arguments of `agentctx loop`.
#[derive(clap::Args)]
pub(crate) struct LoopArgs {
    /// Context file or PostgreSQL URL, or - for stdin (not with --write).
    context: String,
    /// The model, as the provider names it.
    #[arg(long)]
    model: String,
    /// openai (Chat Completions, also local OpenAI-compatible servers) or
    /// anthropic (Messages).
    #[arg(long, default_value = "openai")]
    provider: String,
    /// The server's base URL (default: the provider's own; for a local
    /// server, e.g. http://127.0.0.1:8000/v1).
    #[arg(long)]
    base_url: Option<String>,
    /// More tools: a JSON array of tool schemas, inline or @path; they come
    /// after the context's own tool messages.
    #[arg(long)]
    tools: Option<String>,
    /// The schema the final output must match (JSON or @path).
    #[arg(long)]
    output_schema: Option<String>,
    /// NAME=COMMAND: run tool NAME through `sh -c COMMAND` (the resolved
    /// call on stdin, the result as JSON on stdout). Repeatable; tools
    /// without one are carried out by the model.
    #[arg(long = "activity")]
    activities: Vec<String>,
    /// 'COMMAND ARGS…' (or 'NAME=COMMAND…'): start this MCP server and run
    /// each of its tools as the activity of that name (NAME.TOOL).
    /// Repeatable.
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
    /// Turns before giving up (exit 3).
    #[arg(long, default_value_t = 10)]
    max_turns: u32,
    /// How the context is shown to the model: merged or append.
    #[arg(long, default_value = "merged")]
    mode: String,
    /// The answer's token bound (sent to Anthropic, which requires one).
    #[arg(long, default_value_t = 4096)]
    max_tokens: u32,
    /// Seconds one request may take, its retries and their waits included
    /// (at least 1).
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Calls run from one answer; the rest are refused with one error the
    /// model sees.
    #[arg(long, default_value_t = 10_000)]
    max_calls: usize,
    /// Activities of one answer run at once (their results are written in
    /// the answer's dependency order whatever order they finish in).
    #[arg(long, default_value_t = 8)]
    parallel: usize,
    /// Let the model's calls name instances the context does not have yet
    /// (by default a call may name only existing ones).
    #[arg(long)]
    new_instances: bool,
    /// The most bytes of a response read; a larger one ends the run with
    /// an error, unread past the limit.
    #[arg(long, default_value_t = MAX_ANSWER_BYTES)]
    max_answer_bytes: u64,
    /// Ask for each answer whole instead of streamed (for a server that
    /// mishandles streaming).
    #[arg(long)]
    no_stream: bool,
    /// Ask on the terminal before each ready call runs: run it, skip it,
    /// or type the call to run instead (needs stdin to be a terminal).
    /// Answers are then asked for whole, as with --no-stream.
    #[arg(long)]
    confirm: bool,
    /// Append each turn's messages to CONTEXT durably as they are written.
    #[arg(long)]
    write: bool,
    /// The write time for `_date` (RFC 3339); default: now.
    #[arg(long)]
    date: Option<String>,
    /// Print `{"finished":BOOL,"output":V,"turns":[{"turn","callsRun",
    /// "errors","tokensSent"},…],"waiting":[{"gate","tools"},…],
    /// "rejected":[…]}` instead of the output alone (the exit status is
    /// the same).
    #[arg(long)]
    json: bool,
    /// Pretty-print the JSON.
    #[arg(long)]
    pretty: bool,
}

/// Runs the loop and prints the final output; exit 3 when the turns ran
/// out first, 4 when it stopped with only calls waiting at approval gates,
/// 1 when a request failed. The gates left are named on stderr.
pub(crate) fn run_loop(args: LoopArgs) -> Result<String, Failure> {
    if args.confirm && !std::io::stdin().is_terminal() {
        return Err(Failure::usage(
            "--confirm asks about each call on a terminal, and stdin is not one: run it from a terminal, or leave --confirm out",
        ));
    }
    if args.max_turns == 0 {
        return Err(Failure::usage("--max-turns must be at least 1"));
    }
    if args.timeout == 0 {
        return Err(Failure::usage(
            "--timeout must be at least 1 (seconds for a request and its retries)",
        ));
    }
    if args.max_answer_bytes == 0 {
        return Err(Failure::usage("--max-answer-bytes must be at least 1"));
    }
    // The servers stay alive until this command ends: their tools are activities.
    let (activities, servers) = crate::activity::activities_with_mcp(
        &args.activities,
        &args.mcp,
        &args.mcp_http,
        args.activity_timeout,
    )?;
    let mut settings = Loop::new(args.model.as_str());
    settings.max_turns = args.max_turns;
    settings.mode = render_mode(&args.mode)?;
    settings.max_tokens = args.max_tokens;
    if args.max_calls == 0 {
        return Err(Failure::usage("--max-calls must be at least 1"));
    }
    settings.max_calls = args.max_calls;
    if args.parallel == 0 {
        return Err(Failure::usage("--parallel must be at least 1"));
    }
    settings.parallel = args.parallel;
    settings.new_instances = args.new_instances;
    if let Some(tools) = &args.tools {
        let Value::Array(tools) = json_arg("--tools", tools)? else {
            return Err(Failure::invalid(
                "--tools must be a JSON array of tool schemas",
            ));
        };
        for (i, tool) in tools.into_iter().enumerate() {
            settings
                .tools
                .push(Tool::new(tool, &format!("--tools tool {i}")).map_err(Failure::invalid)?);
        }
    }
    // An MCP server's tools are offered to the model as `--tools` entries are.
    for (i, schema) in servers.iter().flat_map(|s| s.schemas.iter()).enumerate() {
        settings
            .tools
            .push(Tool::new(schema.clone(), &format!("--mcp tool {i}")).map_err(Failure::invalid)?);
    }
    if let Some(schema) = &args.output_schema {
        settings.output_schema = Some(json_arg("--output-schema", schema)?);
    }
    let provider = provider(&args)?;
    let clock = crate::input::clock(args.date.as_deref())?;
    let live = std::io::stderr().is_terminal();
    let mut sent = 0;
    let mut turns: Vec<Value> = Vec::new();
    let mut progress = |event: Event<'_>| match event {
        Event::Asking { turn } if live => {
            eprint!("{CLEAR}turn {turn}: asking the model ({sent} tokens sent so far)")
        }
        Event::Calls {
            turn,
            running,
            done,
            waiting,
        } if live => eprint!(
            "{CLEAR}turn {turn}: {running} running, {done} done, {waiting} waiting ({sent} tokens sent so far)"
        ),
        Event::Carried { calls_run, errors } => eprintln!(
            "{}carried plan: {calls_run} call(s) run, {errors} error(s)",
            if live { CLEAR } else { "" }
        ),
        Event::TurnEnded(turn) => {
            sent += turn.tokens_sent;
            turns.push(agent_core::json!({
                "turn": turn.turn,
                "callsRun": turn.calls_run,
                "errors": turn.errors,
                "tokensSent": turn.tokens_sent,
            }));
            eprintln!(
                "{}turn {}: {} call(s) run, {} error(s), {} tokens sent",
                if live { CLEAR } else { "" },
                turn.turn,
                turn.calls_run,
                turn.errors,
                turn.tokens_sent
            );
        }
        _ => {}
    };
    let mut ask = |call: &Call| ask(call, live);
    let mut run_all = |_: &Call| Confirm::Run;
    let confirm: &mut dyn FnMut(&Call) -> Confirm =
        if args.confirm { &mut ask } else { &mut run_all };
    let finish = if args.write {
        let mut stored = open_stored(&args.context, false, Reading::Whole)?;
        settings.run_confirmed(
            provider.as_ref(),
            &activities,
            &mut stored,
            clock.as_ref(),
            &mut progress,
            confirm,
        )
    } else {
        let mut context = load_context(&args.context, Reading::Whole)?;
        settings.run_confirmed(
            provider.as_ref(),
            &activities,
            &mut context,
            clock.as_ref(),
            &mut progress,
            confirm,
        )
    };
    if live && finish.is_err() {
        // The live line ends where the error begins.
        eprint!("{CLEAR}");
    }
    let report = finish.map_err(Failure::invalid)?;
    print_gates(&report.gates);
    let (output, unfinished) = match report.finish {
        Finish::Output(output) => (output, None),
        Finish::Unfinished { turns } => (
            Value::Null,
            Some(Failure::unresolved(format!(
                "unfinished: no final output after {turns} turn(s)"
            ))),
        ),
        Finish::Waiting { turns } => (
            Value::Null,
            Some(Failure::waiting(format!(
                "waiting for approval after {turns} turn(s): only calls held at approval gates remain; write each gate (true runs its calls, false rejects them), e.g. agentctx apply CONTEXT '{{\"_tool\":\"approve\",\"_outputPath\":\"†state.approvals.NAME\"}}' --result true --write, then run the loop again"
            ))),
        ),
    };
    let text = if args.json {
        let gates = report.gates.to_json();
        let summary = agent_core::json!({
            "finished": unfinished.is_none(),
            "output": output,
            "turns": turns,
            "waiting": gates["waiting"],
            "rejected": gates["rejected"],
        });
        print_value(&summary, args.pretty)
    } else if unfinished.is_none() {
        print_value(&output, args.pretty)
    } else {
        String::new()
    };
    match unfinished {
        None => Ok(text),
        Some(failure) => Err(failure.with_stdout(text)),
    }
}

/// Names each approval gate once on stderr, with the tools it holds or
/// rejected.
fn print_gates(gates: &Gates) {
    for gate in &gates.waiting {
        eprintln!("waiting for approval: {gate}");
    }
    for gate in &gates.rejected {
        eprintln!("rejected: {gate} (not run)");
    }
}

/// `--confirm`: asks on the terminal whether `call` runs, is skipped, or
/// is replaced by a call typed as one line of JSON. End of input skips.
fn ask(call: &Call, live: bool) -> Confirm {
    let mut stderr = std::io::stderr();
    let clear = if live { CLEAR } else { "" };
    let _ = writeln!(stderr, "{clear}ready: {}", call.as_value());
    let mut lines = std::io::stdin().lock();
    loop {
        let _ = write!(stderr, "run it? [y]es, [n]o (skip), [e]dit: ");
        let _ = stderr.flush();
        let mut answer = String::new();
        if lines.read_line(&mut answer).unwrap_or(0) == 0 {
            return Confirm::Skip;
        }
        match answer.trim() {
            "y" | "yes" | "" => return Confirm::Run,
            "n" | "no" => return Confirm::Skip,
            "e" | "edit" => {
                let _ = write!(stderr, "the call to run instead, as one line of JSON: ");
                let _ = stderr.flush();
                let mut typed = String::new();
                if lines.read_line(&mut typed).unwrap_or(0) == 0 {
                    return Confirm::Skip;
                }
                match agent_core::json::from_str(typed.trim())
                    .map_err(|e| e.to_string())
                    .and_then(|v| Call::parse(v).map_err(|e| e.to_string()))
                {
                    Ok(edited) => return Confirm::Edit(edited),
                    Err(error) => {
                        let _ = writeln!(stderr, "not a call ({error}); asked again");
                    }
                }
            }
            _ => {}
        }
    }
}

/// Back to the line's start, the line cleared: a live line is rewritten
/// in place on a terminal.
pub(crate) const CLEAR: &str = "\r\x1b[2K";

/// The provider `--provider` names, with its key from the environment
/// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`; unset or empty: no key header,
/// refused for the provider's own server), streaming unless `--no-stream`.
fn provider(args: &LoopArgs) -> Result<Box<dyn Provider>, Failure> {
    let key = |name: &str| std::env::var(name).ok().filter(|k| !k.is_empty());
    let timeout = Duration::from_secs(args.timeout);
    let retry = Retry::default();
    // A question waiting on a person, asked while the answer streams,
    // would hold the stream open against its deadline (D77: calls start while streaming).
    let streamed = !args.no_stream && !args.confirm;
    Ok(match args.provider.as_str() {
        "openai" => Box::new(
            OpenAi::new(
                args.base_url.as_deref().unwrap_or(OpenAi::BASE_URL),
                key("OPENAI_API_KEY"),
                timeout,
                retry,
            )
            .map_err(Failure::invalid)?
            .max_answer_bytes(args.max_answer_bytes)
            .stream(streamed)
            .on_retry(print_retry),
        ),
        "anthropic" => Box::new(
            Anthropic::new(
                args.base_url.as_deref().unwrap_or(Anthropic::BASE_URL),
                key("ANTHROPIC_API_KEY"),
                timeout,
                retry,
            )
            .map_err(Failure::invalid)?
            .max_answer_bytes(args.max_answer_bytes)
            .stream(streamed)
            .on_retry(print_retry),
        ),
        other => {
            return Err(Failure::usage(format!(
                "unknown provider {}: expected openai or anthropic",
                agent_core::quoted(other)
            )));
        }
    })
}

/// One line on stderr per retry, so a long wait is never silent. The
/// error's text is the library's, with the server's words quoted and no
/// secret in its URL.
fn print_retry(notice: &RetryNotice<'_>) {
    let wait = seconds(notice.wait);
    let then = if notice.asked {
        format!("the server asks to wait {wait} s (Retry-After)")
    } else {
        format!("trying again in {wait} s")
    };
    let clear = if std::io::stderr().is_terminal() {
        CLEAR
    } else {
        ""
    };
    eprintln!(
        "{clear}retry: attempt {} of {} failed ({}); {then}",
        notice.attempt, notice.attempts, notice.error
    );
}

/// `d` in seconds as printed: `3`, `0.25`.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        return d.as_secs().to_string();
    }
    let text = format!("{:.3}", d.as_secs_f64());
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
