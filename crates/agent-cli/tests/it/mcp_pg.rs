//! `agentctx mcp` on a PostgreSQL context keeps a few connections between
//! its calls (D114: a pool per process) instead of connecting anew at
//! each: spoken to over stdio as a client would, its server sessions
//! counted in `pg_stat_activity`.

use crate::support::{agentctx, command};
use agent_core::json::{self, Value};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use test_support::database::{direct_url, unique_name};

/// The server sessions of `application` now, by process id.
fn sessions(raw: &mut postgres::Client, application: &str) -> Vec<i32> {
    raw.query(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
        &[&application],
    )
    .unwrap()
    .iter()
    .map(|row| row.get(0))
    .collect()
}

#[test]
fn d114_mcp_on_postgresql_answers_twenty_calls_from_at_most_four_kept_sessions() {
    let application = unique_name("mcp", "pool");
    let url = format!(
        "{}?application_name={application}&context={}",
        direct_url(),
        unique_name("cli", "mcp-pool")
    );
    let seeded = agentctx(&["append", &url, r#"{"type":"state","data":{"n":1}}"#]);
    assert_eq!(seeded.code, 0, "{}", seeded.stderr);
    let mut child = command(&["mcp", &url])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        let request = json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "the server closed"
            );
            let answer: Value = json::from_str(&line).unwrap();
            if answer["id"] == json::json!(id) {
                return answer;
            }
        }
    };
    let hello = ask(
        0,
        "initialize",
        json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "agentctx-test", "version": "0"}}),
    );
    assert!(hello["result"]["serverInfo"].is_object(), "{hello}");
    let mut raw = postgres::Client::connect(&direct_url(), postgres::NoTls).unwrap();
    let mut seen = BTreeSet::new();
    for id in 1..=20 {
        let answer = ask(
            id,
            "tools/call",
            json::json!({"name": "view", "arguments": {"kind": "state"}}),
        );
        assert_eq!(answer["result"]["isError"], json::json!(false), "{answer}");
        assert!(answer.to_string().contains(r#"\"n\":1"#), "{answer}");
        // Between calls the server keeps its connections open: a call
        // that connected anew would have closed its own by now.
        let now = sessions(&mut raw, &application);
        assert!(!now.is_empty(), "no session kept after call {id}");
        seen.extend(now);
    }
    assert!(
        seen.len() <= 4,
        "{} server sessions over 20 calls: {seen:?}",
        seen.len()
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
