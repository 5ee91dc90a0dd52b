//! What the loop's tests share: a scripted provider and a fixed clock
//! (scripted HTTP servers are `test_support`'s).

#![allow(clippy::unwrap_used, dead_code)] // tests; not every test file uses all

use agent_core::{json, json::Value};
use agent_loop::{Answer, Error, Provider, Reply, Request, Usage};
use agent_output::FixedClock;
use std::collections::VecDeque;
use std::sync::Mutex;

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
