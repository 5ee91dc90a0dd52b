//! `agentctx mcp CONTEXT`: the context served as memory to any agent over
//! the Model Context Protocol (the official Rust SDK, `rmcp`), on stdio.
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
}

/// Serves the context on stdio until the client closes it.
pub(crate) fn mcp(args: McpArgs) -> Result<String, Failure> {
    if args.context == "-" {
        return Err(Failure::usage(
            "mcp serves a CONTEXT file or PostgreSQL URL, not stdin (stdin is the protocol)",
        ));
    }
    // The context must open now: a typo fails here, not at the first call.
    crate::input::open_store(&args.context)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::invalid(format!("cannot start the server: {e}")))?;
    runtime.block_on(server::serve(args.context, args.read_only))?;
    Ok(String::new())
}
