//! `agentctx inspect`: a read-only JSON API (and a small page) about one
//! context, served on 127.0.0.1 until the process is killed (decision
//! D75; docs/inspect.md is its contract).
//!
//! The context is read whole once, then a thread polls the store for what
//! other writers appended and publishes each grown context; requests read
//! the newest published one and never touch the store.

mod about;
mod api;
mod past;
mod plan;
mod prompt;

use crate::Failure;
use crate::input::{AnyStore, open_store};
use agent_data::Context;
use agent_worker::PlanStatus;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How often the store is asked whether the context grew.
const POLL: Duration = Duration::from_millis(500);

/// Polls skipped while a request holds the context, before the poller
/// copies it to fold what was appended.
const POLLS_WAITED_FOR_READERS: usize = 2;

/// How many answers are computed at once; the others wait their turn.
const ANSWERING: usize = 2;

/// How long what the calls table said is shown before it is asked again.
const CALLS_TABLE_AGE: Duration = Duration::from_secs(2);

/// Every response's Content-Security-Policy: nothing but this server's own
/// files, no framing, no forms.
const CSP: &str = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// `agentctx inspect CONTEXT [--port P] [--open]`.
#[derive(clap::Args)]
pub(crate) struct InspectArgs {
    /// Context file (.jsonl or .json array) or PostgreSQL URL.
    context: String,
    /// The port to listen on, on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Also open the page in the desktop's browser (`xdg-open`, `open`).
    #[arg(long)]
    open: bool,
}

/// Where the context stands: its length, and the last polling error
/// (cleared by the next poll that works).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Status {
    /// Messages in the context.
    pub(crate) length: usize,
    /// Why the last poll failed, if it did.
    pub(crate) error: Option<String>,
}

/// What every request reads.
pub(crate) struct Shared {
    /// The newest context. The poller folds what was appended into it in
    /// place while no request holds it, so the server keeps one copy
    /// (D107: the inspector at scale).
    context: RwLock<Arc<Context>>,
    /// Its status, for the event stream.
    status: tokio::sync::watch::Sender<Status>,
    /// The store's name (a path, or a URL without its password).
    name: String,
    /// A PostgreSQL context's URL as given, password included, to read its
    /// calls table; never shown.
    postgres: Option<String>,
    /// The port served, which the `Host` header must name.
    port: u16,
    /// Permits to compute an answer ([`ANSWERING`]).
    answering: Arc<tokio::sync::Semaphore>,
    /// What the calls table last said of the newest worker plan, and when
    /// it was asked: one request at a time asks, at most every
    /// [`CALLS_TABLE_AGE`].
    calls_table: Mutex<Option<(Instant, Option<Arc<PlanStatus>>)>>,
    /// The context at the past point last asked about.
    past: past::Past,
    /// The prompt at the point last asked about.
    prompts: prompt::Prompts,
}

impl Shared {
    /// The newest context.
    pub(crate) fn context(&self) -> Arc<Context> {
        let guard = self
            .context
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(&guard)
    }

    /// Where the newest worker plan of a PostgreSQL context stands in its
    /// calls table, asked again when what was last said is older than
    /// [`CALLS_TABLE_AGE`]; `None` for a file, or when it cannot be read
    /// (the log still says what it can).
    pub(crate) fn calls_table(&self) -> Option<Arc<PlanStatus>> {
        let url = self.postgres.as_deref()?;
        let mut cached = self
            .calls_table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match &*cached {
            Some((asked, status)) if asked.elapsed() < CALLS_TABLE_AGE => status.clone(),
            _ => {
                let status = agent_worker::plan_status(url).ok().map(Arc::new);
                *cached = Some((Instant::now(), status.clone()));
                status
            }
        }
    }
}

/// Serves until killed; returns only when it cannot start.
pub(crate) fn inspect(args: InspectArgs) -> Result<String, Failure> {
    if args.context == "-" {
        return Err(Failure::usage(
            "inspect needs a CONTEXT file or PostgreSQL URL, not stdin: it watches the context grow",
        ));
    }
    let mut store = open_store(&args.context)?;
    let loaded = store.load().map_err(Failure::invalid)?;
    for warning in &loaded.warnings {
        eprintln!("warning: {}: {warning}", store.name());
    }
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, args.port))
        .map_err(|e| Failure::invalid(format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
    let port = listener
        .local_addr()
        .map_err(|e| Failure::invalid(format!("cannot tell the port listened on: {e}")))?
        .port();
    let context = loaded.context;
    // A file's tail is read in place under the lock (local, quick); a
    // database's over the network into a copy of its own, so a slow or
    // unreachable server never holds up the answers (D107: one context).
    let remote = agent_store::is_postgres_url(&args.context);
    let own = remote.then(|| context.clone());
    let (status, _) = tokio::sync::watch::channel(Status {
        length: context.len(),
        error: None,
    });
    let shared = Arc::new(Shared {
        context: RwLock::new(Arc::new(context)),
        status,
        name: store.name().to_owned(),
        postgres: remote.then(|| args.context.clone()),
        port,
        answering: Arc::new(tokio::sync::Semaphore::new(ANSWERING)),
        calls_table: Mutex::new(None),
        past: past::Past::default(),
        prompts: prompt::Prompts::default(),
    });
    let url = format!("http://127.0.0.1:{port}/");
    // The URL first, and at once: whoever started us reads it to connect.
    crate::stdout(&format!("{url}\n"));
    eprintln!("inspect: serving {} read-only at {url}", shared.name);
    {
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || match own {
            Some(own) => poll_apart(store, own, &shared),
            None => poll(store, &shared),
        });
    }
    if args.open {
        open_browser(&url);
    }
    serve(listener, shared)
}

/// Asks the store every [`POLL`] for what other writers appended, and
/// folds it into the shared context in place. A failed poll is reported
/// (on stderr and the event stream) and tried again.
fn poll(mut store: AnyStore, shared: &Shared) {
    let mut waited = 0;
    loop {
        std::thread::sleep(POLL);
        let mut newest = shared
            .context
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // A request still reading the context holds it: its answers are
        // short, so the poll waits a round or two for it rather than copy
        // the whole context, and copies only after that.
        if Arc::get_mut(&mut newest).is_none() && waited < POLLS_WAITED_FOR_READERS {
            waited += 1;
            continue;
        }
        waited = 0;
        let context = Arc::make_mut(&mut newest);
        let error = match store.catch_up(context) {
            Ok(()) => None,
            Err(e) => Some(e.to_string()),
        };
        let status = Status {
            length: context.len(),
            error,
        };
        drop(newest);
        report(shared, status);
    }
}

/// [`poll`] for a database: the store is asked with no lock held, into
/// the poller's own copy, which is published (copied) when it grew.
fn poll_apart(mut store: AnyStore, mut own: Context, shared: &Shared) {
    loop {
        std::thread::sleep(POLL);
        let before = own.len();
        let error = match store.catch_up(&mut own) {
            Ok(()) => None,
            Err(e) => Some(e.to_string()),
        };
        if own.len() != before {
            let published = Arc::new(own.clone());
            *shared
                .context
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = published;
        }
        report(
            shared,
            Status {
                length: own.len(),
                error,
            },
        );
    }
}

/// Publishes where the context stands to the event stream, and a new
/// failure to read on stderr.
fn report(shared: &Shared, status: Status) {
    shared.status.send_if_modified(|old| {
        if *old == status {
            return false;
        }
        if let Some(error) = status
            .error
            .as_ref()
            .filter(|e| old.error.as_ref() != Some(e))
        {
            eprintln!("warning: inspect: cannot read what was appended: {error}");
        }
        *old = status;
        true
    });
}

/// Runs the server on `listener` until the process ends.
fn serve(listener: std::net::TcpListener, shared: Arc<Shared>) -> Result<String, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // The answers' threads, as many as may answer at once: each thread
        // that folds a point gets its own allocator arena, which keeps what
        // it freed, so more threads than answers only grow the server.
        .max_blocking_threads(ANSWERING)
        .enable_all()
        .build()
        .map_err(|e| Failure::invalid(format!("cannot start the server: {e}")))?;
    runtime.block_on(async move {
        listener
            .set_nonblocking(true)
            .map_err(|e| Failure::invalid(format!("cannot serve: {e}")))?;
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| Failure::invalid(format!("cannot serve: {e}")))?;
        let router = api::router()
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&shared),
                guard,
            ))
            .with_state(shared);
        axum::serve(listener, router)
            .await
            .map_err(|e| Failure::invalid(format!("the server stopped: {e}")))?;
        Ok(String::new())
    })
}

/// The hosts a request may name: this server's own address, under the
/// names a browser on this machine reaches it by.
fn allowed_host(host: &str, port: u16) -> bool {
    ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .any(|name| host == format!("{name}:{port}"))
}

/// Refuses a request addressed to another host (a page elsewhere that
/// rebinds its own name to 127.0.0.1 sends its own name), a request a page
/// of another site sent (its browser says so), and any method but `GET`;
/// sets the headers every response carries.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let mut response = match refusal(&request, shared.port) {
        None => next.run(request).await,
        Some((status, text)) => {
            let mut refused = api::error(status, text);
            if status == StatusCode::METHOD_NOT_ALLOWED {
                refused
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            }
            refused
        }
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Why `request` is refused, if it is: its status and the text of its
/// `{"error": …}` body.
fn refusal(request: &Request, port: u16) -> Option<(StatusCode, String)> {
    let headers = request.headers();
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
    };
    let host = text(header::HOST);
    if !host.as_deref().is_some_and(|h| allowed_host(h, port)) {
        let shown = host.map_or_else(|| "none".to_owned(), |h| agent_core::quoted(&h));
        return Some((
            StatusCode::FORBIDDEN,
            format!(
                "refused: the Host header is {shown}, not this server's address \
                 (127.0.0.1:{port}, localhost:{port} or [::1]:{port}); agentctx inspect \
                 answers only requests addressed to it, so a web page elsewhere cannot \
                 read the context through DNS rebinding"
            ),
        ));
    }
    // A browser names the site a request comes from: only this server's
    // own pages (or the address typed in) may make it work.
    let site = text(header::HeaderName::from_static("sec-fetch-site"));
    let origin = text(header::ORIGIN);
    let foreign_origin = origin.as_deref().is_some_and(|o| {
        !o.strip_prefix("http://")
            .is_some_and(|h| allowed_host(h, port))
    });
    if site
        .as_deref()
        .is_some_and(|s| s != "same-origin" && s != "none")
        || foreign_origin
    {
        let from = origin.unwrap_or_else(|| "another site".to_owned());
        return Some((
            StatusCode::FORBIDDEN,
            format!(
                "refused: the request comes from {from}, not from this server's own page; \
                 agentctx inspect does no work for other sites"
            ),
        ));
    }
    // HEAD is answered as GET is, without the body (the router does so).
    if request.method() != axum::http::Method::GET && request.method() != axum::http::Method::HEAD {
        return Some((
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "{} is not answered: agentctx inspect only reads, and answers GET and HEAD only",
                request.method()
            ),
        ));
    }
    None
}

/// Opens `url` in the desktop's browser; failing to is a warning only.
fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let started = std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        // Waited for, so it leaves no zombie behind.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(e) => {
            eprintln!("warning: cannot open a browser with {program}: {e}; open {url} yourself");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::allowed_host;

    #[test]
    fn d75_only_this_servers_own_address_is_an_allowed_host() {
        for host in ["127.0.0.1:8080", "localhost:8080", "[::1]:8080"] {
            assert!(allowed_host(host, 8080), "{host}");
        }
        for host in [
            "127.0.0.1:8081",
            "localhost",
            "evil.example:8080",
            "127.0.0.1.evil.example:8080",
            "localhost:8080.evil.example",
            "",
        ] {
            assert!(!allowed_host(host, 8080), "{host}");
        }
    }
}
