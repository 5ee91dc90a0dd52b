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
        self.exchange(&format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n"))
    }

    /// Sends `head` (a request line and headers, each ending in CRLF) and
    /// reads the whole response.
    fn exchange(&self, head: &str) -> Response {
        let mut stream = self.connect();
        write!(stream, "{head}Connection: close\r\n\r\n").unwrap();
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
    // Backwards: the last matches before a number, and where the pages
    // beside it start.
    assert_eq!(numbers("/api/log?before=4&limit=2"), [json!(2), json!(3)]);
    assert_eq!(
        numbers("/api/log?before=3&kind=state&limit=2"),
        [json!(1), json!(2)]
    );
    let last = server.json("/api/log?before=4&limit=2&kind=state");
    assert_eq!(
        (&last["previous"], &last["next"]),
        (&json!(0), &Value::Null)
    );
    let first = server.json("/api/log?limit=1&kind=state");
    assert_eq!(
        (&first["previous"], &first["next"]),
        (&Value::Null, &json!(1))
    );
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
            "{{\"error\":\"refused: the Host header is \\\"rebound.example:{port}\\\", not this \
             server's address (127.0.0.1:{port}, localhost:{port} or [::1]:{port}); agentctx \
             inspect answers only requests addressed to it, so a web page elsewhere cannot read \
             the context through DNS rebinding\"}}\n"
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
    for (method, path) in [
        ("HEAD", "/api/log"),
        ("POST", "/api/nothing"),
        ("OPTIONS", "/"),
    ] {
        let host = server.host();
        let refused = server.exchange(&format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n"));
        assert_eq!(refused.status, 405, "{method} {path}");
        assert_eq!(refused.header("allow"), Some("GET"));
        if method != "HEAD" {
            assert_eq!(
                refused.body,
                format!(
                    "{{\"error\":\"{method} is not answered: agentctx inspect only reads, and \
                     answers GET only\"}}\n"
                )
            );
        }
    }
}

#[test]
fn d78_a_request_another_site_sent_is_refused_though_it_names_this_host() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    let host = server.host();
    let get = |headers: &str| {
        server.exchange(&format!(
            "GET /api/views?at=1 HTTP/1.1\r\nHost: {host}\r\n{headers}"
        ))
    };
    for from_elsewhere in [
        "Sec-Fetch-Site: cross-site\r\n",
        "Sec-Fetch-Site: same-site\r\n",
        "Origin: https://evil.example\r\n",
        "Origin: null\r\n",
    ] {
        let refused = get(from_elsewhere);
        assert_eq!(refused.status, 403, "{from_elsewhere}");
        assert!(
            refused.body.contains("not from this server's own page"),
            "{}",
            refused.body
        );
    }
    let port = server.port;
    for own in [
        String::new(),
        "Sec-Fetch-Site: same-origin\r\n".to_owned(),
        "Sec-Fetch-Site: none\r\n".to_owned(),
        format!("Origin: http://127.0.0.1:{port}\r\nSec-Fetch-Site: same-origin\r\n"),
        format!("Origin: http://localhost:{port}\r\n"),
    ] {
        assert_eq!(get(&own).status, 200, "{own}");
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
    // A page opened afterwards is told too, right after the length.
    let mut later = server.connect();
    write!(
        later,
        "GET /api/events HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.host()
    )
    .unwrap();
    let seen = wait_for_event(
        &mut later,
        &format!(
            "event: error\ndata: {{\"error\":\"{context} was truncated since it was read; load \
             it again\",\"length\":4}}"
        ),
    );
    assert!(
        seen.contains("event: length\ndata: {\"length\":4}"),
        "{seen}"
    );
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
            // A worker plan has no approval gates: `status` says blocked.
            s("blocked", json!("missing †state.approvals.publish")),
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
    // `step` is a number: the newest merge replaced it; before it, the first.
    assert_eq!(made("kind=state&path=%5B%22step%22%5D"), json!([2]));
    assert_eq!(made("kind=state&path=%5B%22step%22%5D&at=1"), json!([0]));
    // The view itself: each merge of an object merged into it.
    assert_eq!(made("kind=state&path=%5B%5D"), json!([0, 2]));
    let in_one = "kind=state&instance=%E2%91%A0&path=";
    assert_eq!(made(&format!("{in_one}%5B%22name%22%5D")), json!([1]));
    assert_eq!(made(&format!("{in_one}%5B%22step%22%5D")), json!([2]));
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

#[test]
fn d78_provenance_follows_the_fold_instance_layer_first_stopping_where_a_write_replaced_the_value()
{
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl").display().to_string();
    // Written as a file, not appended: an append refuses the push onto a
    // string (R13), where loading skips it (R12).
    let lines = [
        r#"{"type":"state","data":{"name":"G0","list":[1]}}"#,
        r#"{"type":"state","data":{"name":"I"},"_instance":"i1"}"#,
        r#"{"type":"state","data":{"name":"G1"}}"#,
        r#"{"type":"state","data":null,"_outputMethod":"erase","_instance":"i2"}"#,
        r#"{"type":"state","data":{"x":1},"_instance":"i2"}"#,
        r#"{"type":"state","data":{"x":2}}"#,
        r#"{"type":"state","data":{"list":2},"_outputPath":"†state.list","_outputMethod":"push"}"#,
        r#"{"type":"state","data":{"name":"oops"},"_outputPath":"†state.name","_outputMethod":"push"}"#,
        r#"{"type":"state","data":{"a":{"b":1,"c":2}}}"#,
        r#"{"type":"state","data":{"a":{"c":3}},"_outputMethod":"assign"}"#,
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let server = Server::start(&path);
    let made = |instance: &str, segments: &str| {
        let query = format!("kind=state&instance={instance}&path={segments}");
        server.json(&format!("/api/provenance?{query}"))["messages"].clone()
    };
    // i1 reads its own name, written over the whole global view (R5).
    assert_eq!(made("i1", "%5B%22name%22%5D"), json!([1]));
    // i2's own write made its x: the later global one is beneath it.
    assert_eq!(made("i2", "%5B%22x%22%5D"), json!([4]));
    // i2's erase removed the global view beneath its layer: its view is
    // what it wrote since, over nothing global.
    assert_eq!(made("i2", "%5B%5D"), json!([3, 4]));
    // A push adds to the list the first write made; a push onto a string
    // was skipped (R12) and made nothing.
    assert_eq!(made("", "%5B%22list%22%5D"), json!([0, 6]));
    assert_eq!(made("", "%5B%22name%22%5D"), json!([2]));
    // An assign replaces the top-level keys it names whole.
    assert_eq!(made("", "%5B%22a%22,%22b%22%5D"), json!([9]));
}

#[test]
fn r39c_a_loop_plans_calls_are_held_and_rejected_at_approval_gates_as_the_loop_would() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gates.jsonl").display().to_string();
    let messages = r#"[{"type":"state","data":{"approvals":{"b":false,"c":"yes"}}},
      {"type":"plan","plan":[
        {"_tool":"a","ok":"†state.approvals.a","_outputPath":"†state.x"},
        {"_tool":"a2","in":"†state.x","_outputPath":"†state.y"},
        {"_tool":"b","ok":"†state.approvals.b","_outputPath":"†state.z"},
        {"_tool":"c","in":"†state.approvalsLog","_outputPath":"†state.w"},
        {"_tool":"d","ok":"†state.approvals.c","_outputPath":"†state.v"},
        {"_tool":"e","in":"†state.missing","ok":"†state.approvals.e","_outputPath":"†state.u"}]}]"#;
    let run = agentctx(&["append", &path, messages]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let server = Server::start(&path);
    let plan = server.json("/api/plan");
    assert_eq!(plan["plan"]["sort"], json!("loop"));
    let s = |state: &str, reason: &str| (state.to_owned(), json!(reason));
    assert_eq!(
        standings(&plan),
        [
            s(
                "held",
                "held at an approval gate: missing †state.approvals.a"
            ),
            s(
                "held",
                "held: it depends on call 0, held at an approval gate"
            ),
            s(
                "rejected",
                "rejected at the approval gate †state.approvals.b"
            ),
            // Not a gate: a reference under another key.
            s("blocked", "missing †state.approvalsLog"),
            s(
                "failed",
                "not run: the approval gate †state.approvals.c holds a string; a gate is true \
                 (run the calls it holds) or false (reject them)"
            ),
            // Missing more than a gate: blocked however it is gated.
            s("blocked", "missing †state.missing, †state.approvals.e"),
        ]
    );
}
