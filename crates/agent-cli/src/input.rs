//! Reading CONTEXT arguments and printing values.

use crate::Failure;
use agent_core::json::Value;
use agent_data::{Context, Format};
use agent_store::{Store, Stored};
use std::io::Read;

/// A stored context of any kind: a file, or (spec §10) a PostgreSQL URL.
pub(crate) type AnyStore = Box<dyn Store + Send>;

/// How much of a context a command reads (D37: snapshots).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// The views, from the newest snapshot and the messages after it:
    /// O(tail) for reads and appends.
    Views,
    /// Every message: rendering, `check`, copying, the loop.
    Whole,
}

/// `--head`: print the head after a write ([`print_head`]).
pub(crate) static PRINT_HEAD: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// With `--head`, the head of `context` just written, on stderr.
pub(crate) fn print_head(context: &Context) {
    if PRINT_HEAD.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("head: {} ({} messages)", context.head(), context.len());
    }
}

/// Loads CONTEXT: a file path, a PostgreSQL URL, or `-` for stdin (spec
/// §10). Load warnings (a torn last line, R34) go to stderr.
pub(crate) fn load_context(arg: &str, reading: Reading) -> Result<Context, Failure> {
    if arg == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::invalid(format!("cannot read stdin: {e}")))?;
        let loaded =
            Context::load(&bytes, Format::detect(None, &bytes)).map_err(Failure::invalid)?;
        warn(arg, &loaded.warnings);
        return Ok(loaded.context);
    }
    let mut store = open_store(arg)?;
    let loaded = match reading {
        Reading::Views => store.load_tail(),
        Reading::Whole => store.load(),
    }
    .map_err(Failure::invalid)?;
    warn(store.name(), &loaded.warnings);
    Ok(loaded.context)
}

/// Frees a large context on a thread of its own, so the command's answer
/// does not wait for it: freeing 200,000 instance layers piece by piece
/// took a thirtieth of the command. A command line process may end first
/// (and its memory with it); a long-lived caller (`agentctx mcp`) gets the
/// memory back all the same. A small context is dropped here.
pub(crate) fn drop_aside(context: Context) {
    const LARGE: usize = 10_000;
    if context.len() < LARGE {
        return;
    }
    // A thread that cannot be started hands the context back to drop here.
    let _ = std::thread::Builder::new()
        .name("agentctx-drop".into())
        .spawn(move || drop(context));
}

/// CONTEXT opened for durable appends (`--write`): every append is a commit
/// (R34, R34b). `missing_ok`: a missing context starts empty and the first
/// append creates it.
pub(crate) fn open_stored(
    arg: &str,
    missing_ok: bool,
    reading: Reading,
) -> Result<Stored<AnyStore>, Failure> {
    if arg == "-" {
        return Err(Failure::usage(
            "writing needs a CONTEXT file or PostgreSQL URL, not stdin",
        ));
    }
    let store = open_store(arg)?;
    let stored = match (missing_ok, reading) {
        (true, Reading::Views) => Stored::open_or_create_tail(store),
        (true, Reading::Whole) => Stored::open_or_create(store),
        (false, Reading::Views) => Stored::open_tail(store),
        (false, Reading::Whole) => Stored::open(store),
    }
    .map_err(Failure::invalid)?;
    warn(stored.store().name(), stored.warnings());
    Ok(stored)
}

/// The connections a long-lived server shares between its calls, once
/// [`share_connections`] made them.
static SHARED: std::sync::OnceLock<agent_store::PgPool> = std::sync::OnceLock::new();

/// Connections a server keeps for its context (D114: a pool per process):
/// enough for the few calls a client makes at once.
const SHARED_CONNECTIONS: usize = 4;

/// Makes every later open of the PostgreSQL context `url` in this process
/// take a connection from one pool, kept between calls, instead of
/// connecting anew: for a server that opens its context at each call
/// (`mcp`). Connects now; a file context needs nothing.
pub(crate) fn share_connections(url: &str) -> Result<(), Failure> {
    if !agent_store::is_postgres_url(url) {
        return Ok(());
    }
    let pool = agent_store::PgPool::open(url, SHARED_CONNECTIONS).map_err(Failure::invalid)?;
    pool.store_at(url).map_err(Failure::invalid)?;
    let _ = SHARED.set(pool);
    Ok(())
}

/// The store a CONTEXT argument names (on the shared connections when it
/// is on their server).
pub(crate) fn open_store(arg: &str) -> Result<AnyStore, Failure> {
    if let Some(pool) = SHARED.get()
        && let Ok(store) = pool.store_at(arg)
    {
        return Ok(Box::new(store));
    }
    agent_store::open(arg).map_err(Failure::invalid)
}

fn warn(name: &str, warnings: &[agent_data::Warning]) {
    for warning in warnings {
        eprintln!("warning: {name}: {warning}");
    }
}

/// A value as one line of compact JSON, or pretty JSON.
pub(crate) fn print_value(value: &Value, pretty: bool) -> String {
    let mut text = String::new();
    let style = if pretty {
        agent_core::json::Style::Pretty
    } else {
        agent_core::json::Style::Compact
    };
    agent_core::json::write_into(&mut text, value, style);
    text + "\n"
}

std::thread_local! {
    /// Set while [`captured`] runs: output is returned, never written.
    static CAPTURE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `work` with what the commands print returned as text rather than
/// streamed to stdout — for `agentctx mcp`, whose stdout is the protocol.
pub(crate) fn captured<T>(work: impl FnOnce() -> T) -> T {
    let before = CAPTURE.with(|c| c.replace(true));
    let result = work();
    CAPTURE.with(|c| c.set(before));
    result
}

/// Writes `value` to stdout as [`print_value`] formats it, as it is
/// serialised: a view of millions of items is never held a second time
/// as text. Returns the empty output left to print — or, inside
/// [`captured`], the whole text.
pub(crate) fn stream_value(value: &impl serde::Serialize, pretty: bool) -> String {
    use std::io::Write;
    if CAPTURE.with(std::cell::Cell::get) {
        let text = if pretty {
            serde_json::to_string_pretty(value)
        } else {
            serde_json::to_string(value)
        };
        return text.map_or_else(|e| format!("\"{e}\"\n"), |t| t + "\n");
    }
    let mut out = std::io::BufWriter::with_capacity(
        1 << 16,
        TerminalSafe {
            inner: std::io::stdout().lock(),
            pending: Vec::new(),
        },
    );
    let written = if pretty {
        serde_json::to_writer_pretty(&mut out, value)
    } else {
        serde_json::to_writer(&mut out, value)
    };
    // As `stdout` in main: a closed pipe ends the output, not the command.
    let _ = written
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    String::new()
}

/// Writes JSON through to `inner` with every character a terminal would
/// act on escaped (`agent_core::json_for_terminal`), a character split
/// between two writes held until it is whole.
struct TerminalSafe<W: std::io::Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: std::io::Write> TerminalSafe<W> {
    fn drain(&mut self, all: bool) -> std::io::Result<()> {
        let whole = match std::str::from_utf8(&self.pending) {
            Ok(text) => text.len(),
            // Invalid bytes are not ours to judge: they go through as
            // they are, once nothing can complete them.
            Err(e) if e.error_len().is_some() || all => self.pending.len(),
            Err(e) => e.valid_up_to(),
        };
        let (ready, rest) = self.pending.split_at(whole);
        match std::str::from_utf8(ready) {
            Ok(text) => self
                .inner
                .write_all(agent_core::json_for_terminal(text).as_bytes())?,
            Err(_) => self.inner.write_all(ready)?,
        }
        self.pending = rest.to_vec();
        Ok(())
    }
}

impl<W: std::io::Write> std::io::Write for TerminalSafe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.drain(false)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.drain(true)?;
        self.inner.flush()
    }
}

/// A JSON argument (spec §10): inline JSON, or `@path` to read a file.
pub(crate) fn json_arg(what: &str, arg: &str) -> Result<Value, Failure> {
    let text = match arg.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| Failure::invalid(format!("cannot read {what} from {path}: {e}")))?,
        None => arg.to_owned(),
    };
    agent_core::json::from_str(&text)
        .map_err(|e| Failure::invalid(format!("{what} is not valid JSON: {e}")))
}

/// A syntax error with the expression and a caret under the fault (spec §10).
pub(crate) fn syntax_failure(prefix: &str, error: &agent_vars::SyntaxError) -> Failure {
    Failure::invalid(format!("{prefix}{error}\n{}", error.caret()))
}

/// The references of an unresolved expression or pending call, for stderr.
pub(crate) fn missing_list(references: &[agent_core::Reference]) -> String {
    let names: Vec<String> = references.iter().map(ToString::to_string).collect();
    names.join(", ")
}

/// The clock for `_date`: fixed at `--date` (RFC 3339), else the system's.
pub(crate) fn clock(date: Option<&str>) -> Result<Box<dyn agent_output::Clock + Sync>, Failure> {
    Ok(match date {
        Some(date) => Box::new(
            agent_output::FixedClock::parse(date)
                .map_err(|e| Failure::invalid(format!("--date {e}")))?,
        ),
        None => Box::new(agent_output::SystemClock),
    })
}

/// `--mode`: `merged` (one block per layer) or `append` (one per write).
pub(crate) fn render_mode(mode: &str) -> Result<agent_render::RenderMode, Failure> {
    match mode {
        "merged" => Ok(agent_render::RenderMode::Merged),
        "append" => Ok(agent_render::RenderMode::Append),
        other => Err(Failure::usage(format!(
            "unknown mode {}: expected merged or append",
            agent_core::quoted(other)
        ))),
    }
}
