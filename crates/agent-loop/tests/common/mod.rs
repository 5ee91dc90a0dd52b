//! What the loop's tests share: a scripted provider, a fixed clock, and
//! the request reader of their scripted HTTP servers.

#![allow(clippy::unwrap_used, dead_code)] // tests; not every test file uses all

use agent_core::{json, json::Value};
use agent_loop::{Answer, Error, Provider, Reply, Request, Usage};
use agent_output::FixedClock;
use std::collections::VecDeque;
use std::io::Read;
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::Duration;

/// A provider that answers from a script and keeps what it was asked.
pub struct Script {
    pub answers: Mutex<VecDeque<Result<std::result::Result<Value, String>, Error>>>,
    pub asked: Mutex<Vec<(Vec<String>, Value)>>,
}

impl Script {
    pub fn new(answers: Vec<std::result::Result<Value, String>>) -> Script {
        Script {
            answers: Mutex::new(answers.into_iter().map(Ok).collect()),
            asked: Mutex::new(Vec::new()),
        }
    }
}

impl Provider for Script {
    fn send(&self, request: &Request<'_>) -> Result<Reply, Error> {
        let texts = request.chat.iter().map(|m| m.text().to_owned()).collect();
        self.asked
            .lock()
            .unwrap()
            .push((texts, request.answer_schema.clone()));
        let next = self.answers.lock().unwrap().pop_front();
        let answer = next.unwrap_or_else(|| Ok(Ok(json!({"calls": [], "output": null}))))?;
        Ok(Reply::new(
            answer.and_then(Answer::from_value),
            Usage::new(100, 10),
        ))
    }
}

pub fn clock() -> FixedClock {
    FixedClock::parse("2026-01-01T00:00:00Z").unwrap()
}

/// One request's head and body, as text; `None` when the client closes
/// the connection or sends nothing for 10 s.
pub fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if bytes.len() >= end + 4 + length {
                return Some(text);
            }
        }
    }
}
