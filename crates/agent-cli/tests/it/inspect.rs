//! Time travel on the command line (R34f) and `agentctx inspect` (D75: inspect server):
//! the real binary, real HTTP over TCP, a real PostgreSQL server for the
//! PostgreSQL cases. Every read has a timeout: a server that hangs fails
//! the test instead of holding it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::agentctx;
use crate::support::inspect::{PATIENCE, Server, file_context, postgres_context};
use agent_core::{json, json::Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

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
            "method": "merge", "path": null, "date": null, "ms": null, "worker": null,
            "attempt": null, "call": null, "callAt": null,
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
    let bad_point = server.get("/api/views?at=x");
    assert_eq!(
        (bad_point.status, bad_point.body.as_str()),
        (
            400,
            "{\"error\":\"at: not a point: a point is a whole number of messages, 0 to 4 (the \
             context's length)\"}\n"
        )
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
    for (method, path) in [("POST", "/api/nothing"), ("OPTIONS", "/")] {
        let host = server.host();
        let refused = server.exchange(&format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n"));
        assert_eq!(refused.status, 405, "{method} {path}");
        assert_eq!(refused.header("allow"), Some("GET, HEAD"));
        assert_eq!(
            refused.body,
            format!(
                "{{\"error\":\"{method} is not answered: agentctx inspect only reads, and \
                 answers GET and HEAD only\"}}\n"
            )
        );
    }
}

#[test]
fn d75_head_is_answered_as_get_without_a_body_and_a_bad_point_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&file_context(&dir));
    let host = server.host();
    for path in ["/", "/api/log", "/api/views"] {
        let got = server.get(path);
        let head = server.exchange(&format!("HEAD {path} HTTP/1.1\r\nHost: {host}\r\n"));
        assert_eq!((head.status, got.status), (200, 200), "{path}");
        assert_eq!(
            head.header("content-type"),
            got.header("content-type"),
            "{path}"
        );
        assert_eq!(head.body, "", "{path}");
    }
    for at in ["-1", "abc"] {
        let bad = server.get(&format!("/api/views?at={at}"));
        assert_eq!(bad.status, 400, "{at}");
        let length = server.json("/api/views")["length"].clone();
        assert_eq!(
            bad.body,
            format!(
                "{{\"error\":\"at: not a point: a point is a whole number of messages, 0 to \
                 {length} (the context's length)\"}}\n"
            ),
            "{at}"
        );
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
    let plan = server.get("/plan.js");
    let changes = server.get("/changes.js");
    for (name, asset) in [("/plan.js", &plan), ("/changes.js", &changes)] {
        assert_eq!(
            asset.header("content-type"),
            Some("text/javascript; charset=utf-8"),
            "{name}"
        );
        assert!(
            page.body.contains(&format!("<script src=\"{name}\"")),
            "{name}"
        );
    }
    for (name, body) in [
        ("page", &page.body),
        ("script", &script.body),
        ("plan script", &plan.body),
        ("changes script", &changes.body),
    ] {
        for outside in ["http:", "https:", "//", "<script>"] {
            let found = body.lines().find(|line| {
                // Comments of the script are not requests, and the SVG
                // namespace is a name, never fetched.
                !line.trim_start().starts_with("//")
                    && line
                        .replace("\"http://www.w3.org/2000/svg\"", "")
                        .contains(outside)
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
