//! The MCP handler: tools, resources with subscriptions, the `context`
//! prompt, over stdio.

use super::tools::{self, Called};
use crate::Failure;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, JsonObject, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptMessage,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceUpdatedNotificationParam, Role, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a subscribed server looks at the store for appends (its own
/// and other processes').
const POLL: Duration = Duration::from_millis(250);

/// The log resource.
const LOG_URI: &str = "agentctx://log";

/// A view resource's prefix: `agentctx://view/KIND[/INSTANCE]`.
const VIEW_PREFIX: &str = "agentctx://view/";

#[derive(Clone)]
struct Server {
    context: Arc<str>,
    read_only: bool,
    /// The URIs the client subscribed to, and whom to tell.
    subscriptions: Arc<Mutex<Subscriptions>>,
}

#[derive(Default)]
struct Subscriptions {
    uris: BTreeSet<String>,
    peer: Option<Peer<RoleServer>>,
    watching: bool,
}

impl Server {
    fn new(context: Arc<str>, read_only: bool) -> Server {
        Server {
            context,
            read_only,
            subscriptions: Arc::default(),
        }
    }
}

pub(super) async fn serve(context: String, read_only: bool) -> Result<(), Failure> {
    let running = Server::new(context.into(), read_only)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Failure::invalid(format!("mcp: the client did not start a session: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| Failure::invalid(format!("mcp: the session ended: {e}")))?;
    Ok(())
}

/// Serves Streamable HTTP on `listener` (bound to 127.0.0.1) at `/mcp`,
/// a session of its own for each client, until killed. A request whose
/// `Host` is not this address, or whose `Origin` is not this server's, is
/// refused (DNS rebinding, a web page reaching a local server).
pub(super) async fn serve_http(
    listener: std::net::TcpListener,
    context: String,
    read_only: bool,
) -> Result<(), Failure> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let port = listener
        .local_addr()
        .map_err(|e| Failure::invalid(format!("cannot tell the port listened on: {e}")))?
        .port();
    listener
        .set_nonblocking(true)
        .map_err(|e| Failure::invalid(format!("cannot listen: {e}")))?;
    let listener = tokio::net::TcpListener::from_std(listener)
        .map_err(|e| Failure::invalid(format!("cannot listen: {e}")))?;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts([format!("127.0.0.1:{port}")])
        .with_allowed_origins([format!("http://127.0.0.1:{port}")])
        .enforce_origin_validation();
    let context: Arc<str> = context.into();
    let service = StreamableHttpService::new(
        move || Ok(Server::new(Arc::clone(&context), read_only)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let url = format!("http://127.0.0.1:{port}/mcp");
    // The URL first, and at once: whoever started us reads it to connect.
    crate::stdout(&format!("{url}\n"));
    eprintln!("mcp: serving at {url}");
    axum::serve(listener, router)
        .await
        .map_err(|e| Failure::invalid(format!("mcp: the server stopped: {e}")))
}

/// Runs a command on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, McpError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| McpError::internal_error(format!("the command stopped: {e}"), None))
}

fn schema(map: Map<String, Value>) -> Arc<JsonObject> {
    Arc::new(map)
}

/// The context's length and head, to see whether it changed.
fn state(context: &str) -> Option<(usize, String)> {
    let ctx = crate::input::load_context(context, crate::input::Reading::Views).ok()?;
    Some((ctx.len(), ctx.head().to_string()))
}

impl Server {
    /// Starts the poll that tells subscribers about appends, once.
    fn watch(&self) {
        let Ok(mut subscriptions) = self.subscriptions.lock() else {
            return;
        };
        if subscriptions.watching {
            return;
        }
        subscriptions.watching = true;
        let shared = Arc::clone(&self.subscriptions);
        let context = Arc::clone(&self.context);
        tokio::spawn(async move {
            let read = Arc::clone(&context);
            let mut last = blocking(move || state(&read)).await.ok().flatten();
            loop {
                tokio::time::sleep(POLL).await;
                let read = Arc::clone(&context);
                let now = blocking(move || state(&read)).await.ok().flatten();
                if now == last {
                    continue;
                }
                last = now;
                let (uris, peer) = match shared.lock() {
                    Ok(s) => (s.uris.clone(), s.peer.clone()),
                    Err(_) => return,
                };
                let Some(peer) = peer else { continue };
                for uri in uris {
                    let sent = peer
                        .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                        .await;
                    if sent.is_err() {
                        // The client is gone: nobody to tell.
                        return;
                    }
                }
            }
        });
    }

    /// What a resource URI names: the log, or a view.
    fn read(&self, uri: &str) -> Result<String, Failure> {
        if uri == LOG_URI {
            let mut arguments = Map::new();
            arguments.insert("limit".into(), json!(tools::LOG_LIMIT));
            return match tools::call(&self.context, true, "log", &arguments) {
                Called::Done { structured, .. } => Ok(structured.to_string()),
                Called::Refused(message) | Called::Unknown(message) => {
                    Err(Failure::invalid(message))
                }
            };
        }
        let Some(rest) = uri.strip_prefix(VIEW_PREFIX) else {
            return Err(Failure::unresolved(format!(
                "no resource {}: agentctx://log, agentctx://view/KIND or agentctx://view/KIND/INSTANCE",
                agent_core::quoted(uri)
            )));
        };
        let (kind, instance) = match rest.split_once('/') {
            Some((kind, instance)) => (kind, Some(instance)),
            None => (rest, None),
        };
        crate::input::captured(|| crate::commands::view(&self.context, kind, instance, None, false))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new("agentctx", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "An agentctx context: an append-only log of messages whose data messages fold \
             into views. Read with view/resolve (references like †state.user.name), write \
             with apply/append (validated; a refusal says why), audit with log/verify.",
        )
    }

    // Sessions that start with `initialize` (resources/subscribe among them).
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let listed = tools::tools(self.read_only)
            .iter()
            .map(|t| Tool::new(t.name, t.description, schema(t.input_schema())))
            .collect();
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        let name = request.name.to_string();
        let (context, read_only) = (Arc::clone(&self.context), self.read_only);
        let called = blocking(move || tools::call(&context, read_only, &name, &arguments)).await?;
        match called {
            Called::Done { structured, text } => {
                let mut result = CallToolResult::structured(structured);
                result.content = vec![ContentBlock::text(text)];
                Ok(result.into())
            }
            Called::Refused(message) => {
                Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into())
            }
            Called::Unknown(name) => Err(McpError::invalid_params(
                format!(
                    "no tool {name}{}",
                    if self.read_only { " (read-only)" } else { "" }
                ),
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let context = Arc::clone(&self.context);
        let kinds = blocking(move || {
            crate::input::load_context(&context, crate::input::Reading::Views).map(|ctx| {
                // Each kind once, in the order it first appears.
                let mut kinds: Vec<String> = Vec::new();
                for identity in ctx.identities() {
                    let kind = identity.kind.as_str();
                    if !kinds.iter().any(|k| k == kind) {
                        kinds.push(kind.to_owned());
                    }
                }
                kinds
            })
        })
        .await?
        .map_err(|f| McpError::internal_error(f.message, None))?;
        let mut resources = vec![
            Resource::new(LOG_URI, "log")
                .with_description(
                    "The log's first 500 messages, with their indexes (the log tool pages)",
                )
                .with_mime_type("application/json"),
        ];
        for kind in kinds {
            resources.push(
                Resource::new(format!("{VIEW_PREFIX}{kind}"), format!("¶{kind}"))
                    .with_description(format!("The folded view of ¶{kind}"))
                    .with_mime_type("application/json"),
            );
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let server = self.clone();
        let uri = request.uri.clone();
        let read = blocking(move || server.read(&uri)).await?;
        match read {
            Ok(body) => Ok(ReadResourceResult::new(vec![
                ResourceContents::text(body, request.uri).with_mime_type("application/json"),
            ])
            .into()),
            Err(failure) => Err(McpError::resource_not_found(
                failure.message,
                Some(json!({"uri": request.uri})),
            )),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if let Ok(mut subscriptions) = self.subscriptions.lock() {
            subscriptions.uris.insert(request.uri);
            subscriptions.peer = Some(context.peer.clone());
        }
        self.watch();
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if let Ok(mut subscriptions) = self.subscriptions.lock() {
            subscriptions.uris.remove(&request.uri);
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "context",
            Some("What the model would see: the context rendered, merged"),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != "context" {
            return Err(McpError::invalid_params(
                format!(
                    "no prompt {}: the one prompt is context",
                    agent_core::quoted(&request.name)
                ),
                None,
            ));
        }
        let context = Arc::clone(&self.context);
        let rendered =
            blocking(move || crate::commands::render(&context, "text", "merged", false, false))
                .await?
                .map_err(|f| McpError::internal_error(f.message, None))?;
        // The text payload is a JSON string: the prompt is its text.
        let text = serde_json::from_str::<String>(rendered.trim_end()).unwrap_or(rendered);
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description("the context, rendered as the model sees it (merged)")
                .into(),
        )
    }
}
