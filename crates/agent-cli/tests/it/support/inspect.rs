//! `agentctx inspect` started from tests: the context every such test
//! starts with, and a server whose requests are raw HTTP over TCP, each
//! with a timeout.

use super::{agentctx, command, fresh};
use agent_core::json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

/// How long any one wait of these tests may take.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The messages every context here starts with: a global write, an
/// instance's write, and a second global write.
pub const START: &str = r#"[
  {"type":"state","data":{"step":1}},
  {"type":"state","data":{"name":"Ada"},"_instance":"①"},
  {"type":"state","data":{"step":2}},
  {"type":"text","text":"done"}
]"#;

pub fn file_context(dir: &tempfile::TempDir) -> String {
    file_context_of(dir, START)
}

/// `c.jsonl` in `dir`, `messages` appended to it.
pub fn file_context_of(dir: &tempfile::TempDir, messages: &str) -> String {
    let path = dir.path().join("c.jsonl").display().to_string();
    let run = agentctx(&["append", &path, messages]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    path
}

pub fn postgres_context(name: &str) -> String {
    let url = fresh(name);
    let run = agentctx(&["append", &url, START]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    url
}

/// A running `agentctx inspect`, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `agentctx inspect CONTEXT` and reads the URL it prints first.
    pub fn start(context: &str) -> Server {
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

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `GET path` with `Host: host`: the status, the headers (names in
    /// lower case) and the body.
    pub fn get_as(&self, host: &str, path: &str) -> Response {
        self.exchange(&format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n"))
    }

    /// Sends `head` (a request line and headers, each ending in CRLF) and
    /// reads the whole response.
    pub fn exchange(&self, head: &str) -> Response {
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

    pub fn get(&self, path: &str) -> Response {
        self.get_as(&self.host(), path)
    }

    /// `GET path` answered 200 with JSON.
    pub fn json(&self, path: &str) -> Value {
        let response = self.get(path);
        assert_eq!(response.status, 200, "{path}: {}", response.body);
        agent_core::json::from_str(&response.body).unwrap()
    }

    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream.set_write_timeout(Some(PATIENCE)).unwrap();
        stream
    }
}

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}
