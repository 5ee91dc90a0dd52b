//! `agentctx`: inspect and drive agent contexts from the shell (docs/spec.md
//! §10 is its contract).
//!
//! Exit status: 0 success, 1 invalid input, 2 usage error, 3 unresolved.
//! Errors go to stderr as `error: …`.
#![forbid(unsafe_code)]

mod activity;
mod apply;
mod commands;
mod hints;
mod input;
mod inspect;
mod keyed;
mod log;
mod looping;
mod mcp;
mod readable;
mod run;
mod workers;
mod write;

use clap::{CommandFactory, Parser, Subcommand};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Structured, append-only working memory for LLM agents.
///
/// A CONTEXT is a file (.jsonl, or a .json array) or a PostgreSQL URL
/// (postgres://…?context=NAME). Exit status: 0 success, 1 invalid input,
/// 2 usage error, 3 unresolved (nothing there yet). The rules every command
/// follows are in docs/spec.md; docs/concepts.md is a guided tour.
#[derive(Parser)]
#[command(name = "agentctx", version)]
struct Cli {
    /// After a write, print the context's head on stderr — `head: HEX (N
    /// messages)`, the digest of its chain — to keep where its
    /// writers cannot reach and check later with `verify --expect HEX`.
    #[arg(long, global = true)]
    head: bool,
    /// Admit KEY, a `_` key of your own, in the calls and messages given to
    /// apply, append, run and resolve-call (repeatable). Any other `_` key
    /// the engine does not read is refused as a typo, naming the key most
    /// likely meant (`_outputpath`: did you mean `_outputPath`?). A model's
    /// calls in `loop` may use the `_` keys their tool's schema declares.
    #[arg(long = "allow-key", value_name = "KEY", global = true)]
    allow_keys: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a bundled example end to end: three comments, each its own
    /// instance, through a three-step plan; write its context to a file,
    /// print the report and what the model would see next, and say how to
    /// inspect every step.
    Demo {
        /// Print one JSON object instead: `{"plan":{"calls","waves"},
        /// "report","transcript","context"}`.
        #[arg(long)]
        json: bool,
        /// The JSONL file the context is written to (replaced whole).
        #[arg(long, default_value = run::DEMO_FILE)]
        context: std::path::PathBuf,
    },
    /// Run a plan of calls in dependency order (exit 0 all done, 1 invalid
    /// or a call failed, 3 calls blocked or skipped).
    Run(run::RunArgs),
    /// Let a model work on the context: send it the context and the tools,
    /// run the calls it answers with, show it what failed, and repeat until
    /// it gives its final output (printed; exit 3 when the turns run out, 4
    /// when only calls waiting at approval gates remain). A run starts with
    /// the calls the carried plan still owes.
    Loop(looping::LoopArgs),
    /// Run the newest plan message of a PostgreSQL context together with
    /// any number of other workers: claim ready calls, run their
    /// activities, write each call's result once.
    Worker(workers::WorkerArgs),
    /// Serve a read-only JSON API (and a small page) about CONTEXT on
    /// 127.0.0.1: its log, its views at any point, and an event when it
    /// grows. Prints the URL first, then serves until killed.
    Inspect(inspect::InspectArgs),
    /// Serve CONTEXT over the Model Context Protocol on stdio: tools (view,
    /// resolve, instances, apply, append, render, verify, log), resources
    /// (agentctx://log, agentctx://view/KIND) with subscriptions, and the
    /// prompt `context`.
    Mcp(mcp::McpArgs),
    /// Print where the newest plan of a PostgreSQL context stands: counts
    /// of done, running, ready, blocked and failed calls.
    Status(workers::StatusArgs),
    /// Print the view of KIND: its messages folded into one value (with
    /// --instance, the instance's layer over the global one); exit 3 when
    /// no message of KIND is there.
    View {
        /// Context file (.jsonl or .json array) or PostgreSQL URL, or - for stdin.
        context: String,
        /// The kind to view.
        kind: String,
        /// Read for this instance: its layer over the global one.
        #[arg(long)]
        instance: Option<String>,
        /// Read the context as it was after its first K messages (0: the
        /// empty context), numbered as `verify` counts them.
        #[arg(long, value_name = "K")]
        at: Option<usize>,
        /// Pretty-print the JSON.
        #[arg(long)]
        pretty: bool,
    },
    /// Evaluate an expression such as '†input.name || †state.name' and
    /// print its value; exit 3 when nothing it names is there.
    Resolve {
        /// Context file or PostgreSQL URL, or - for stdin.
        context: String,
        /// The expression, e.g. '†input.name || †state.name'.
        expr: String,
        /// Read for this instance.
        #[arg(long)]
        instance: Option<String>,
        /// Read the context as it was after its first K messages (0: the
        /// empty context), numbered as `verify` counts them.
        #[arg(long, value_name = "K")]
        at: Option<usize>,
        /// Pretty-print the JSON.
        #[arg(long)]
        pretty: bool,
    },
    /// Replace the references in a call's parameters by their values,
    /// reading in the call's `_instance`; exit 3 while one is missing.
    ResolveCall {
        /// Context file or PostgreSQL URL, or - for stdin.
        context: String,
        /// The call: inline JSON, or @path to read a file.
        call: String,
        /// Pretty-print the JSON.
        #[arg(long)]
        pretty: bool,
    },
    /// Record a call's result where its `_outputPath` says, with its
    /// `_outputMethod` (set, merge, assign, push, concat, or erase: the
    /// path then reads absent and the result is not kept), and print the
    /// messages that records as JSONL.
    Apply(apply::ApplyArgs),
    /// Append messages to CONTEXT: validated against it as it is when they
    /// land, all or none, durably; a missing CONTEXT is created.
    Append {
        /// Context file or PostgreSQL URL (created by the first append).
        context: String,
        /// JSON message objects, JSON arrays of them, or @files holding a
        /// JSON array or JSONL: all appended as one batch, all or none.
        #[arg(required = true, num_args = 1..)]
        messages: Vec<String>,
        #[arg(long, value_name = "KEY", value_parser = keyed::parse_key, long_help = keyed::HELP)]
        /// Append at most once per KEY (see --help).
        key: Option<agent_data::AppendKey>,
        /// Append only to a context that holds no messages (else append
        /// nothing, and say so): a setup step that can be run again.
        #[arg(long, conflicts_with = "key")]
        if_empty: bool,
        /// Also print what happened as JSON on stdout: `{"name",
        /// "appended", "length", "head", "keptOut"}` (stderr says it as
        /// text either way).
        #[arg(long)]
        json: bool,
    },
    /// Copy every message of FROM into TO, which must be missing or empty;
    /// every field, key order and number arrives as it was.
    Copy {
        /// The context to read, or - for stdin.
        from: String,
        /// The context to write: missing or empty.
        to: String,
    },
    /// Print what the model sees: the context as chat messages, in a
    /// provider's payload format.
    Render {
        /// Context file or PostgreSQL URL, or - for stdin.
        context: String,
        /// plain, openai, anthropic or text.
        #[arg(long, default_value = "plain")]
        provider: String,
        /// merged (one block per layer) or append (one block per write).
        #[arg(long, default_value = "merged")]
        mode: String,
        /// Also print the payload's token count (o200k_base) on stderr.
        #[arg(long)]
        tokens: bool,
        /// Pretty-print JSON payloads.
        #[arg(long)]
        pretty: bool,
    },
    /// Put each input into a new instance of its own: one `input` message
    /// per input, with fresh ids; print the messages as JSONL.
    Assign {
        /// Context file or PostgreSQL URL, or - for stdin (not with --write).
        context: String,
        /// A JSON array of inputs, inline or @path.
        inputs: String,
        /// Also append the messages: the ids are chosen against the context
        /// as it is when they land, so concurrent assigners never share an
        /// instance; a missing CONTEXT is created.
        #[arg(long)]
        write: bool,
    },
    /// Print the instance ids, in order of first appearance: one a line on
    /// a terminal, a JSON array to a pipe or with --json.
    Instances {
        /// Context file or PostgreSQL URL, or - for stdin.
        context: String,
        /// Print a JSON object instead: each id with the ASCII alias it can
        /// be typed as (`#1`…`#50` for ①…㊿), or itself when it has none.
        #[arg(long)]
        aliases: bool,
        /// Print the JSON array even on a terminal.
        #[arg(long)]
        json: bool,
    },
    /// Print the log's messages a page at a time (50 by default), each as
    /// `#INDEX` and its compact JSON; the next page's start goes to stderr.
    Log {
        /// Context file or PostgreSQL URL, or - for stdin.
        context: String,
        /// The index of the first message to look at.
        #[arg(long, default_value_t = 0)]
        from: usize,
        /// The most messages to print (1 to 500).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=500))]
        limit: u64,
        /// Only data messages of this kind.
        #[arg(long)]
        kind: Option<String>,
        /// Only messages of this instance.
        #[arg(long)]
        instance: Option<String>,
        /// Print the page as one JSON object instead (`messages`, each with
        /// its `index`; `next`, where the next page starts; `total`).
        #[arg(long)]
        json: bool,
    },
    /// Read the whole log, recompute its chain of digests and compare every
    /// digest recorded beside it (snapshots, rows); print the head and what
    /// does not match (exit 1 when anything). Never repairs.
    Verify {
        /// Context file or PostgreSQL URL, or - for stdin (then only the head).
        context: String,
        /// The head digest (64 hex digits) kept from an earlier `verify` or
        /// write, somewhere the log's writers cannot reach: a log with any
        /// other head is a finding.
        #[arg(long, value_name = "HEAD")]
        expect: Option<String>,
        /// Check the chain and every digest kept beside the log at the speed
        /// of hashing it, without folding the log again: a snapshot's views
        /// are then not compared with the fold. A file whose head record does
        /// not confirm its lines is verified in full all the same.
        #[arg(long)]
        chain: bool,
        /// Pretty-print the JSON.
        #[arg(long)]
        pretty: bool,
        /// Print the report as JSON even on a terminal (a pipe gets JSON; a
        /// terminal, what was checked, the head and each finding).
        #[arg(long)]
        json: bool,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, elvish or
    /// powershell), e.g. `agentctx completions bash >
    /// ~/.local/share/bash-completion/completions/agentctx`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `agentctx man | man -l -`, or
    /// COMMAND's (`agentctx man run`); with --dir, write it and one page
    /// per subcommand (agentctx-run.1, …) into DIR, as the repository
    /// keeps them in docs/man/.
    Man {
        /// The command whose page to print.
        #[arg(conflicts_with = "dir")]
        command: Option<String>,
        /// Write every page into this directory instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// Print `ok`, or one line per problem: a write that could not be
    /// folded, or a view that breaks its schema.
    Check {
        /// Context file or PostgreSQL URL, or - for stdin.
        context: String,
        /// Also enforce `required` (views are partial while a task runs).
        #[arg(long)]
        complete: bool,
        /// Print `{"ok":BOOL,"problems":[TEXT,…]}` instead of lines (the
        /// exit status is the same).
        #[arg(long)]
        json: bool,
    },
}

/// A failed command: what to print and the exit status.
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
    /// Output that still belongs on stdout (the problems `check` found).
    pub(crate) stdout: String,
}

impl Failure {
    fn new(code: u8, message: impl std::fmt::Display) -> Self {
        Failure {
            code,
            message: message.to_string(),
            stdout: String::new(),
        }
    }

    /// Invalid input of any kind (exit 1).
    pub(crate) fn invalid(message: impl std::fmt::Display) -> Self {
        Self::new(1, message)
    }

    /// A usage error clap cannot catch (exit 2).
    pub(crate) fn usage(message: impl std::fmt::Display) -> Self {
        Self::new(2, message)
    }

    /// Unresolved: nothing there (exit 3).
    pub(crate) fn unresolved(message: impl std::fmt::Display) -> Self {
        Self::new(3, message)
    }

    /// Only calls waiting at approval gates remain (exit 4).
    pub(crate) fn waiting(message: impl std::fmt::Display) -> Self {
        Self::new(4, message)
    }

    /// Adds output that belongs on stdout.
    pub(crate) fn with_stdout(self, stdout: String) -> Self {
        Failure { stdout, ..self }
    }
}

/// The completion script for `shell`.
fn completions(shell: clap_complete::Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "agentctx", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The manual page, generated from the same definitions as `--help`;
/// with `dir`, every page written there.
fn man(page: Option<&str>, dir: Option<&std::path::Path>) -> Result<String, Failure> {
    if let Some(dir) = dir {
        clap_mangen::generate_to(Cli::command(), dir).map_err(|e| {
            Failure::invalid(format!(
                "cannot write the manual pages into {}: {e}",
                dir.display()
            ))
        })?;
        return Ok(String::new());
    }
    // As `generate_to` builds it: no `help` subcommand, which has no page.
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    if let Some(page) = page {
        let names: Vec<String> = command
            .get_subcommands()
            .map(|sub| sub.get_name().to_owned())
            .collect();
        let Some(sub) = command.find_subcommand(page).cloned() else {
            let near = agent_core::nearest(page, names.iter().map(String::as_str))
                .map(|near| format!("; did you mean {}?", agent_core::quoted(near)))
                .unwrap_or_default();
            return Err(Failure::usage(format!(
                "no command {}{near}",
                agent_core::quoted(page)
            )));
        };
        // Built above, it carries the name `generate_to` gives its page
        // (agentctx-run).
        command = sub;
    }
    let mut out = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut out)
        .map_err(|e| Failure::invalid(format!("cannot render the manual page: {e}")))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Prints to stdout, every character a terminal would act on escaped
/// (`agent_core::json_for_terminal`: the output is JSON, and stays the
/// same value); a reader that went away (`| head`) is not an error.
fn stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let text = agent_core::json_for_terminal(text);
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// A mistyped command is never pointed at `loop`, the command that calls a
/// paid model (D102: no tip toward `loop`): the same error, with the other
/// tips only.
fn without_paid_suggestion(error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let suggested: Vec<String> = match error.get(ContextKind::SuggestedSubcommand) {
        Some(ContextValue::String(s)) => vec![s.clone()],
        Some(ContextValue::Strings(s)) => s.clone(),
        _ => Vec::new(),
    };
    if error.kind() != ErrorKind::InvalidSubcommand || !suggested.iter().any(|s| s == "loop") {
        return error;
    }
    let typed = match error.get(ContextKind::InvalidSubcommand) {
        Some(ContextValue::String(typed)) => typed.clone(),
        _ => String::new(),
    };
    let others: Vec<String> = suggested
        .iter()
        .filter(|s| *s != "loop")
        .map(|s| format!("'{s}'"))
        .collect();
    let tip = if others.is_empty() {
        " (`agentctx --help` lists the commands)".to_owned()
    } else {
        format!(
            "\n\n  tip: a similar subcommand exists: {}",
            others.join(", ")
        )
    };
    <Cli as clap::CommandFactory>::command().error(
        ErrorKind::InvalidSubcommand,
        format!(
            "unrecognized subcommand {}{tip}",
            agent_core::quoted(&typed)
        ),
    )
}

fn main() -> ExitCode {
    // Going over the file-size limit (`ulimit -f`) sends SIGXFSZ, whose
    // default action kills the process mid-write and leaves a torn line.
    // With a handler installed the write fails with EFBIG instead, and the
    // store undoes it and says why. A handler rather than SIG_IGN: it is
    // reset on exec, so activities we start get the default back.
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGXFSZ,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    let cli = match Cli::try_parse() {
        Ok(cli) => {
            input::PRINT_HEAD.store(cli.head, std::sync::atomic::Ordering::Relaxed);
            let _ = hints::ALLOWED.set(cli.allow_keys.clone());
            cli
        }
        Err(e) => {
            // --help and --version are not errors; everything else is usage (2).
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = without_paid_suggestion(e).print();
            return ExitCode::from(code);
        }
    };
    // A report goes to a terminal as text (D108: readable on a terminal).
    let readable = report_of(&cli.command).filter(|_| std::io::stdout().is_terminal());
    let result = match cli.command {
        Command::Demo { json, context } => run::demo(json, &context),
        Command::Run(args) => run::run(args),
        Command::Loop(args) => looping::run_loop(args),
        Command::Worker(args) => workers::worker(args),
        Command::Status(args) => workers::status(args),
        Command::Inspect(args) => inspect::inspect(args),
        Command::Mcp(args) => mcp::mcp(args),
        Command::View {
            context,
            kind,
            instance,
            at,
            pretty,
        } => commands::view(&context, &kind, instance.as_deref(), at, pretty),
        Command::Resolve {
            context,
            expr,
            instance,
            at,
            pretty,
        } => commands::resolve(&context, &expr, instance.as_deref(), at, pretty),
        Command::ResolveCall {
            context,
            call,
            pretty,
        } => commands::resolve_call(&context, &call, pretty),
        Command::Apply(args) => apply::apply(args),
        Command::Render {
            context,
            provider,
            mode,
            tokens,
            pretty,
        } => commands::render(&context, &provider, &mode, tokens, pretty),
        Command::Instances {
            context, aliases, ..
        } => commands::instances(&context, aliases, readable.is_some()),
        Command::Log {
            context,
            from,
            limit,
            kind,
            instance,
            json,
        } => log::log(
            &context,
            &log::Page {
                start: from,
                limit: usize::try_from(limit).unwrap_or(50),
                kind: kind.as_deref(),
                instance: instance.as_deref(),
            },
            json,
        ),
        Command::Assign {
            context,
            inputs,
            write,
        } => write::assign(&context, &inputs, write),
        Command::Append {
            context,
            messages,
            key,
            if_empty,
            json,
        } => write::append(&context, &messages, key.as_ref(), if_empty, json),
        Command::Copy { from, to } => write::copy(&from, &to),
        Command::Completions { shell } => Ok(completions(shell)),
        Command::Man { command, dir } => man(command.as_deref(), dir.as_deref()),
        Command::Check {
            context,
            complete,
            json,
        } => commands::check(&context, complete, json),
        Command::Verify {
            context,
            expect,
            chain,
            pretty,
            ..
        } => commands::verify(&context, expect.as_deref(), chain, pretty),
    };
    match result {
        Ok(output) => {
            print_report(&output, readable);
            ExitCode::SUCCESS
        }
        Err(failure) => {
            print_report(&failure.stdout, readable);
            eprintln!("error: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// The report a command prints as text on a terminal, unless it was asked
/// for as JSON.
fn report_of(command: &Command) -> Option<readable::Report> {
    use readable::Report;
    match command {
        Command::Run(args) if !args.wants_json() => Some(Report::Run),
        Command::Status(args) if !args.wants_json() => Some(Report::Status),
        Command::Apply(args) if !args.wants_json() => Some(Report::Apply),
        Command::Verify {
            pretty: false,
            json: false,
            ..
        } => Some(Report::Verify),
        Command::Instances {
            aliases: false,
            json: false,
            ..
        } => Some(Report::Instances),
        _ => None,
    }
}

/// Prints `output`: as `report`'s text when one is given and `output` is
/// its shape (colours are the only escapes in it), else as it is.
fn print_report(output: &str, report: Option<readable::Report>) {
    use std::io::Write;
    let text = report.and_then(|r| readable::text(r, output, &readable::Style::from_env()));
    match text {
        Some(text) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        }
        None => stdout(output),
    }
}
