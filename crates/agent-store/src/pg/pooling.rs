//! Telling a direct connection from one through a transaction pooler
//! (D109: behind a pooler), from two things a pooler cannot make agree:
//!
//! - the process id the server gave at login (`BackendKeyData`, read here
//!   as the bytes pass) against the server session's own
//!   (`pg_backend_pid()`): a pooler hands its clients keys of its own, as
//!   a client is tied to no one server session;
//! - this end of the socket against the client the server session sees
//!   (`inet_client_addr()`, `inet_client_port()`), and where it listens:
//!   a pooler's session has the pooler as its client.
//!
//! Either one disagreeing means pooled. A plain TCP proxy or NAT in front
//! of a server disagrees on the second, and costs only what a pooled
//! connection forgoes (`agentctx_pooled=no` says otherwise).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// This end of the connection's socket.
pub(crate) enum Near {
    Tcp(std::net::SocketAddr),
    /// The socket file's directory and port.
    Unix(PathBuf, u16),
}

/// No process id seen (yet).
const UNSEEN: i64 = i64::MIN;

/// Reads the server's first messages as they pass, until it is ready for
/// queries, and keeps the process id of its `BackendKeyData`.
pub(crate) struct Login {
    header: [u8; 5],
    /// Bytes of `header` read; 5 while in a message's body.
    have: usize,
    /// The body's bytes still to come.
    left: usize,
    key: [u8; 4],
    key_have: usize,
    done: bool,
    pid: Arc<AtomicI64>,
}

impl Login {
    /// A reader, and where it puts the process id.
    pub(crate) fn new() -> (Login, Arc<AtomicI64>) {
        let pid = Arc::new(AtomicI64::new(UNSEEN));
        let login = Login {
            header: [0; 5],
            have: 0,
            left: 0,
            key: [0; 4],
            key_have: 0,
            done: false,
            pid: Arc::clone(&pid),
        };
        (login, pid)
    }

    /// Takes in `bytes` the server sent, in order.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while !self.done && !bytes.is_empty() {
            if self.have < 5 {
                let n = (5 - self.have).min(bytes.len());
                self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
                self.have += n;
                bytes = &bytes[n..];
                if self.have == 5 {
                    let length = i32::from_be_bytes([
                        self.header[1],
                        self.header[2],
                        self.header[3],
                        self.header[4],
                    ]);
                    // Not the protocol as expected: stop reading (unseen).
                    let Some(body) = usize::try_from(length).ok().and_then(|l| l.checked_sub(4))
                    else {
                        self.done = true;
                        return;
                    };
                    self.left = body;
                    self.key_have = 0;
                    if body == 0 {
                        self.end();
                    }
                }
                continue;
            }
            let n = self.left.min(bytes.len());
            if self.header[0] == b'K' && self.key_have < 4 {
                let take = n.min(4 - self.key_have);
                self.key[self.key_have..self.key_have + take].copy_from_slice(&bytes[..take]);
                self.key_have += take;
            }
            self.left -= n;
            bytes = &bytes[n..];
            if self.left == 0 {
                self.end();
            }
        }
    }

    fn end(&mut self) {
        match self.header[0] {
            b'K' if self.key_have == 4 => {
                let pid = i32::from_be_bytes(self.key);
                self.pid.store(i64::from(pid), Ordering::Relaxed);
            }
            // Ready for queries: the login is over.
            b'Z' => self.done = true,
            _ => {}
        }
        self.have = 0;
    }
}

/// What the server session says of itself: `WHO`'s row.
pub(crate) struct Session<'r> {
    pub(crate) pid: Option<&'r str>,
    pub(crate) client_address: Option<&'r str>,
    pub(crate) client_port: Option<&'r str>,
    pub(crate) port: Option<&'r str>,
    pub(crate) socket_directories: &'r str,
}

/// True when something says a pooler is in between: the login's process
/// id (`key`, unseen when the login could not be read) is not the
/// session's, or the session's client is not `near`.
pub(crate) fn pooled(near: &Near, key: &AtomicI64, session: &Session<'_>) -> bool {
    let key = key.load(Ordering::Relaxed);
    let other_key = key == UNSEEN || session.pid != Some(key.to_string().as_str());
    let other_client = match near {
        Near::Tcp(local) => {
            session.client_address != Some(local.ip().to_string().as_str())
                || session.client_port != Some(local.port().to_string().as_str())
        }
        Near::Unix(dir, at) => {
            session.client_address.is_some()
                || session.port != Some(at.to_string().as_str())
                || !session
                    .socket_directories
                    .split(',')
                    .any(|d| std::path::Path::new(d.trim()) == dir.as_path())
        }
    };
    other_key || other_client
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(i32::try_from(body.len()).unwrap() + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn d109_the_logins_process_id_is_read_however_the_bytes_are_split() {
        let mut stream = message(b'R', &0i32.to_be_bytes());
        stream.extend(message(b'S', b"server_version\x0015\x00"));
        let mut key = 4242i32.to_be_bytes().to_vec();
        key.extend_from_slice(&7i32.to_be_bytes());
        stream.extend(message(b'K', &key));
        stream.extend(message(b'Z', b"I"));
        // What comes after the login is not read as messages of it.
        stream.extend(message(b'K', &[0, 0, 0, 9, 0, 0, 0, 9]));
        for chunk in [1, 2, 3, 5, 7, stream.len()] {
            let (mut login, pid) = Login::new();
            for part in stream.chunks(chunk) {
                login.feed(part);
            }
            assert_eq!(pid.load(Ordering::Relaxed), 4242, "chunks of {chunk}");
        }
        // A stream that is not the protocol leaves it unseen.
        let (mut login, pid) = Login::new();
        login.feed(&[b'N', 0, 0, 0, 1, b'K']);
        assert_eq!(pid.load(Ordering::Relaxed), UNSEEN);
    }

    #[test]
    fn d109_a_session_is_direct_only_when_its_key_and_its_client_agree() {
        let near = Near::Tcp("127.0.0.1:50000".parse().unwrap());
        let key = AtomicI64::new(4242);
        let session = |pid, port| Session {
            pid: Some(pid),
            client_address: Some("127.0.0.1"),
            client_port: Some(port),
            port: Some("5432"),
            socket_directories: "/var/run/postgresql",
        };
        assert!(!pooled(&near, &key, &session("4242", "50000")));
        // A pooler whose own port happens to be this end's: its key differs.
        assert!(pooled(&near, &key, &session("777", "50000")));
        assert!(pooled(&near, &key, &session("4242", "50001")));
        assert!(pooled(
            &near,
            &AtomicI64::new(UNSEEN),
            &session("4242", "50000")
        ));
    }
}
