//! `agentctx mcp CONTEXT`: the context served as memory to any agent over
//! the Model Context Protocol (the official Rust SDK, `rmcp`), on stdio, or
//! with `--http` as Streamable HTTP at `http://127.0.0.1:PORT/mcp`
//! (127.0.0.1 only; a `Host` or `Origin` naming anything else refused).
//!
//! - Tools (`tools.rs`): `view`, `resolve`, `instances`, `apply`,
//!   `append`, `render`, `verify`, `log` — each the command of the same
//!   name on this one context; `--read-only` lists neither `apply` nor
//!   `append`.
//! - Resources: `agentctx://log` and `agentctx://view/KIND` (and
//!   `…/KIND/INSTANCE`); a subscription is told when the context changes,
//!   by this process or another (the store is polled, `POLL`).
//! - A prompt, `context`: what the model would see (rendered, merged).
//!
//! The commands run on blocking threads; stdout carries only the
//! protocol, and what the commands say on stderr goes to the client's log.

pub(crate) mod client;
mod server;
mod tools;

use crate::Failure;

/// The arguments of `agentctx mcp`.
#[derive(clap::Args)]
pub(crate) struct McpArgs {
    /// Context file or PostgreSQL URL to serve.
    context: String,
    /// Serve no tool that writes (`apply`, `append`).
    #[arg(long)]
    read_only: bool,
    /// Serve Streamable HTTP at http://127.0.0.1:PORT/mcp instead of
    /// stdio; the URL is printed first.
    #[arg(long)]
    http: bool,
    /// With --http, the port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0, requires = "http")]
    port: u16,
}

/// Serves the context on stdio until the client closes it.
pub(crate) fn mcp(args: McpArgs) -> Result<String, Failure> {
    if args.context == "-" {
        return Err(Failure::usage(
            "mcp serves a CONTEXT file or PostgreSQL URL, not stdin (stdin is the protocol)",
        ));
    }
    // The context must open now: a typo fails here, not at the first call
    // (and a URL is read whole before anything connects). Its calls then
    // share a few connections, kept between them.
    crate::input::open_store(&args.context)?;
    crate::input::share_connections(&args.context)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::invalid(format!("cannot start the server: {e}")))?;
    if args.http {
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, args.port))
            .map_err(|e| {
                Failure::invalid(format!("cannot listen on 127.0.0.1:{}: {e}", args.port))
            })?;
        runtime.block_on(server::serve_http(listener, args.context, args.read_only))?;
    } else {
        runtime.block_on(server::serve(args.context, args.read_only))?;
    }
    Ok(String::new())
}
