//! What a runner records beside a result: when the activity started, and
//! which worker and attempt ran it — and, for a call that writes nothing,
//! a record that it ran (D112: what ran is recorded).

use crate::clock::stamp;
use crate::{Call, Clock, Error, Outcome, Result, messages_for};
use agent_core::json::{Map, Value};
use agent_data::{Append, DataMessage, Message, OpaqueMessage, RAN_TYPE};
use std::time::SystemTime;

/// How a runner ran one call: when its activity started and, for a
/// worker, which worker and which attempt (its claim's fencing token).
///
/// ```
/// use agent_output::Ran;
/// use std::time::UNIX_EPOCH;
///
/// let ran = Ran::started_at(UNIX_EPOCH).by("w1", 2);
/// assert_eq!(ran.started(), UNIX_EPOCH);
/// assert_eq!(ran.worker(), Some(("w1", 2)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    started: SystemTime,
    worker: Option<(String, u32)>,
}

impl Ran {
    /// A run whose activity started at `started` (read from the same clock
    /// that stamps `_date`, so `_date − _started` is how long it took).
    pub fn started_at(started: SystemTime) -> Ran {
        Ran {
            started,
            worker: None,
        }
    }

    /// The same run, by the worker named `worker` on its `attempt`th claim.
    #[must_use]
    pub fn by(mut self, worker: impl Into<String>, attempt: u32) -> Ran {
        self.worker = Some((worker.into(), attempt));
        self
    }

    /// When the activity started.
    pub fn started(&self) -> SystemTime {
        self.started
    }

    /// The worker and its attempt, when a worker ran it.
    pub fn worker(&self) -> Option<(&str, u32)> {
        self.worker
            .as_ref()
            .map(|(name, attempt)| (name.as_str(), *attempt))
    }

    /// `fields` with `_started`, `_worker` and `_attempt` added, each only
    /// when missing (a message an activity returned whole keeps its own,
    /// R22), just before `_date` so a line reads start, then end.
    fn stamp_into(&self, fields: Map) -> Result<Map> {
        let mut added: Vec<(&str, Value)> = Vec::new();
        if !fields.contains_key("_started") {
            added.push(("_started", stamp(self.started)?.into()));
        }
        if let Some((worker, attempt)) = &self.worker {
            if !fields.contains_key("_worker") {
                added.push(("_worker", worker.as_str().into()));
            }
            if !fields.contains_key("_attempt") {
                added.push(("_attempt", Value::from(*attempt)));
            }
        }
        if added.is_empty() {
            return Ok(fields);
        }
        let mut out = Map::with_capacity(fields.len() + added.len());
        let mut pending = Some(added);
        for (key, value) in fields {
            if key == "_date"
                && let Some(added) = pending.take()
            {
                for (k, v) in added {
                    out.insert(k.to_owned(), v);
                }
            }
            out.insert(key, value);
        }
        for (k, v) in pending.into_iter().flatten() {
            out.insert(k.to_owned(), v);
        }
        Ok(out)
    }
}

/// The messages a runner appends for `outcome` of `call`, run as `ran`
/// says: [`messages_for`]'s, the one carrying `_call` also carrying
/// `_started` (and `_worker`, `_attempt`); for a call without
/// `_outputPath`, which writes nothing (R21), one `ran` record instead —
/// `{"type":"ran","_call":…,"_started":…,"_date":…}`, with `"_failed":
/// true` when it failed — so the log shows that it ran, and when (R21b).
///
/// # Errors
///
/// Those of [`messages_for`]; [`Error::Date`] for a start outside the
/// years 0000 to 9999.
///
/// ```
/// use agent_output::{messages_for_run, Call, FixedClock, Outcome, Ran};
/// use agent_core::json;
///
/// let clock = FixedClock::parse("2026-01-01T00:00:02Z")?;
/// let started = FixedClock::parse("2026-01-01T00:00:00.5Z")?;
/// let ran = Ran::started_at(agent_output::Clock::now(&started));
///
/// let notify = Call::parse(json!({"_tool": "notify", "to": "ops"}))?;
/// let record = messages_for_run(&notify, Outcome::Success(json!(null)), &clock, &ran)?;
/// assert_eq!(record[0].to_value(), json!({
///     "type": "ran", "_call": {"_tool": "notify", "to": "ops"},
///     "_started": "2026-01-01T00:00:00.500Z", "_date": "2026-01-01T00:00:02Z"
/// }));
///
/// let fetch = Call::parse(json!({"_tool": "fetch", "_outputPath": "†state.page"}))?;
/// let result = messages_for_run(&fetch, Outcome::Success(json!("<html>")), &clock, &ran.by("w1", 1))?;
/// assert_eq!(result[0].fields()["_started"], json!("2026-01-01T00:00:00.500Z"));
/// assert_eq!(result[0].fields()["_worker"], json!("w1"));
/// assert_eq!(result[0].fields()["_attempt"], json!(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn messages_for_run(
    call: &Call,
    outcome: Outcome,
    clock: &dyn Clock,
    ran: &Ran,
) -> Result<Vec<Message>> {
    if call.output_path().is_none() {
        let failed = matches!(outcome, Outcome::Failure(_));
        // Whatever it returned is dropped, as R21 drops it.
        drop(messages_for(call, outcome, clock)?);
        return ran_record(call, failed, clock, ran).map(|m| vec![m]);
    }
    let mut messages = messages_for(call, outcome, clock)?;
    // The first message carries `_call` (D36: fan-out recorded once), and
    // the run with it.
    if let Some(Message::Data(first)) = messages.first_mut() {
        let fields = ran.stamp_into(std::mem::replace(first, empty()).into_fields())?;
        *first = DataMessage::from_value(Value::Object(fields)).map_err(Error::Record)?;
    }
    Ok(messages)
}

/// [`apply`](crate::apply) for a runner: writes what [`messages_for_run`]
/// builds — a result with when and by whom it ran, or a `ran` record for a
/// call that writes nothing — validated and appended together or not at
/// all.
///
/// # Errors
///
/// Those of [`messages_for_run`] and of [`apply`](crate::apply).
///
/// ```
/// use agent_data::Context;
/// use agent_output::{apply_run, Call, FixedClock, Outcome, Ran};
/// use agent_core::json;
///
/// let mut ctx = Context::new();
/// let clock = FixedClock::parse("2026-01-01T00:00:01Z")?;
/// let ran = Ran::started_at(agent_output::Clock::now(&clock));
/// let notify = Call::parse(json!({"_tool": "notify"}))?;
/// apply_run(&mut ctx, &notify, Outcome::Failure(json!("smtp down")), &clock, &ran)?;
/// // Nothing is written to a view; the log says it ran, and failed.
/// assert_eq!(ctx.identities().len(), 0);
/// assert_eq!(ctx.message(0).unwrap().fields()["_failed"], json!(true));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply_run(
    target: &mut (impl Append + ?Sized),
    call: &Call,
    outcome: Outcome,
    clock: &dyn Clock,
    ran: &Ran,
) -> Result<Vec<Message>> {
    let messages = messages_for_run(call, outcome, clock, ran)?;
    target.append_all(&messages)?;
    Ok(messages)
}

fn ran_record(call: &Call, failed: bool, clock: &dyn Clock, ran: &Ran) -> Result<Message> {
    let mut fields = Map::new();
    fields.insert("type".into(), RAN_TYPE.into());
    fields.insert("_call".into(), call.as_value().clone());
    let mut fields = ran.stamp_into(fields)?;
    fields.insert("_date".into(), stamp(clock.now())?.into());
    if failed {
        fields.insert("_failed".into(), Value::Bool(true));
    }
    OpaqueMessage::new(Value::Object(fields))
        .map(Message::Opaque)
        .map_err(Error::Record)
}

fn empty() -> DataMessage {
    DataMessage::new(agent_core::Kind::data(), Value::Null)
}
