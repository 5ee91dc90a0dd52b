//! A streamed answer read into the same [`Reply`] as a whole one (spec R38,
//! decision D56): each format gathers its events into the body the server
//! would have sent whole, so every lenient reading of D53 still applies,
//! while the answer's calls are reported as soon as each is complete.

use crate::provider::Reply;
use crate::provider::body::{Fault, Received, Success};
use crate::provider::sse::{self, Event};
use crate::{Error, Result};
use agent_core::json::Value;

/// Reports an answer's calls once each, in order, as they become known.
pub(crate) struct Reporter<'a> {
    on_call: &'a mut dyn FnMut(usize, &Value),
    reported: Vec<Value>,
    /// The scanner whose calls are reported: the first to complete one.
    source: Option<u8>,
}

impl<'a> Reporter<'a> {
    /// Reports to `on_call`.
    pub(crate) fn new(on_call: &'a mut dyn FnMut(usize, &Value)) -> Reporter<'a> {
        Reporter {
            on_call,
            reported: Vec::new(),
            source: None,
        }
    }

    /// Calls the scanner `source` completed. A format may scan more than
    /// one place the answer could be (content and a native tool call);
    /// only the first place to complete a call is followed — the whole
    /// answer, at the end, decides whether it was the right one.
    pub(crate) fn offer(&mut self, source: u8, calls: Vec<Value>) {
        if calls.is_empty() || *self.source.get_or_insert(source) != source {
            return;
        }
        for call in calls {
            self.report(call);
        }
    }

    fn report(&mut self, call: Value) {
        (self.on_call)(self.reported.len(), &call);
        self.reported.push(call);
    }

    /// The reply once whole: its calls not reported yet are reported now.
    /// An answer whose calls do not begin with those already reported (a
    /// key given twice, content beside a native call) is an answer error,
    /// so no call is ever reported that the answer does not hold.
    pub(crate) fn finish(&mut self, mut reply: Reply) -> Reply {
        if let Ok(answer) = &reply.answer {
            if !answer.calls.starts_with(&self.reported) {
                reply.answer = Err(format!(
                    "the answer's first {} call(s), as they streamed, are not those of the whole answer; give \"calls\" once",
                    self.reported.len()
                ));
                return reply;
            }
            for call in answer.calls[self.reported.len()..].iter().cloned() {
                self.report(call);
            }
        }
        reply
    }
}

/// One format's reading of a stream's events.
pub(crate) trait Assemble {
    /// Takes one event; `Ok(true)` once the stream says it is complete.
    fn event(
        &mut self,
        event: &Event,
        reporter: &mut Reporter<'_>,
        fault: Fault<'_>,
    ) -> Result<bool>;

    /// The reply the events made, read as the whole body would be.
    fn reply(self) -> Result<Reply>;

    /// Bytes of the answer gathered so far (text, arguments, names): what
    /// the answer's limit holds a stream to, as it holds a whole body.
    fn gathered(&self) -> usize;
}

/// Reads a successful response: its events when it streams, else its
/// whole body through `whole` (a server that ignores `"stream": true`).
pub(crate) fn receive(
    success: Success<'_>,
    mut assemble: impl Assemble,
    reporter: &mut Reporter<'_>,
    whole: fn(&Value) -> Result<Reply>,
) -> Received<Reply> {
    if !success.is_event_stream() {
        return match success.json() {
            Received::Done(body) => match whole(&body) {
                Ok(reply) => Received::Done(reporter.finish(reply)),
                Err(error) => Received::Fatal(error),
            },
            Received::Fatal(error) => Received::Fatal(error),
            Received::Broken(error, retry) => Received::Broken(error, retry),
        };
    }
    let (mut events, fault) = success.events();
    let mut any = false;
    loop {
        match events.next_event() {
            Ok(Some(event)) => {
                any = true;
                let done = match assemble.event(&event, reporter, fault) {
                    Ok(done) => done,
                    Err(error) => return Received::Fatal(error),
                };
                if assemble.gathered() as u64 > fault.limit() {
                    return Received::Fatal(fault.too_large());
                }
                if done {
                    break;
                }
            }
            // A stream that ends without its closing event is read for
            // what it holds: the answer's own check decides.
            Ok(None) => break,
            Err(sse::Fault::TooLarge) => return Received::Fatal(fault.too_large()),
            Err(sse::Fault::Io(e)) => {
                let error = fault.broken(&e);
                let reported = reporter.reported.len();
                // Calls already reported may be running: the request is
                // not sent again (unless time ran out: that is a timeout).
                if reported == 0 {
                    return Received::Broken(error, true);
                }
                let Error::Http { url, reason } = error else {
                    return Received::Broken(error, false);
                };
                return Received::Broken(
                    Error::Http {
                        url,
                        reason: format!(
                            "{reason} (after {reported} call(s) were reported, so it is not retried)"
                        ),
                    },
                    false,
                );
            }
        }
    }
    if !any {
        return Received::Fatal(Error::BadReply {
            reason: "the event stream holds no event".into(),
        });
    }
    match assemble.reply() {
        Ok(reply) => Received::Done(reporter.finish(reply)),
        Err(error) => Received::Fatal(error),
    }
}

/// An event's data as JSON; a stream that is not is no reply.
pub(crate) fn event_json(event: &Event) -> Result<Value> {
    agent_core::json::from_str(&event.data).map_err(|e| Error::BadReply {
        reason: format!(
            "a stream event's data is not JSON ({e}): {}",
            agent_core::quoted(&crate::provider::short(&event.data, 200))
        ),
    })
}

/// The error a stream's `error` event carries.
pub(crate) fn stream_error(event: &Event, fault: Fault<'_>) -> Error {
    Error::StreamError {
        url: fault.url().to_owned(),
        message: crate::provider::message::provider_message(&event.data),
    }
}
