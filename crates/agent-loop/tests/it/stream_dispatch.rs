//! Calls started while the answer streams (spec R39, decision D77),
//! against a server scripted over a loopback socket that writes the
//! providers' documented event shapes (Chat Completions chunks up to
//! `data: [DONE]`; Messages events from `message_start` to
//! `message_stop`). No test waits forever: every wait has a timeout.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::common::clock;
use test_support::http::Server;
use test_support::sse::{FORMATS, Format, Framing, Step, play};

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_loop::{Anthropic, Confirm, Event, Finish, Loop, OpenAi, Provider, Retry, Tool};
use agent_plan::Activities;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Set by an activity when it starts; the server waits on it.
#[derive(Default)]
struct Signal {
    started: Mutex<bool>,
    changed: Condvar,
}

impl Signal {
    fn raise(&self) {
        *self.started.lock().unwrap() = true;
        self.changed.notify_all();
    }

    /// Whether it was raised within `limit`.
    fn wait(&self, limit: Duration) -> bool {
        let guard = self.started.lock().unwrap();
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, limit, |started| !*started)
            .unwrap();
        *guard
    }
}

/// Holds the stream open until an activity has started (at most 5 s),
/// noting in `seen` whether it did.
fn await_start(signal: &Arc<Signal>, seen: &Arc<Mutex<Option<bool>>>) -> Step {
    let (signal, seen) = (signal.clone(), seen.clone());
    Step::Call(Arc::new(move || {
        let started = signal.wait(Duration::from_secs(5));
        *seen.lock().unwrap() = Some(started);
    }))
}

/// A whole stream: `pieces` of the answer's text, each followed by the
/// step given with it.
fn stream(format: Format, pieces: Vec<(String, Option<Step>)>) -> Vec<Step> {
    format.stream(
        pieces
            .into_iter()
            .map(|(piece, after)| (piece, after.into_iter().collect())),
    )
}

/// A client of `format` at `base`, streaming or not, trying once.
fn client(format: Format, base: &str, stream: bool) -> Box<dyn Provider> {
    let key = Some("sk-test".to_owned());
    let timeout = Duration::from_secs(10);
    let retry = Retry::default().with_attempts(1);
    match format {
        Format::OpenAi | Format::OpenAiTool => Box::new(
            OpenAi::new(base, key, timeout, retry)
                .unwrap()
                .stream(stream),
        ),
        Format::Anthropic => Box::new(
            Anthropic::new(base, key, timeout, retry)
                .unwrap()
                .stream(stream),
        ),
    }
}

/// A server answering every connection with `steps` as a chunked event
/// stream, or with `whole` as one JSON body when the request does not ask
/// for a stream.
fn serve(steps: Vec<Step>, whole: String) -> String {
    let server = Server::start(move |stream, request, _| {
        if request.contains("\"stream\":true") || request.contains("\"stream\": true") {
            play(stream, &steps, Framing::Chunked);
        } else {
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{whole}",
                whole.len()
            );
        }
    });
    server.base
}

/// One explicit tool, `work`: it raises `signal`, sleeps `sleep`, and
/// returns its `text` (or its `n`), so a result shows what it read.
fn activities(signal: Arc<Signal>, sleep: Duration) -> Activities {
    let mut activities = Activities::new();
    activities.register("work", move |call: &Value| {
        signal.raise();
        std::thread::sleep(sleep);
        Ok(match call.get("text") {
            Some(text) => text.clone(),
            None => call["n"].clone(),
        })
    });
    activities
}

fn settings() -> Loop {
    let mut settings = Loop::new("m").with_max_turns(1);
    settings.tools = vec![
        Tool::new(
            json!({"type": "object", "properties": {"_tool": {"const": "work"},
            "text": {"type": "string"}, "n": {"type": "integer"}}}),
            "test tool",
        )
        .unwrap(),
    ];
    settings
}

fn task() -> Context {
    Context::from_json(r#"[{"type": "state", "data": {"note": "old"}}]"#).unwrap()
}

/// Runs one turn against `provider`, confirming every call; the log's
/// lines, the calls confirmed and how the loop ended.
fn run(
    provider: &dyn Provider,
    activities: &Activities,
) -> (Vec<String>, Vec<Value>, agent_loop::RunReport) {
    let mut ctx = task();
    let mut confirmed = Vec::new();
    let report = settings()
        .run_confirmed(
            provider,
            activities,
            &mut ctx,
            &clock(),
            &mut |_: Event<'_>| {},
            &mut |call| {
                confirmed.push(call.as_value().clone());
                Confirm::Run
            },
        )
        .unwrap();
    let lines = (0..ctx.len())
        .map(|i| ctx.message_json(i).unwrap().to_owned())
        .collect();
    (lines, confirmed, report)
}

fn call(text: &str) -> String {
    text.to_owned()
}

#[test]
fn d77_the_first_call_starts_before_the_answer_has_ended() {
    for format in FORMATS {
        let signal = Arc::new(Signal::default());
        let seen = Arc::new(Mutex::new(None));
        let first = call(r#"{"calls": [{"_tool": "work", "n": 1, "_outputPath": "†state.a"}"#);
        let rest =
            call(r#", {"_tool": "work", "n": 2, "_outputPath": "†state.b"}], "output": "done"}"#);
        let text = format!("{first}{rest}");
        let steps = stream(
            format,
            vec![(first, Some(await_start(&signal, &seen))), (rest, None)],
        );
        let base = serve(steps, format.whole(&text));
        let provider = client(format, &base, true);
        let activities = activities(signal, Duration::ZERO);
        let started = Instant::now();
        let (lines, _, report) = run(provider.as_ref(), &activities);
        assert!(started.elapsed() < Duration::from_secs(5), "{format:?}");
        assert_eq!(
            *seen.lock().unwrap(),
            Some(true),
            "{format:?}: the server held the stream open after the first call and no activity started"
        );
        assert_eq!(report.finish, Finish::Output(json!("done")), "{format:?}");
        assert!(lines[1].contains(r#""data":{"a":1}"#), "{lines:?}");
        assert!(lines[2].contains(r#""data":{"b":2}"#), "{lines:?}");
    }
}

#[test]
fn d77_streamed_and_whole_answers_append_the_same_log_when_a_later_call_writes_what_an_earlier_reads()
 {
    // The first call reads nothing and starts at once; the second reads
    // what the third writes (D18: it runs after it and reads "new"); the
    // fourth reads nothing but comes after a call that had to wait.
    let text = r#"{"calls": [
        {"_tool": "work", "n": 7, "_outputPath": "†state.seven"},
        {"_tool": "work", "text": "†state.note", "_outputPath": "†state.copy"},
        {"_tool": "work", "text": "new", "_outputPath": "†state.note"},
        {"_tool": "work", "n": 8, "_outputPath": "†state.eight"}],
      "output": "done"}"#;
    for format in FORMATS {
        let pieces = text
            .split_inclusive('}')
            .map(|p| (p.to_owned(), Some(Step::Pause(Duration::from_millis(20)))))
            .collect();
        let base = serve(stream(format, pieces), format.whole(text));
        let activities = activities(Arc::new(Signal::default()), Duration::ZERO);
        let streamed = run(client(format, &base, true).as_ref(), &activities);
        let whole = run(client(format, &base, false).as_ref(), &activities);
        assert_eq!(streamed.0, whole.0, "{format:?}");
        assert_eq!(streamed.2, whole.2, "{format:?}");
        assert_eq!(
            streamed.1, whole.1,
            "{format:?}: the hook is asked about the same calls in the same order"
        );
        assert_eq!(streamed.1.len(), 4);
        let copy = streamed
            .0
            .iter()
            .find(|l| l.contains("state.copy") || l.contains(r#""copy""#))
            .unwrap();
        assert!(copy.contains(r#""new""#), "{copy}");
    }
}

#[test]
fn d77_three_independent_one_second_calls_in_a_streamed_answer_take_about_one_second() {
    let calls = [1, 2, 3]
        .map(|n| format!(r#"{{"_tool": "work", "n": {n}, "_outputPath": "†state.r{n}"}}"#));
    let text = format!(r#"{{"calls": [{}], "output": "done"}}"#, calls.join(", "));
    let (head, tail) = text.split_at(text.find(r#"], "output""#).unwrap());
    for format in [Format::OpenAi, Format::Anthropic] {
        // The model goes on writing for a second after its last call.
        let pieces = vec![
            (head.to_owned(), Some(Step::Pause(Duration::from_secs(1)))),
            (tail.to_owned(), None),
        ];
        let base = serve(stream(format, pieces), format.whole(&text));
        let activities = activities(Arc::new(Signal::default()), Duration::from_secs(1));
        let started = Instant::now();
        let (lines, _, report) = run(client(format, &base, true).as_ref(), &activities);
        let took = started.elapsed();
        eprintln!("{format:?}: three one-second calls, streamed, took {took:?}");
        assert!(took >= Duration::from_secs(1), "{format:?}: {took:?}");
        assert!(took < Duration::from_millis(1700), "{format:?}: {took:?}");
        assert_eq!(report.finish, Finish::Output(json!("done")));
        let written: Vec<&String> = lines.iter().filter(|l| l.contains("\"state\"")).collect();
        assert_eq!(written.len(), 4, "{lines:?}");
        for (line, n) in written[1..].iter().zip(1..) {
            assert!(
                line.contains(&format!(r#""data":{{"r{n}":{n}}}"#)),
                "{line}"
            );
        }
    }
}

#[test]
fn d77_a_call_started_before_the_reply_turned_out_invalid_is_written_then_the_answer_error() {
    let first = r#"{"calls": [{"_tool": "work", "n": 1, "_outputPath": "†state.a"}"#;
    // The second call is complete but reads what a call may write: it
    // waits for the end, which never comes as a valid answer.
    let broken = r#", {"_tool": "work", "text": "†state.note", "_outputPath": "†state.b"} oops"#;
    for format in [Format::OpenAi, Format::Anthropic] {
        let signal = Arc::new(Signal::default());
        let seen = Arc::new(Mutex::new(None));
        let steps = stream(
            format,
            vec![
                (first.to_owned(), Some(await_start(&signal, &seen))),
                (broken.to_owned(), None),
            ],
        );
        let base = serve(steps, String::new());
        let activities = activities(signal, Duration::ZERO);
        let (lines, _, report) = run(client(format, &base, true).as_ref(), &activities);
        assert_eq!(*seen.lock().unwrap(), Some(true), "{format:?}");
        assert_eq!(report.finish, Finish::Unfinished { turns: 1 });
        assert_eq!(lines.len(), 3, "{format:?}: {lines:?}");
        assert!(lines[1].contains(r#""data":{"a":1}"#), "{}", lines[1]);
        let error: Value = agent_core::json::from_str(&lines[2]).unwrap();
        assert_eq!(error["kind"], "error");
        assert_eq!(error["data"]["call"], Value::Null);
        let text = error["data"]["error"].as_str().unwrap();
        assert!(
            text.starts_with("the answer is not JSON (expected `,` or `]` at line 1 column "),
            "{format:?}: {text}"
        );
    }
}

#[test]
fn d77_calls_started_before_a_cycle_was_seen_are_written_and_the_error_says_so() {
    let answer = json!({"calls": [
        {"_tool": "work", "n": 1, "_outputPath": "†state.a"},
        {"_tool": "work", "text": "†state.c", "_outputPath": "†state.b"},
        {"_tool": "work", "text": "†state.b", "_outputPath": "†state.c"}],
      "output": null});
    let script = crate::common::Script::new(vec![Ok(answer)]);
    let activities = activities(Arc::new(Signal::default()), Duration::ZERO);
    let (lines, _, _) = run(&script, &activities);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[1].contains(r#""data":{"a":1}"#), "{}", lines[1]);
    let error: Value = agent_core::json::from_str(&lines[2]).unwrap();
    assert_eq!(
        error["data"]["error"],
        "none of the answer's 3 calls ran but the 1 started before the answer ended: 2 of them read each other's results in a cycle: work → †state.b, then work → †state.c, then work → †state.b"
    );
}

#[test]
fn d77_a_call_started_before_the_stream_broke_is_written_and_the_loop_ends_with_the_error() {
    let first = r#"{"calls": [{"_tool": "work", "n": 1, "_outputPath": "†state.a"}"#;
    for format in [Format::OpenAi, Format::Anthropic] {
        let signal = Arc::new(Signal::default());
        let seen = Arc::new(Mutex::new(None));
        let mut steps = format
            .opening()
            .into_iter()
            .map(Step::Write)
            .collect::<Vec<_>>();
        steps.push(Step::Write(format.piece(first)));
        steps.push(await_start(&signal, &seen));
        steps.push(Step::Cut);
        let base = serve(steps, String::new());
        let activities = activities(signal, Duration::ZERO);
        let mut ctx = task();
        let error = settings()
            .run(
                client(format, &base, true).as_ref(),
                &activities,
                &mut ctx,
                &clock(),
                &mut |_| {},
            )
            .unwrap_err();
        assert_eq!(*seen.lock().unwrap(), Some(true), "{format:?}");
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("request to {base}/")),
            "{format:?}: {text}"
        );
        assert!(
            text.ends_with(
                "unexpected EOF during chunk size line (after 1 call(s) were reported, so it is not retried)"
            ),
            "{format:?}: {text}"
        );
        assert_eq!(ctx.len(), 2, "{format:?}");
        assert!(ctx.message_json(1).unwrap().contains(r#""data":{"a":1}"#));
    }
}
