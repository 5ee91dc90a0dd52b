//! A loopback HTTP server whose connections a script answers: each request
//! is read whole, kept, and handed to the script with the connection's
//! number, on a thread of its own (a stalled connection never holds up the
//! next).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long [`read_request`] waits for the client to send more.
pub const READ_PATIENCE: Duration = Duration::from_secs(10);

/// A running scripted server (it runs until the test process ends).
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The port it listens on.
    pub port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Listens on a free loopback port; `script(stream, request, n)`
    /// answers the `n`th connection (from 0) once its request was read.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// let server = test_support::http::Server::start(|stream, _, n| {
    ///     test_support::http::respond(stream, "200 OK", "", &format!("{{\"n\":{n}}}"));
    /// });
    /// let mut client = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    /// client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    /// let mut answer = String::new();
    /// client.read_to_string(&mut answer).unwrap();
    /// assert!(answer.ends_with("{\"n\":0}"));
    /// assert_eq!(server.connections(), 1);
    /// assert_eq!(server.requests()[0], "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    /// ```
    pub fn start(script: impl Fn(&mut TcpStream, &str, usize) + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = (connections.clone(), requests.clone());
        let script = Arc::new(script);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let n = count.fetch_add(1, Ordering::SeqCst);
                let (seen, script) = (seen.clone(), script.clone());
                std::thread::spawn(move || {
                    if let Some(request) = read_request(&mut stream) {
                        // Kept before the script answers: a client that
                        // has its answer may count the requests at once.
                        seen.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(request.clone());
                        script(&mut stream, &request, n);
                    }
                });
            }
        });
        Server {
            base: format!("http://127.0.0.1:{port}"),
            port,
            connections,
            requests,
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Every request read so far, head and body, as text.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// One request's head and body, as text; `None` when the client closes
/// the connection or sends nothing for [`READ_PATIENCE`].
pub fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    stream.set_read_timeout(Some(READ_PATIENCE)).ok()?;
    loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&buf[..n]);
        let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&bytes[..end]);
        let length = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        if bytes.len() >= end + 4 + length {
            return Some(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
}

/// The body of a request [`read_request`] returned.
///
/// ```
/// assert_eq!(test_support::http::body("POST / HTTP/1.1\r\n\r\n{}"), "{}");
/// ```
pub fn body(request: &str) -> &str {
    request.split_once("\r\n\r\n").map_or("", |(_, body)| body)
}

/// Writes a whole response with a JSON body and closes the exchange;
/// `headers` are extra lines, each ending in `\r\n`.
pub fn respond(stream: &mut TcpStream, status: &str, headers: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
