//! Time travel on the command line (R34f) and `agentctx inspect` (D75):
//! the real binary, real HTTP over TCP, a real PostgreSQL server for the
//! PostgreSQL cases. Every read has a timeout: a server that hangs fails
//! the test instead of holding it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod support;

use agent_core::{json, json::Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::{agentctx, command, fresh};

/// How long any one wait of these tests may take.
const PATIENCE: Duration = Duration::from_secs(20);

/// The messages every context here starts with: a global write, an
/// instance's write, and a second global write.
const START: &str = r#"[
  {"type":"state","data":{"step":1}},
  {"type":"state","data":{"name":"Ada"},"_instance":"①"},
  {"type":"state","data":{"step":2}},
  {"type":"text","text":"done"}
]"#;

fn file_context(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("c.jsonl").display().to_string();
    let run = agentctx(&["append", &path, START]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    path
}

fn postgres_context(name: &str) -> String {
    let url = fresh(name);
    let run = agentctx(&["append", &url, START]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    url
}

fn time_travel_on_the_command_line(context: &str) {
    let at = |k: &str| agentctx(&["view", context, "state", "--at", k]);
    let first = at("1");
    assert_eq!(
        (first.code, first.stdout.as_str()),
        (0, "{\"step\":1}\n"),
        "{}",
        first.stderr
    );
    assert_eq!(at("3").stdout, "{\"step\":2}\n");
    assert_eq!(at("4").stdout, "{\"step\":2}\n");
    let empty = at("0");
    assert_eq!(empty.code, 3, "{}", empty.stderr);
    assert!(
        empty
            .stderr
            .starts_with("error: ¶state: no message of this kind"),
        "{}",
        empty.stderr
    );
    let past = at("5");
    assert_eq!(past.code, 1);
    assert_eq!(
        past.stderr,
        "error: --at 5: the context has 4 message(s): there is no point after its first 5 (choose 0 to 4)\n"
    );
    let resolve = |k: &str| {
        agentctx(&[
            "resolve",
            context,
            "†state.name",
            "--instance",
            "①",
            "--at",
            k,
        ])
    };
    assert_eq!(resolve("2").stdout, "\"Ada\"\n");
    let before = resolve("1");
    assert_eq!(before.code, 3);
    assert!(
        before
            .stderr
            .ends_with("error: unresolved: not present: †state.name\n"),
        "{}",
        before.stderr
    );
}

#[test]
fn r34f_view_and_resolve_at_k_read_a_file_after_its_first_k_messages() {
    let dir = tempfile::tempdir().unwrap();
    time_travel_on_the_command_line(&file_context(&dir));
}

#[test]
fn r34f_view_and_resolve_at_k_read_a_postgres_context_as_a_file() {
    time_travel_on_the_command_line(&postgres_context("at"));
}

/// A running `agentctx inspect`, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `agentctx inspect CONTEXT` and reads the URL it prints first.
    fn start(context: &str) -> Server {
        let mut child = command(&["inspect", context])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = send.send(line);
        });
        let line = receive.recv_timeout(PATIENCE);
        let mut server = Server { child, port: 0 };
        let line = line.expect("inspect printed no URL in time");
        let port = line
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix("/\n"))
            .unwrap_or_else(|| panic!("not the URL: {line:?}"));
        server.port = port.parse().unwrap();
        server
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `GET path` with `Host: host`: the status, the headers (names in
    /// lower case) and the body.
    fn get_as(&self, host: &str, path: &str) -> Response {
        let mut stream = self.connect();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        let raw = String::from_utf8(raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let mut lines = head.lines();
        let status = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers = lines
            .filter_map(|line| line.split_once(": "))
            .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
            .collect();
        Response {
            status,
            headers,
            body: body.to_owned(),
        }
    }

    fn get(&self, path: &str) -> Response {
        self.get_as(&self.host(), path)
    }

    /// `GET path` answered 200 with JSON.
    fn json(&self, path: &str) -> Value {
        let response = self.get(path);
        assert_eq!(response.status, 200, "{path}: {}", response.body);
        agent_core::json::from_str(&response.body).unwrap()
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream.set_write_timeout(Some(PATIENCE)).unwrap();
        stream
    }
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the views of [`START`] are after all of it.
fn latest_views() -> Value {
    json!({
        "at": 4, "length": 4, "kinds": ["state"],
        "global": {"state": {"step": 2}},
        "instances": {"①": {"state": {"step": 2, "name": "Ada"}}},
    })
}

fn serves_the_views_now_and_at_a_point(server: &Server) {
    assert_eq!(server.json("/api/views"), latest_views());
    assert_eq!(
        server.json("/api/views")["instances"]["①"]["state"]["name"],
        json!("Ada")
    );
    assert_eq!(
        server.json("/api/views?at=1"),
        json!({
            "at": 1, "length": 4, "kinds": ["state"],
            "global": {"state": {"step": 1}}, "instances": {},
        })
    );
    let past = server.get("/api/views?at=9");
    assert_eq!(past.status, 400);
    assert_eq!(
        past.body,
        "{\"error\":\"at=9: the context has 4 message(s): there is no point after its first 9 (choose 0 to 4)\"}\n"
    );
}

#[test]
fn d75_inspect_serves_the_latest_views_an_instances_value_and_the_views_at_a_point() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    serves_the_views_now_and_at_a_point(&server);
}

#[test]
fn d75_inspect_pages_and_filters_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    let page = server.json("/api/log?limit=2");
    assert_eq!(page["length"], json!(4));
    assert_eq!(page["next"], json!(2));
    assert_eq!(
        page["messages"][1],
        json!({
            "number": 1, "type": "data", "kind": "state", "instance": "①",
            "method": "merge", "path": null, "date": null, "call": null, "callAt": null,
            "message": {"type": "data", "kind": "state", "data": {"name": "Ada"}, "_instance": "①"},
        })
    );
    let numbers = |path: &str| -> Vec<Value> {
        server.json(path)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["number"].clone())
            .collect()
    };
    assert_eq!(numbers("/api/log?from=2"), [json!(2), json!(3)]);
    assert_eq!(numbers("/api/log?instance=①"), [json!(1)]);
    assert_eq!(
        numbers("/api/log?kind=state&at=3"),
        [json!(0), json!(1), json!(2)]
    );
    assert_eq!(numbers("/api/log?q=ADA"), [json!(1)]);
    let bad = server.get("/api/log?from=x");
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.body,
        "{\"error\":\"Failed to deserialize query string: from: invalid digit found in string\"}\n"
    );
}

#[test]
fn d75_a_foreign_host_is_refused_with_403_saying_why_and_every_response_has_the_csp() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    let port = server.port;
    let refused = server.get_as(&format!("rebound.example:{port}"), "/api/views");
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.body,
        format!(
            "refused: the Host header is \"rebound.example:{port}\", not this server's address \
             (127.0.0.1:{port}, localhost:{port} or [::1]:{port}); agentctx inspect answers only \
             requests addressed to it, so a web page elsewhere cannot read the context through \
             DNS rebinding\n"
        )
    );
    for host in [format!("localhost:{port}"), format!("[::1]:{port}")] {
        assert_eq!(server.get_as(&host, "/api/views").status, 200, "{host}");
    }
    for (response, status) in [
        (refused, 403),
        (server.get("/api/views"), 200),
        (server.get("/"), 200),
        (server.get("/inspect.js"), 200),
        (server.get("/nowhere"), 404),
    ] {
        assert_eq!(response.status, status);
        let csp = response.header("content-security-policy").unwrap();
        assert!(csp.starts_with("default-src 'self'"), "{csp}");
        assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
    }
}

#[test]
fn d75_there_is_no_write_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let mut stream = server.connect();
        write!(
            stream,
            "{method} /api/log HTTP/1.1\r\nHost: {}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}",
            server.host()
        )
        .unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).unwrap();
        assert!(raw.starts_with("HTTP/1.1 405 "), "{method}: {raw}");
    }
}

/// Reads the event stream until `wanted` appears in it, or fails after
/// [`PATIENCE`].
fn wait_for_event(stream: &mut TcpStream, wanted: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    while !seen.contains(wanted) {
        assert!(
            Instant::now() < deadline,
            "no {wanted:?} in time; seen: {seen}"
        );
        stream
            .set_read_timeout(Some(
                deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            ))
            .unwrap();
        let n = match stream.read(&mut buffer) {
            Ok(0) => panic!("the stream ended; seen: {seen}"),
            Ok(n) => n,
            // Timed out: the deadline check above says so.
            Err(_) => 0,
        };
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
    seen
}

fn an_append_by_another_process_arrives_as_an_event(context: &str, server: &Server) {
    let mut events = server.connect();
    write!(
        events,
        "GET /api/events HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.host()
    )
    .unwrap();
    let opening = wait_for_event(&mut events, "event: length\ndata: {\"length\":4}");
    assert!(
        opening.contains("content-type: text/event-stream"),
        "{opening}"
    );
    let started = Instant::now();
    let run = agentctx(&["append", context, r#"{"type":"state","data":{"step":3}}"#]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    wait_for_event(
        &mut events,
        "event: messages\ndata: {\"from\":4,\"length\":5}",
    );
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(5), "the event took {waited:?}");
    assert_eq!(
        server.json("/api/views")["global"]["state"],
        json!({"step": 3})
    );
}

#[test]
fn d75_an_append_by_another_process_arrives_on_the_event_stream_within_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let context = file_context(&dir);
    let server = Server::start(&context);
    an_append_by_another_process_arrives_as_an_event(&context, &server);
}

/// The test database's URL with a password the server (trust auth)
/// ignores, when its address names a user without one.
fn with_password(url: &str) -> String {
    url.replacen("://root@", "://root:sekrit-pw@", 1)
}

#[test]
fn d75_inspect_serves_a_postgres_context_the_same_and_never_shows_its_password() {
    let url = with_password(&postgres_context("inspect"));
    let server = Server::start(&url);
    serves_the_views_now_and_at_a_point(&server);
    an_append_by_another_process_arrives_as_an_event(&url, &server);
    let log = server.get("/api/log");
    assert!(!log.body.contains("sekrit-pw"), "{}", log.body);
    let name = agent_core::json::from_str(&log.body).unwrap()["context"].clone();
    assert!(name.as_str().unwrap().starts_with("postgres://"), "{name}");
}

#[test]
fn d75_inspect_refuses_stdin_and_a_missing_context() {
    let stdin = agentctx(&["inspect", "-"]);
    assert_eq!(stdin.code, 2);
    assert_eq!(
        stdin.stderr,
        "error: inspect needs a CONTEXT file or PostgreSQL URL, not stdin: it watches the context grow\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.jsonl").display().to_string();
    let run = agentctx(&["inspect", &missing]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        format!("error: cannot read {missing}: No such file or directory (os error 2)\n")
    );
    assert_eq!(run.stdout, "");
}

#[test]
fn d75_a_replaced_file_is_reported_on_the_event_stream_and_the_views_stay() {
    let dir = tempfile::tempdir().unwrap();
    let context = file_context(&dir);
    let server = Server::start(&context);
    let mut events = server.connect();
    write!(
        events,
        "GET /api/events HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.host()
    )
    .unwrap();
    wait_for_event(&mut events, "event: length\n");
    std::fs::write(&context, "{\"type\":\"state\",\"data\":{\"other\":1}}\n").unwrap();
    wait_for_event(
        &mut events,
        &format!(
            "event: error\ndata: {{\"error\":\"{context} was truncated since it was read; load it again\",\"length\":4}}"
        ),
    );
    assert_eq!(server.json("/api/views"), latest_views());
}

#[test]
fn d75_the_page_and_its_script_name_nothing_outside_this_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    let page = server.get("/");
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        page.body.contains("<script src=\"/inspect.js\""),
        "{}",
        page.body
    );
    let script = server.get("/inspect.js");
    assert_eq!(
        script.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    for (name, body) in [("page", &page.body), ("script", &script.body)] {
        for outside in ["http:", "https:", "//", "<script>"] {
            let found = body.lines().find(|line| {
                // Comments of the script are not requests.
                !line.trim_start().starts_with("//") && line.contains(outside)
            });
            assert!(found.is_none(), "{name}: {outside:?} in {found:?}");
        }
    }
}

#[test]
fn d75_the_stylesheet_names_nothing_outside_this_server_either() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    let style = server.get("/inspect.css");
    assert_eq!(
        style.header("content-type"),
        Some("text/css; charset=utf-8")
    );
    for outside in ["http:", "https:", "url(", "@import"] {
        assert!(
            !style.body.contains(outside),
            "{outside:?} in the stylesheet"
        );
    }
    assert_eq!(server.get("/favicon.svg").status, 200);
}

/// A plan of three calls — search, then summarise what it found, then
/// publish the summary once `†state.approvals.publish` is written — and
/// the results of the first two, each carrying its call as `_call`.
fn plan_context(dir: &tempfile::TempDir) -> String {
    let search = r#"{"_tool":"search","q":"†state.topic","_outputPath":"†state.found"}"#;
    let summarise = r#"{"_tool":"summarise","text":"†state.found","_outputPath":"†state.summary"}"#;
    let publish = r#"{"_tool":"publish","text":"†state.summary","ok":"†state.approvals.publish","_outputPath":"†state.published"}"#;
    let messages = format!(
        r#"[{{"type":"state","data":{{"topic":"cats"}}}},
            {{"type":"plan","calls":[{search},{summarise},{publish}]}},
            {{"type":"state","data":{{"found":["a"]}},"_outputPath":"†state.found","_call":{search}}},
            {{"type":"state","data":{{"summary":"s"}},"_outputPath":"†state.summary","_call":{summarise}}}]"#
    );
    let path = dir.path().join("plan.jsonl").display().to_string();
    let run = agentctx(&["append", &path, &messages]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    path
}

/// Each call's `(state, reason)` in the plan `/api/plan` answers.
fn standings(plan: &Value) -> Vec<(String, Value)> {
    plan["plan"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["state"].as_str().unwrap().to_owned(), c["reason"].clone()))
        .collect()
}

#[test]
fn d78_the_plan_is_the_newest_at_the_point_each_call_standing_as_the_log_says() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&plan_context(&dir));
    let s = |state: &str, reason: Value| (state.to_owned(), reason);
    let now = server.json("/api/plan");
    assert_eq!(
        (&now["plan"]["number"], &now["plan"]["sort"]),
        (&json!(1), &json!("worker"))
    );
    assert_eq!(
        standings(&now),
        [
            s("done", Value::Null),
            s("done", Value::Null),
            s(
                "held",
                json!("held at an approval gate: missing †state.approvals.publish")
            ),
        ]
    );
    assert_eq!(now["plan"]["calls"][2]["dependsOn"], json!([1]));
    assert_eq!(
        standings(&server.json("/api/plan?at=2")),
        [
            s("ready", Value::Null),
            s("blocked", json!("waits for call 0")),
            s("blocked", json!("waits for call 1")),
        ]
    );
    assert_eq!(
        server.json("/api/plan?at=1"),
        json!({"plan": null, "at": 1, "length": 4})
    );
}

#[test]
fn d78_the_prompt_at_a_point_is_what_render_shows_with_its_token_count() {
    let dir = tempfile::tempdir().unwrap();
    let context = file_context(&dir);
    let server = Server::start(&context);
    let rendered = agentctx(&["render", &context, "--provider", "openai", "--tokens"]);
    let tokens = rendered
        .stderr
        .strip_prefix("tokens: ")
        .and_then(|rest| rest.strip_suffix(" (o200k_base)\n"))
        .unwrap_or_else(|| panic!("{}", rendered.stderr));
    let now = server.json("/api/prompt");
    assert_eq!(now["tokens"].to_string(), tokens);
    assert_eq!(
        (&now["mode"], &now["encoding"]),
        (&json!("merged"), &json!("o200k_base"))
    );
    let texts: Vec<&str> = now["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("\"name\": \"Ada\"")),
        "{texts:?}"
    );
    let first = server.json("/api/prompt?at=1&mode=append");
    let shown = first["messages"].to_string();
    assert!(
        shown.contains("\\\"step\\\": 1") && !shown.contains("Ada"),
        "{shown}"
    );
    let bad = server.get("/api/prompt?mode=sideways");
    assert_eq!(
        (bad.status, bad.body.as_str()),
        (
            400,
            "{\"error\":\"mode \\\"sideways\\\": expected merged or append\"}\n"
        )
    );
}

#[test]
fn d78_provenance_names_the_messages_that_made_a_value_in_the_layers_read() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    let made = |query: &str| server.json(&format!("/api/provenance?{query}"))["messages"].clone();
    assert_eq!(made("kind=state&path=%5B%22step%22%5D"), json!([0, 2]));
    assert_eq!(made("kind=state&path=%5B%22step%22%5D&at=1"), json!([0]));
    assert_eq!(made("kind=state&path=%5B%5D"), json!([0, 2]));
    assert_eq!(
        made("kind=state&instance=%E2%91%A0&path=%5B%22name%22%5D"),
        json!([1])
    );
    assert_eq!(made("kind=state&path=%5B%22name%22%5D"), json!([]));
    let bad = server.get("/api/provenance?kind=state&path=step");
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.body,
        "{\"error\":\"path \\\"step\\\": expected a JSON array of keys (strings) and indices \
         (integers), such as [\\\"user\\\",\\\"tags\\\",0]\"}\n"
    );
}

#[test]
fn d78_a_postgres_worker_plan_shows_each_calls_worker_attempts_and_last_error_at_the_latest_point()
{
    let url = fresh("insp-plan");
    let plan = r#"{"type":"plan","calls":[{"_tool":"ok","_outputPath":"†state.a"},
                   {"_tool":"broken","_outputPath":"†state.b"}]}"#;
    let appended = agentctx(&["append", &url, plan]);
    assert_eq!(appended.code, 0, "{}", appended.stderr);
    let worked = agentctx(&[
        "worker",
        &url,
        "--name",
        "w1",
        "--activity",
        "ok=echo 1",
        "--activity",
        "broken=echo no >&2; exit 3",
        "--retries",
        "0",
        "--until-idle",
    ]);
    assert_eq!(worked.code, 1, "{}", worked.stderr);
    let server = Server::start(&url);
    let now = server.json("/api/plan");
    let calls = &now["plan"]["calls"];
    let row = |i: usize| {
        let c = &calls[i];
        (
            c["state"].clone(),
            c["worker"].clone(),
            c["attempts"].clone(),
            c["error"].is_string(),
        )
    };
    assert_eq!(row(0), (json!("done"), json!("w1"), json!(1), false));
    assert_eq!(row(1), (json!("failed"), json!("w1"), json!(1), true));
    assert!(
        calls[1]["error"].as_str().unwrap().contains("exit"),
        "{}",
        calls[1]["error"]
    );
    // Before the result, the log alone: no table rows, no failure yet.
    let before = server.json("/api/plan?at=1");
    assert_eq!(
        standings(&before),
        [
            ("ready".to_owned(), Value::Null),
            ("ready".to_owned(), Value::Null)
        ]
    );
    assert_eq!(before["plan"]["calls"][1]["attempts"], Value::Null);
}
