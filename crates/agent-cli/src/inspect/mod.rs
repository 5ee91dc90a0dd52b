//! `agentctx inspect`: a read-only JSON API (and a small page) about one
//! context, served on 127.0.0.1 until the process is killed (decision
//! D75; docs/inspect.md is its contract).
//!
//! The context is read whole once, then a thread polls the store for what
//! other writers appended and publishes each grown context; requests read
//! the newest published one and never touch the store.

mod about;
mod api;
mod plan;

use crate::Failure;
use crate::input::{AnyStore, open_store};
use agent_data::Context;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How often the store is asked whether the context grew.
const POLL: Duration = Duration::from_millis(500);

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
    /// The newest context published by the poller.
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
    let (status, _) = tokio::sync::watch::channel(Status {
        length: context.len(),
        error: None,
    });
    let shared = Arc::new(Shared {
        context: RwLock::new(Arc::new(context.clone())),
        status,
        name: store.name().to_owned(),
        postgres: agent_store::is_postgres_url(&args.context).then(|| args.context.clone()),
        port,
    });
    let url = format!("http://127.0.0.1:{port}/");
    // The URL first, and at once: whoever started us reads it to connect.
    crate::stdout(&format!("{url}\n"));
    eprintln!("inspect: serving {} read-only at {url}", shared.name);
    {
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || poll(store, context, &shared));
    }
    if args.open {
        open_browser(&url);
    }
    serve(listener, shared)
}

/// Asks the store every [`POLL`] for what other writers appended, and
/// publishes the grown context. A failed poll is reported (on stderr and
/// the event stream) and tried again.
fn poll(mut store: AnyStore, mut context: Context, shared: &Shared) {
    loop {
        std::thread::sleep(POLL);
        let before = context.len();
        let error = match store.catch_up(&mut context) {
            Ok(()) => None,
            Err(e) => Some(e.to_string()),
        };
        if context.len() != before {
            // Readers hold the context they started with; the copy is what
            // lets them read without waiting for the store.
            let published = Arc::new(context.clone());
            *shared
                .context
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = published;
        }
        let status = Status {
            length: context.len(),
            error,
        };
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
}

/// Runs the server on `listener` until the process ends.
fn serve(listener: std::net::TcpListener, shared: Arc<Shared>) -> Result<String, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
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
/// rebinds its own name to 127.0.0.1 sends its own name), and sets the
/// headers every response carries.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
    let mut response = match host {
        Some(host) if allowed_host(&host, shared.port) => next.run(request).await,
        host => {
            let shown = host.map_or_else(|| "none".to_owned(), |h| agent_core::quoted(&h));
            let port = shared.port;
            (
                StatusCode::FORBIDDEN,
                format!(
                    "refused: the Host header is {shown}, not this server's address \
                     (127.0.0.1:{port}, localhost:{port} or [::1]:{port}); agentctx inspect \
                     answers only requests addressed to it, so a web page elsewhere cannot \
                     read the context through DNS rebinding\n"
                ),
            )
                .into_response()
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
