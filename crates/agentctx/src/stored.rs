//! A stored context: open, read, apply and save in one motion.

use crate::{ContextExt, Error, Result};
use agent_data::{Context, Message, Warning};
use agent_output::{Call, Clock, Outcome, SystemClock};
use agent_plan::{Activities, Plan, Report};
use agent_render::{Provider, RenderMode};
use agent_store::{Append, Store, Stored};
use serde_json::Value;

/// A context in a file (`.jsonl`, or a `.json` array) or in PostgreSQL
/// (`postgres://…?context=NAME`), open for reading and writing. Every write
/// is one durable append (spec R34, R34b): validated against the context as
/// it is when it lands — other processes' appends included — whole or not
/// at all, and saved before the call returns. There is nothing to save
/// afterwards.
///
/// ```
/// use agentctx::prelude::*;
/// use serde_json::json;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("task.jsonl");
/// let mut ctx = StoredContext::open(path.to_str().unwrap())?; // created on the first write
/// ctx.append(json!({"type": "input", "data": {"city": "Austin"}}))?;
/// let call = json!({"_tool": "weather", "city": "†input.city", "_outputPath": "†state.forecast"});
/// ctx.apply(call, Outcome::Success(json!("sunny")))?;
///
/// let reopened = StoredContext::open(path.to_str().unwrap())?;
/// assert_eq!(reopened.get("†state.forecast")?, json!("sunny"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StoredContext {
    stored: Stored<Box<dyn Store + Send>>,
    clock: Box<dyn Clock + Send + Sync>,
}

impl std::fmt::Debug for StoredContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredContext")
            .field("name", &self.name())
            .field("messages", &self.context().len())
            .finish()
    }
}

impl StoredContext {
    /// Opens the context at `address` — a file path or a PostgreSQL URL —
    /// or starts it empty when it does not exist yet: the first write
    /// creates it.
    pub fn open(address: &str) -> Result<Self> {
        let store = agent_store::open(address)?;
        Ok(Self::from_stored(Stored::open_or_create(store)?))
    }

    /// Opens the context at `address`, which must exist.
    pub fn open_existing(address: &str) -> Result<Self> {
        let store = agent_store::open(address)?;
        Ok(Self::from_stored(Stored::open(store)?))
    }

    fn from_stored(stored: Stored<Box<dyn Store + Send>>) -> Self {
        StoredContext {
            stored,
            clock: Box::new(SystemClock),
        }
    }

    /// Uses `clock` for the `_date` of every result written from now on
    /// (a fixed one makes output reproducible).
    pub fn with_clock(mut self, clock: impl Clock + Send + Sync + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// The context's name: its path, or its URL without the password.
    pub fn name(&self) -> &str {
        self.stored.store().name()
    }

    /// The context as last read or written by this handle.
    pub fn context(&self) -> &Context {
        self.stored.context()
    }

    /// What loading warned about (a torn last line, R34).
    pub fn warnings(&self) -> &[Warning] {
        self.stored.warnings()
    }

    /// Reads what other writers appended since this handle last did.
    pub fn refresh(&mut self) -> Result<()> {
        Ok(self.stored.refresh()?)
    }

    /// [`ContextExt::get`] on the context as this handle holds it (call
    /// [`refresh`](Self::refresh) first to see other writers' appends).
    pub fn get(&self, expression: &str) -> Result<Value> {
        self.context().get(expression)
    }

    /// [`ContextExt::get_in`]: read for `instance`.
    pub fn get_in(&self, expression: &str, instance: &str) -> Result<Value> {
        self.context().get_in(expression, instance)
    }

    /// Appends `messages` — one message object, or an array of them — as
    /// given (R1 shapes), validated (R13, R25), all or none. Returns how
    /// many messages were appended.
    pub fn append(&mut self, messages: Value) -> Result<usize> {
        let items = match messages {
            Value::Array(items) => items,
            one => vec![one],
        };
        let mut batch = Vec::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            let normalised = Message::from_value(item).map_err(|fault| {
                Error::Data(agent_data::Error::Message {
                    index,
                    line: None,
                    fault,
                })
            })?;
            batch.extend(normalised);
        }
        Ok(self.stored.append_all(&batch)?.len())
    }

    /// Records a call's result where its `_outputPath` says (R19–R22) and
    /// returns the messages appended (none without `_outputPath`, R21).
    pub fn apply(&mut self, call: Value, outcome: Outcome) -> Result<Vec<Message>> {
        let call = Call::parse(call)?;
        Ok(agent_output::apply(
            &mut self.stored,
            &call,
            outcome,
            self.clock.as_ref(),
        )?)
    }

    /// Runs `plan` (calls in dependency order, spec §10 `run`) with
    /// `activities`, committing each result as it is written.
    pub fn run(&mut self, plan: Vec<Value>, activities: &Activities) -> Result<Report> {
        let plan = Plan::new(plan)?;
        Ok(plan.run(&mut self.stored, activities, self.clock.as_ref()))
    }

    /// What the model sees: [`crate::render()`] of this context.
    pub fn render(&self, provider: Provider, mode: RenderMode) -> Result<Value> {
        crate::render(self.context(), provider, mode)
    }
}
