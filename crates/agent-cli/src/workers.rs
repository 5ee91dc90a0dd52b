//! `agentctx worker` and `agentctx status`: many processes running the
//! newest plan message of a context in PostgreSQL (D41: claims and leases).

use crate::Failure;
use agent_core::json;
use agent_worker::{PlanStatus, Progress, Worker, WorkerOptions};
use std::io::IsTerminal;
use std::time::Duration;

/// The arguments of `agentctx worker`.
#[derive(clap::Args)]
pub(crate) struct WorkerArgs {
    /// The context: a PostgreSQL URL (postgres://…?context=NAME).
    context: String,
    /// NAME=COMMAND: run tool NAME through `sh -c COMMAND` (the resolved
    /// call on stdin, the result as JSON on stdout). At least one.
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
    /// Activities this worker runs at once.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Seconds a claim holds without renewal (renewed every third of it):
    /// when a worker dies, others take its calls over after this.
    #[arg(long, default_value_t = 30.0)]
    lease: f64,
    /// Attempts after the first when an activity fails and its call's
    /// `_outputPath` has no failure outcome, 1 s, 2 s, 4 s, … apart (a
    /// failure it has an outcome for is written at once, as `run` does).
    #[arg(long, default_value_t = 2)]
    retries: u32,
    /// Exit when no call is ready or running (else run until killed).
    #[arg(long)]
    until_idle: bool,
    /// Seconds an activity may run before it and every process it started
    /// are killed.
    #[arg(long, default_value_t = 600)]
    activity_timeout: u64,
    /// The worker's name in `status` (default: host-pid).
    #[arg(long)]
    name: Option<String>,
    /// The write time for `_date` (RFC 3339); default: now.
    #[arg(long)]
    date: Option<String>,
    /// Accepted for symmetry: the summary is JSON already.
    #[arg(long)]
    json: bool,
}

/// The arguments of `agentctx status`.
#[derive(clap::Args)]
pub(crate) struct StatusArgs {
    /// The context: a PostgreSQL URL.
    context: String,
    /// Each call's state too.
    #[arg(long)]
    calls: bool,
    /// Pretty-print the JSON.
    #[arg(long)]
    pretty: bool,
    /// Print the counts as JSON even on a terminal (a pipe gets JSON; a
    /// terminal, a line of counts and, with --calls, a line per call).
    #[arg(long)]
    json: bool,
}

impl StatusArgs {
    /// Whether JSON was asked for even on a terminal.
    pub(crate) fn wants_json(&self) -> bool {
        self.json || self.pretty
    }
}

/// A PostgreSQL CONTEXT, or the error that says why it must be one.
fn postgres_only(command: &str, context: &str) -> Result<(), Failure> {
    if agent_store::is_postgres_url(context) {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "{command} needs a PostgreSQL CONTEXT (postgres://HOST/DB?context=NAME): workers share \
         a plan through the database, and {} is not one",
        agent_core::quoted(&agent_store::without_password(context))
    )))
}

/// Runs a worker; with --until-idle prints what it did and where the plan
/// stands (exit 0 all done, 1 a call failed, 3 calls blocked).
pub(crate) fn worker(args: WorkerArgs) -> Result<String, Failure> {
    postgres_only("worker", &args.context)?;
    if args.activities.is_empty() && args.mcp.is_empty() && args.mcp_http.is_empty() {
        return Err(Failure::usage(
            "worker needs at least one --activity NAME=COMMAND or --mcp COMMAND: a worker with \
             no activities could run nothing",
        ));
    }
    if args.concurrency == 0 {
        return Err(Failure::usage("--concurrency must be at least 1"));
    }
    if !(args.lease.is_finite() && args.lease >= 0.1) {
        return Err(Failure::usage("--lease must be at least 0.1 seconds"));
    }
    // The servers stay alive until this command ends: their tools are activities.
    let (activities, _servers) = crate::activity::activities_with_mcp(
        &args.activities,
        &args.mcp,
        &args.mcp_http,
        args.activity_timeout,
    )?;
    let clock = crate::input::clock(args.date.as_deref())?;
    let mut options = WorkerOptions::new(args.name.unwrap_or_else(default_name));
    options.concurrency = args.concurrency;
    options.lease = Duration::from_secs_f64(args.lease);
    options.retries = args.retries;
    options.until_idle = args.until_idle;
    let name = options.name.clone();
    // On a terminal, one live line of where the plan stands, cleared at
    // the end; without one, nothing (the summary is printed at the end).
    let live = std::io::stderr().is_terminal();
    let mut observe = |p: &Progress| {
        if live {
            eprint!("{}{}", crate::looping::CLEAR, live_line(&name, p));
        }
    };
    let report =
        Worker::new(args.context.clone(), activities, clock, options).run_observed(&mut observe);
    if live {
        eprint!("{}", crate::looping::CLEAR);
    }
    let report = report.map_err(Failure::invalid)?;
    let status = agent_worker::plan_status(&args.context).map_err(Failure::invalid)?;
    let out = json!({"worker": name, "did": report, "plan": status.counts()});
    let text = crate::input::print_value(&out, false);
    exit_for(&status, text)
}

/// `worker NAME: D/T done, R running (H here), Y ready, B blocked, F failed`.
fn live_line(name: &str, progress: &Progress) -> String {
    let plan = &progress.plan;
    format!(
        "worker {name}: {}/{} done, {} running ({} here), {} ready, {} blocked, {} failed",
        plan.done, plan.total, plan.running, progress.here, plan.ready, plan.blocked, plan.failed
    )
}

/// Prints where the newest plan stands.
pub(crate) fn status(args: StatusArgs) -> Result<String, Failure> {
    postgres_only("status", &args.context)?;
    let status = agent_worker::plan_status(&args.context).map_err(Failure::invalid)?;
    Ok(crate::input::print_value(
        &status_json(&status, args.calls),
        args.pretty,
    ))
}

fn exit_for(status: &PlanStatus, text: String) -> Result<String, Failure> {
    match (status.count("failed"), status.count("blocked")) {
        (0, 0) => Ok(text),
        (0, n) => Err(Failure::unresolved(format!("{n} call(s) blocked")).with_stdout(text)),
        (n, _) => Err(Failure::invalid(format!("{n} call(s) failed")).with_stdout(text)),
    }
}

/// The counts, and with `calls` each call's state.
fn status_json(status: &PlanStatus, calls: bool) -> agent_core::json::Value {
    let mut out = json!(status.counts());
    if calls && let Some(fields) = out.as_object_mut() {
        fields.insert("calls".into(), json!(status.calls()));
    }
    out
}

/// `HOST-PID`: unique among live workers.
fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".into());
    format!("{host}-{}", std::process::id())
}
