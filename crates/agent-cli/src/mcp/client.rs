//! MCP servers' tools as activities: `--mcp 'COMMAND ARGS…'` starts a
//! server (through `sh -c`, as `--activity` runs its command), and
//! `--mcp-http URL` connects to one over Streamable HTTP; each of its tools
//! is registered as an activity of that name. `--mcp 'NAME=COMMAND…'` (and
//! `--mcp-http 'NAME=URL'`) names them `NAME.TOOL`.
//!
//! A call's parameters (its keys without a leading `_`, references
//! already resolved) are the tool's arguments, checked against the tool's
//! `inputSchema` before they are sent. The result is the tool's
//! `structuredContent`, else its text parsed as JSON, else the text;
//! `isError` is the call's failure. A call that outlasts the timeout, or
//! whose server dies, fails; the run goes on. What a server says is
//! bounded (rmcp drops a line past 16 MiB, so such an answer times out)
//! and quoted before it is printed.

use crate::Failure;
use agent_core::json::{Value as AgentValue, json};
use agent_output::Outcome;
use agent_plan::{Activities, Activity};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a server may take to start and list its tools (at most: no
/// longer than a call may take either).
const START: Duration = Duration::from_secs(30);

/// The servers `--mcp` started, alive as long as this is.
pub(crate) struct McpServers {
    runtime: tokio::runtime::Runtime,
    running: Vec<RunningService<RoleClient, ()>>,
    /// Each server's process group: what a server started is ended with
    /// it, even a tool still running past its call's timeout.
    groups: Vec<u32>,
    /// Each tool as `loop` offers tools to the model: its input schema
    /// with `properties._tool.const` its activity's name.
    pub(crate) schemas: Vec<AgentValue>,
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for service in self.running.drain(..) {
            let _ = self.runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(2), service.cancel()).await
            });
        }
        for group in self.groups.drain(..) {
            crate::activity::kill_group(group);
        }
    }
}

/// One `--mcp` argument: an optional name for its tools, and the command.
fn parse(spec: &str) -> (Option<&str>, &str) {
    if let Some((name, command)) = spec.split_once('=') {
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if plain {
            return (Some(name), command);
        }
    }
    (None, spec)
}

/// Starts every `--mcp` server and registers its tools in `activities`,
/// each call bounded by `timeout`. A tool name two servers (or a server
/// and an `--activity`) share is an error naming both.
pub(crate) fn start(
    commands: &[String],
    urls: &[String],
    timeout: Duration,
    activities: &mut Activities,
) -> Result<Option<McpServers>, Failure> {
    if commands.is_empty() && urls.is_empty() {
        return Ok(None);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| Failure::invalid(format!("--mcp: cannot start: {e}")))?;
    let mut servers = McpServers {
        runtime,
        running: Vec::new(),
        groups: Vec::new(),
        schemas: Vec::new(),
    };
    let mut served_by: BTreeMap<String, String> = activities
        .tools()
        .into_iter()
        .map(|tool| (tool, "--activity".to_owned()))
        .collect();
    let start = START.min(timeout);
    // A session on `$transport`, and its tools, within `start`.
    macro_rules! connect {
        ($transport:expr) => {
            async {
                let service = tokio::time::timeout(start, ().serve($transport))
                    .await
                    .map_err(|_| format!("no answer to initialize in {} s", start.as_secs()))?
                    .map_err(|e| format!("it did not start a session: {e}"))?;
                let tools = tokio::time::timeout(start, service.list_all_tools())
                    .await
                    .map_err(|_| format!("no tool list in {} s", start.as_secs()))?
                    .map_err(|e| format!("its tool list: {e}"))?;
                Ok::<_, String>((service, tools))
            }
        };
    }
    let sources = commands
        .iter()
        .map(|c| (c, false))
        .chain(urls.iter().map(|u| (u, true)));
    for (spec, is_url) in sources {
        let (prefix, target) = parse(spec);
        let option = if is_url { "--mcp-http" } else { "--mcp" };
        let shown = format!("{option} {}", agent_core::quoted(spec));
        let started = if is_url {
            let config = StreamableHttpClientTransportConfig::with_uri(target.to_owned());
            match http_client() {
                // Made inside the runtime: the transport spawns its worker.
                Ok(client) => servers.runtime.block_on(async {
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    connect!(transport).await
                }),
                Err(e) => Err(e),
            }
        } else {
            let mut process = tokio::process::Command::new("sh");
            process.arg("-c").arg(target).process_group(0);
            let groups = &mut servers.groups;
            servers.runtime.block_on(async {
                let transport =
                    TokioChildProcess::new(process).map_err(|e| format!("cannot start it: {e}"))?;
                groups.extend(transport.id());
                connect!(transport).await
            })
        };
        let (service, tools) = started.map_err(|e| Failure::invalid(format!("{shown}: {e}")))?;
        let peer = service.peer().clone();
        servers.running.push(service);
        for tool in tools {
            let name = match prefix {
                Some(prefix) => format!("{prefix}.{}", tool.name),
                None => tool.name.to_string(),
            };
            if let Some(other) = served_by.get(&name) {
                return Err(Failure::usage(format!(
                    "the tool {} is served by both {other} and {shown}: name one \
                     server's tools with --mcp 'NAME=COMMAND…' (or --mcp-http 'NAME=URL')",
                    agent_core::quoted(&name)
                )));
            }
            served_by.insert(name.clone(), shown.clone());
            let schema = Value::Object((*tool.input_schema).clone());
            let validator = jsonschema::validator_for(&schema).map_err(|e| {
                Failure::invalid(format!(
                    "{shown}: the inputSchema of {} is not a schema: {e}",
                    agent_core::quoted(&tool.name)
                ))
            })?;
            servers.schemas.push(offered(&name, &tool));
            activities.register(
                name,
                McpActivity {
                    peer: peer.clone(),
                    runtime: servers.runtime.handle().clone(),
                    tool: tool.name.to_string(),
                    validator,
                    timeout,
                },
            );
        }
    }
    Ok(Some(servers))
}

/// The HTTP client of `--mcp-http`: rustls with its own ring provider
/// (none is installed process-wide, as for the model's server) and no
/// redirects (an untrusted server's redirect would take the calls
/// elsewhere; D53: the server is untrusted).
fn http_client() -> Result<reqwest::Client, String> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())
        .map_err(|e| format!("cannot configure TLS: {e}"))?
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))
}

/// A tool as `loop` offers it to the model (as a `--tools` entry): its
/// input schema, its description, and `_tool` fixed to `name`.
fn offered(name: &str, tool: &rmcp::model::Tool) -> AgentValue {
    let mut schema = (*tool.input_schema).clone();
    let mut properties = match schema.remove("properties") {
        Some(Value::Object(properties)) => properties,
        _ => Map::new(),
    };
    properties.insert("_tool".into(), serde_json::json!({"const": name}));
    let mut required = vec![Value::from("_tool")];
    if let Some(Value::Array(listed)) = schema.remove("required") {
        required.extend(listed);
    }
    schema.insert("type".into(), Value::from("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), Value::Array(required));
    if let Some(description) = &tool.description {
        schema.insert("description".into(), Value::from(description.to_string()));
    }
    AgentValue::from(Value::Object(schema))
}

/// One tool of one server, as an activity.
struct McpActivity {
    peer: Peer<RoleClient>,
    runtime: tokio::runtime::Handle,
    tool: String,
    validator: jsonschema::Validator,
    timeout: Duration,
}

fn failed(text: String) -> Outcome {
    Outcome::Failure(json!({ "error": text }))
}

impl McpActivity {
    /// The call's parameters: its keys without a leading `_`.
    fn arguments(call: &AgentValue) -> Map<String, Value> {
        let mut arguments = Map::new();
        if let Some(object) = call.as_object() {
            for (key, value) in object.iter() {
                if key.starts_with('_') {
                    continue;
                }
                arguments.insert(key.to_string(), Value::from(value));
            }
        }
        arguments
    }

    /// What the tool's result says.
    fn outcome(&self, result: CallToolResult) -> Outcome {
        let text: String = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        if result.is_error == Some(true) {
            return failed(format!(
                "{}: {}",
                agent_core::quoted(&self.tool),
                agent_core::quoted(&text)
            ));
        }
        if let Some(value) = result.structured_content {
            return Outcome::Success(AgentValue::from(value));
        }
        match agent_core::json::from_str(&text) {
            Ok(value) => Outcome::Success(value),
            Err(_) => Outcome::Success(AgentValue::String(text)),
        }
    }
}

impl Activity for McpActivity {
    fn run(&self, call: &AgentValue) -> Outcome {
        let arguments = Self::arguments(call);
        let given = Value::Object(arguments.clone());
        if let Some(error) = self.validator.iter_errors(&given).next() {
            return failed(format!(
                "the arguments of {} do not match its inputSchema: {} (at {})",
                agent_core::quoted(&self.tool),
                agent_core::quoted(&error.to_string()),
                agent_core::quoted(&error.instance_path().to_string())
            ));
        }
        let params = CallToolRequestParams::new(self.tool.clone()).with_arguments(arguments);
        // Built inside the runtime: a timer needs its reactor.
        let answered = self.runtime.block_on(async {
            tokio::time::timeout(self.timeout, self.peer.call_tool(params)).await
        });
        match answered {
            Err(_) => failed(format!(
                "{} did not answer in {} s",
                agent_core::quoted(&self.tool),
                self.timeout.as_secs()
            )),
            Ok(Err(e)) => failed(format!(
                "{}: {}",
                agent_core::quoted(&self.tool),
                agent_core::quoted(&e.to_string())
            )),
            Ok(Ok(result)) => self.outcome(result),
        }
    }
}
