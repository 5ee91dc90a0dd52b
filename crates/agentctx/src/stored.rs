//! A stored context: open, read, apply and save in one motion.

#[cfg(doc)]
use crate::Error;
use crate::{Address, Appendable, ContextExt, Result};
use agent_core::json::Value;
use agent_data::Append;
use agent_data::{Context, Message, Warning};
use agent_output::{Call, Clock, Outcome, SystemClock};
use agent_plan::{Activities, Plan, Report};
use agent_render::{PayloadFormat, RenderMode};
use agent_store::{Store, Stored};
use std::borrow::Borrow;

mod keyed;

/// A context in a file (`.jsonl`, or a `.json` array) or in PostgreSQL
/// (`postgres://…?context=NAME`), open for reading and writing. Every write
/// is one durable append (spec R34, R34b): validated against the context as
/// it is when it lands — other processes' appends included — whole or not
/// at all, and saved before the call returns. There is nothing to save
/// afterwards.
///
/// ```
/// use agentctx::prelude::*;
/// use agentctx::json;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("task.jsonl");
/// let mut ctx = StoredContext::open(&path)?; // created on the first write
/// ctx.append(json!({"type": "input", "data": {"city": "Austin"}}))?;
/// let call = json!({"_tool": "weather", "city": "†input.city", "_outputPath": "†state.forecast"});
/// ctx.apply(call, Outcome::Success(json!("sunny")))?;
///
/// let mut reopened = StoredContext::open(path)?;
/// assert_eq!(reopened.get("†state.forecast")?, json!("sunny"));
/// let payload = reopened.render(PayloadFormat::OpenAi, RenderMode::Merged)?; // every message
/// assert_eq!(payload["messages"][0]["role"], "user");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Opening costs O(tail)
///
/// [`open`](Self::open) and [`open_existing`](Self::open_existing) read
/// what reads and appends need, as the `agentctx` commands that read
/// views do (D37: snapshots): the store's newest snapshot that matches the
/// log, and the messages after it ([`Store::load_tail`]); a context with
/// no usable snapshot is read whole. Views, [`get`](Self::get), appends,
/// [`apply`](Self::apply) and [`run`](Self::run) are the same either way.
/// Such a handle holds every view but not every message
/// ([`Context::is_complete`] is false, [`Context::held_from`] says from
/// where it holds them all), so what walks the messages reads the whole
/// log the first time it is asked, once (D50: facade opens in O(tail)):
/// [`render`](Self::render), [`message`](Self::message) of a message
/// before the snapshot's end, and [`whole`](Self::whole), which hands out
/// the complete context. That read goes through a store of its own, so a
/// failure is returned as [`Error::Store`] and leaves this handle as it
/// was; it reads the log as it is then, so the handle also catches up
/// with other writers' appends, as [`refresh`](Self::refresh) would.
/// [`context`](Self::context) never reads: through it, messages before
/// [`Context::held_from`] are `None` until the whole log was read.
pub struct StoredContext {
    stored: Stored<Box<dyn Store + Send>>,
    /// The address as given (a PostgreSQL URL with its password, which
    /// the store's name leaves out), to open a store for a whole read.
    address: Address,
    clock: Box<dyn Clock + Send + Sync>,
    /// The application's own `_` keys (D63: typos refused).
    allowed: Vec<String>,
}

impl std::fmt::Debug for StoredContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredContext")
            .field("name", &self.name())
            .field("messages", &self.context().len())
            .field("held_from", &self.context().held_from())
            .finish()
    }
}

impl StoredContext {
    /// Opens the context at `address` — a file path or a PostgreSQL URL,
    /// as a [`Path`](std::path::Path), a `PathBuf` or text ([`Address`]) —
    /// or starts it empty when it does not exist yet: the first write
    /// creates it. Reads its snapshot and the messages after it, in
    /// O(tail) ([`Stored::open_or_create_tail`]); see [the type's
    /// docs](Self#opening-costs-otail) for what then reads the whole log.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the file or database cannot be read, is locked
    /// beyond waiting, or holds a log that does not load.
    pub fn open(address: impl Into<Address>) -> Result<Self> {
        let address = address.into();
        let store = address.store()?;
        Ok(Self::from_stored(
            address,
            Stored::open_or_create_tail(store)?,
        ))
    }

    /// Opens the context at `address`, which must exist, in O(tail) as
    /// [`open`](Self::open) does ([`Stored::open_tail`]).
    ///
    /// # Errors
    ///
    /// [`Error::Store`] as for [`open`](Self::open), and when the context does
    /// not exist.
    pub fn open_existing(address: impl Into<Address>) -> Result<Self> {
        let address = address.into();
        let store = address.store()?;
        Ok(Self::from_stored(address, Stored::open_tail(store)?))
    }

    /// A new, empty context kept in this process's memory: the same
    /// validated, all-or-nothing appends as a file's, without the file
    /// (an [`agent_store::MemoryStore`]). It ends with this handle.
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::json;
    ///
    /// let mut ctx = StoredContext::in_memory();
    /// ctx.append(json!({"type": "state", "data": {"n": 1}, "schema": {"properties": {"n": {"type": "integer"}}}}))?;
    /// assert!(ctx.append(json!({"type": "state", "data": {"n": "one"}})).is_err()); // refused, nothing written
    /// assert_eq!(ctx.get("†state.n")?, json!(1));
    /// assert_eq!(ctx.context().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_memory() -> Self {
        let store = agent_store::MemoryStore::new("a context in memory");
        let address = Address::memory(store.clone());
        Self::from_stored(address, Stored::create(Box::new(store)))
    }

    /// A new context in this process's memory holding `context`'s
    /// messages as they are (a copy: writing to one leaves the other as
    /// it was) — what [`at`](Self::at) returns, made writable.
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::json;
    ///
    /// let mut ctx = StoredContext::in_memory();
    /// ctx.append(json!({"type": "state", "data": {"step": 1}}))?;
    /// ctx.append(json!({"type": "state", "data": {"step": 2}}))?;
    /// let mut branch = StoredContext::in_memory_from(&ctx.at(1)?)?;
    /// branch.append(json!({"type": "state", "data": {"step": 3}}))?;
    /// assert_eq!(branch.context().len(), 2);
    /// assert_eq!(ctx.get("†state.step")?, json!(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when a message cannot be copied (nested too deep,
    /// an invalid schema).
    pub fn in_memory_from(context: &Context) -> Result<Self> {
        let mut store = agent_store::MemoryStore::new("a context in memory");
        agent_store::copy_context(context, &mut store)?;
        let address = Address::memory(store.clone());
        let boxed: Box<dyn Store + Send> = Box::new(store);
        Ok(Self::from_stored(address, Stored::open(boxed)?))
    }

    fn from_stored(address: Address, stored: Stored<Box<dyn Store + Send>>) -> Self {
        StoredContext {
            stored,
            address,
            clock: Box::new(SystemClock),
            allowed: Vec::new(),
        }
    }

    /// Uses `clock` for the `_date` of every result written from now on
    /// (a fixed one makes output reproducible).
    pub fn with_clock(mut self, clock: impl Clock + Send + Sync + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Admits `keys`, the application's own `_` keys, in the messages
    /// and calls this handle appends, applies and runs. Any other `_` key
    /// the engine does not read is refused as the typo it most likely is,
    /// naming the key meant (D63: typos refused).
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::json;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("task.jsonl");
    /// let mut ctx = StoredContext::open(path)?;
    /// let typo = json!({"_tool": "t", "_outputpath": "†state.x"});
    /// let err = ctx.apply(typo, Outcome::Success(json!(1))).unwrap_err();
    /// assert_eq!(err.to_string(), r#"unknown key "_outputpath"; did you mean "_outputPath"?"#);
    ///
    /// let mut ctx = ctx.allow_keys(["_trace"]);
    /// ctx.append(json!({"type": "state", "data": {"x": 1}, "_trace": "a1"}))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn allow_keys<K: Into<String>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        self.allowed.extend(keys.into_iter().map(Into::into));
        self
    }

    /// The context's name: its path, or its URL without the password.
    pub fn name(&self) -> &str {
        self.stored.store().name()
    }

    /// The context as last read or written by this handle. Its views are
    /// complete; its messages may not be: opened from a snapshot, it holds
    /// those from [`Context::held_from`] on (and [`Context::message`] is
    /// `None` before), until [`whole`](Self::whole), [`render`](Self::render)
    /// or [`message`](Self::message) read the whole log. Never reads.
    pub fn context(&self) -> &Context {
        self.stored.context()
    }

    /// The context with every message ([`Context::is_complete`]): as held,
    /// when it is; else the whole log, read once through a store of its
    /// own and held from then on (with what other writers appended since
    /// this handle last read). A failed read is [`Error::Store`] and
    /// changes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the whole log cannot be read; nothing changes.
    pub fn whole(&mut self) -> Result<&Context> {
        if !self.stored.context().is_complete() {
            // A store of its own: a read that fails half way leaves this
            // handle's store where it was, in step with the context it
            // holds, so appends go on as before.
            let store = self.address.store()?;
            self.stored = Stored::open(store)?;
        }
        Ok(self.stored.context())
    }

    /// Message `index` of the context as this handle holds it, normalised;
    /// `None` past its end. One from before [`Context::held_from`] reads
    /// the whole log first (once, as [`whole`](Self::whole) does).
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the whole log has to be read and cannot be.
    pub fn message(&mut self, index: usize) -> Result<Option<Message>> {
        if index >= self.context().len() {
            return Ok(None);
        }
        if let Some(message) = self.context().message(index) {
            return Ok(Some(message));
        }
        Ok(self.whole()?.message(index))
    }

    /// What loading warned about (a torn last line, R34).
    pub fn warnings(&self) -> &[Warning] {
        self.stored.warnings()
    }

    /// Reads what other writers appended since this handle last did.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the store cannot be read.
    pub fn refresh(&mut self) -> Result<()> {
        Ok(self.stored.refresh()?)
    }

    /// [`ContextExt::get`] on the context as this handle holds it (call
    /// [`refresh`](Self::refresh) first to see other writers' appends).
    ///
    /// # Errors
    ///
    /// Those of [`ContextExt::get`]: [`Error::Syntax`] for an expression that
    /// does not parse, [`Error::Unresolved`] when what it reads is not present.
    pub fn get(&self, expression: &str) -> Result<Value> {
        self.context().get(expression)
    }

    /// [`ContextExt::get_in`]: read for `instance`.
    ///
    /// # Errors
    ///
    /// Those of [`get`](Self::get), and [`Error::Core`] for an instance id R2
    /// refuses.
    pub fn get_in(&self, expression: &str, instance: &str) -> Result<Value> {
        self.context().get_in(expression, instance)
    }

    /// [`ContextExt::get_ref`]: one reference's value, borrowed from the
    /// context as this handle holds it, without the copy [`get`](Self::get)
    /// makes (`get` evaluates `||` and `&&`, and so returns an owned value).
    ///
    /// # Errors
    ///
    /// Those of [`ContextExt::get_ref`]: [`Error::Syntax`],
    /// [`Error::NotAReference`] for more than one reference, and
    /// [`Error::Unresolved`].
    pub fn get_ref(&self, reference: &str) -> Result<&Value> {
        self.context().get_ref(reference)
    }

    /// [`ContextExt::get_ref_in`]: [`get_ref`](Self::get_ref) read for
    /// `instance`.
    ///
    /// # Errors
    ///
    /// Those of [`get_ref`](Self::get_ref), and [`Error::Core`] for an
    /// instance id R2 refuses.
    pub fn get_ref_in(&self, reference: &str, instance: &str) -> Result<&Value> {
        self.context().get_ref_in(reference, instance)
    }

    /// Appends `messages` — one message object or an array of them as
    /// JSON (R1 shapes), or [`Message`]s ([`Appendable`]) — validated
    /// (R13, R25), all or none, in one durable append; a `_` key the
    /// engine does not read is refused unless [allowed](Self::allow_keys).
    /// Returns how many messages were appended.
    /// [`ContextExt::append_value`] does the same on a context in memory.
    ///
    /// # Errors
    ///
    /// [`Error::Data`] for a message that is not valid, an unknown `_` key or
    /// an append refused (R13, R25); [`Error::Store`] when the store fails.
    /// Nothing is appended on error, except that a PostgreSQL `InDoubt`
    /// error means the commit may have landed: read before retrying.
    pub fn append(&mut self, messages: impl Appendable) -> Result<usize> {
        crate::append::append(&mut self.stored, messages, &self.allowed)
    }

    /// Parses `call` and [applies](Self::apply_call) it: records the
    /// result where its `_outputPath` says (R19–R22) and returns the
    /// messages appended (none without `_outputPath`, R21).
    ///
    /// # Errors
    ///
    /// [`Error::Output`] for a bad call or outcome, a refused append, or the
    /// store failing (`agent_output::Error::Store` inside). Nothing is
    /// appended on error, except that a PostgreSQL `InDoubt` error means
    /// the commit may have landed: read before retrying.
    pub fn apply(&mut self, call: Value, outcome: Outcome) -> Result<Vec<Message>> {
        self.apply_call(&Call::parse(call)?, outcome)
    }

    /// Records the result of a parsed `call` where its `_outputPath` says
    /// (R19–R22), in one durable append, and returns the messages appended
    /// (none without `_outputPath`, R21). A `_` key the engine does not
    /// read is refused unless [allowed](Self::allow_keys).
    /// [`ContextExt::apply`] writes the same messages in memory.
    ///
    /// # Errors
    ///
    /// [`Error::Output`] for an unknown `_` key, an outcome the call has
    /// no place for, a refused append, or the store failing
    /// (`agent_output::Error::Store` inside). Nothing is appended on error,
    /// except that a PostgreSQL `InDoubt` error means the commit may have
    /// landed: read before retrying.
    pub fn apply_call(&mut self, call: &Call, outcome: Outcome) -> Result<Vec<Message>> {
        crate::append::apply(
            &mut self.stored,
            call,
            outcome,
            self.clock.as_ref(),
            &self.allowed,
        )
    }

    /// Records every result — pairs of a call (`Call` or `&Call`) and its
    /// outcome — in ONE durable append, all or none, and returns the
    /// messages appended, in order. The batch is validated as one (R13,
    /// R25, decision D39): each write against the views the earlier ones
    /// leave, each layer's schema on the view its last write leaves. When
    /// a result is refused — its outcome has no place in its call, its
    /// write is a type error or breaks a schema — nothing is written and
    /// the error is [`Error::Batch`], naming the result by its place.
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::json;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let mut ctx = StoredContext::open(dir.path().join("task.jsonl"))?;
    /// ctx.append(json!({"type": "state", "data": {"n": 0}}))?;
    /// let a = Call::parse(json!({"_tool": "a", "_outputPath": "†state.a"}))?;
    /// let n = Call::parse(json!({"_tool": "n", "_outputPath": "†state.n"}))?;
    /// let written = ctx.apply_all([(&a, Outcome::Success(json!(1))), (&n, Outcome::Success(json!(2)))])?;
    /// assert_eq!(written.len(), 2);
    ///
    /// // The second result writes inside the number the first one sets.
    /// let deep = Call::parse(json!({"_tool": "d", "_outputPath": "†state.a.deep"}))?;
    /// let refused = ctx.apply_all([(&a, Outcome::Success(json!(3))), (&deep, Outcome::Success(json!(4)))]);
    /// assert_eq!(refused.unwrap_err().to_string(),
    ///     "call 1 of the batch: message 4 (¶state) refused: type error at .a: cannot write inside a number");
    /// assert_eq!(ctx.get("†state.a")?, json!(1)); // nothing was written
    /// assert_eq!(ctx.context().len(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Batch`] around the [`Error::Output`] of the result to
    /// blame; [`Error::Output`] alone when the store fails. Nothing is
    /// appended on error.
    pub fn apply_all<C: Borrow<Call>>(
        &mut self,
        results: impl IntoIterator<Item = (C, Outcome)>,
    ) -> Result<Vec<Message>> {
        crate::append::apply_all(
            &mut self.stored,
            results,
            self.clock.as_ref(),
            &self.allowed,
        )
    }

    /// Runs `plan` (calls in dependency order, spec §10 `run`) with
    /// `activities`, committing each result as it is written.
    ///
    /// # Errors
    ///
    /// [`Error::Plan`] for a plan that does not build (a bad call, a cycle).
    /// A call that fails, or a store failure that stops the run (D42: one readiness rule), is
    /// not an error: the [`Report`] says so.
    pub fn run(&mut self, plan: Vec<Value>, activities: &Activities) -> Result<Report> {
        let plan = self.checked_plan(plan)?;
        Ok(plan.run(&mut self.stored, activities, self.clock.as_ref()))
    }

    /// [`run`](Self::run), with each call's result appended at most once
    /// under a key derived from `key` and the call's index
    /// ([`Plan::run_keyed`]): running the plan again with the same key
    /// after a failure or an in-doubt commit writes nothing twice (the
    /// activities do run again).
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::data::AppendKey;
    /// use agentctx::json;
    ///
    /// let mut ctx = StoredContext::in_memory();
    /// ctx.append(json!({"type": "state", "data": {"log": []}}))?;
    /// let plan = vec![json!({"_tool": "note", "_outputPath": "†state.log", "_outputMethod": "push"})];
    /// let mut activities = Activities::new();
    /// activities.register("note", activity(|_| Ok(json!("x"))));
    /// let key = AppendKey::new("job-1")?;
    /// ctx.run_keyed(plan.clone(), &activities, &key)?;
    /// ctx.run_keyed(plan, &activities, &key)?; // the result was written: nothing again
    /// assert_eq!(ctx.get("†state.log")?, json!(["x"]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`run`](Self::run).
    pub fn run_keyed(
        &mut self,
        plan: Vec<Value>,
        activities: &Activities,
        key: &agent_data::AppendKey,
    ) -> Result<Report> {
        let plan = self.checked_plan(plan)?;
        Ok(plan.run_keyed(&mut self.stored, activities, self.clock.as_ref(), Some(key)))
    }

    fn checked_plan(&self, plan: Vec<Value>) -> Result<Plan> {
        let plan = Plan::new(plan)?;
        for (index, call) in plan.calls().iter().enumerate() {
            call.check_keys(&self.allowed)
                .map_err(|e| agent_plan::Error::BadCall {
                    index,
                    reason: e.to_string(),
                })?;
        }
        Ok(plan)
    }

    /// The context as it was after its first `k` messages (all of them
    /// when `k` is past the end): time travel, read from the log. Reads
    /// the whole log first when this handle holds only its tail.
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::json;
    ///
    /// let mut ctx = StoredContext::in_memory();
    /// ctx.append(json!({"type": "state", "data": {"step": 1}}))?;
    /// ctx.append(json!({"type": "state", "data": {"step": 2}}))?;
    /// assert_eq!(ctx.at(1)?.get("†state.step")?, json!(1));
    /// assert_eq!(ctx.get("†state.step")?, json!(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the whole log cannot be read.
    pub fn at(&mut self, k: usize) -> Result<Context> {
        let whole = self.whole()?;
        Ok(whole.prefix(k.min(whole.len()))?)
    }

    /// Checks the stored log as `agentctx verify` does: the chain
    /// recomputed from the log itself and compared with every digest kept
    /// beside it (a file's head record and checkpoints, PostgreSQL's rows,
    /// snapshots). Reads through a store of its own; this handle is left
    /// as it was. [`Verified::expect`](crate::store::Verified::expect)
    /// adds a head kept elsewhere.
    ///
    /// ```
    /// use agentctx::prelude::*;
    /// use agentctx::json;
    ///
    /// let mut ctx = StoredContext::in_memory();
    /// ctx.append(json!({"type": "state", "data": {"n": 1}}))?;
    /// let verified = ctx.verify()?;
    /// assert!(verified.findings.is_empty());
    /// assert_eq!(verified.head, ctx.context().head());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the log cannot be read at all.
    pub fn verify(&self) -> Result<agent_store::Verified> {
        Ok(self.address.store()?.verify()?)
    }

    /// What the model sees: [`crate::payload()`] of this context, with
    /// every message — read whole first when this handle holds only the
    /// tail ([`whole`](Self::whole)), so it renders exactly what a handle
    /// that read the whole log would.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the whole log cannot be read, and those of
    /// [`crate::payload()`].
    pub fn render(&mut self, provider: PayloadFormat, mode: RenderMode) -> Result<Value> {
        crate::payload(self.whole()?, provider, mode)
    }
}
