//! A worker: one of any number of processes, on any machines, running the
//! newest plan of a context stored in PostgreSQL together (D41: claims and leases).
//!
//! One thread coordinates: it reads where the calls stand, claims ready
//! calls up to the concurrency, hands each to a thread that runs its
//! activity, and commits what comes back — one call's result at a time,
//! through [`PgStore::commit_call`], which writes a call's result once
//! however often its activity ran, and only from the call's current claim
//! (D43: fencing): a result from a claim another worker took over is
//! fenced off, counted and dropped. Between rounds it sleeps until a
//! notification (another worker committed or gave a call back), one of its
//! activities finishes, a lease it must renew or watch runs out, or a
//! retry's backoff ends.

use crate::judged::{Judged, KeptRows};
use crate::listen::{Listening, listen};
use crate::report::{Counts, Progress};
use crate::schedule::{TAKEOVERS, next_wake, parse_plan, retry_delay, transient, window};
use crate::{Error, WorkerOptions, WorkerReport};
use agent_data::Append;
use agent_data::Message;
use agent_output::{Call, Clock, Outcome, Ran};
use agent_plan::{Activities, Plan, Standing, Stop};
use agent_store::{
    CallRow, Claim, ClaimRequest, Error as StoreError, Listener, PgCalls, PgPool, PgStore, Stored,
};
use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

/// The newest plan, parsed, and where its calls stood at the last round.
struct Current {
    row: u64,
    plan: Plan,
    writes_after: Vec<Vec<usize>>,
    rows: KeptRows,
    judged: Option<Judged>,
}

/// What an activity thread sends back.
pub(crate) enum Event {
    Finished(Claim, Ran, Result<Outcome, String>),
    Changed,
}

/// A worker over the context at a PostgreSQL URL, or in a process's
/// [`PgPool`].
pub struct Worker {
    at: Source,
    options: WorkerOptions,
    activities: Activities,
    clock: Box<dyn Clock>,
}

/// Where a worker's context is, and how it connects.
enum Source {
    /// Connections of its own: two, and one to listen.
    Url(String),
    /// The pool's connections, one during each call, and its shared
    /// listening one (D114: a pool per process).
    Pool(PgPool, String),
}

impl Source {
    fn store(&self) -> Result<PgStore, StoreError> {
        match self {
            Source::Url(url) => PgStore::open(url),
            Source::Pool(pool, context) => pool.store(context),
        }
    }

    fn calls(&self) -> Result<PgCalls, StoreError> {
        match self {
            Source::Url(url) => PgCalls::open(url),
            Source::Pool(pool, context) => pool.calls(context),
        }
    }

    fn listener(&self) -> Result<Listener, StoreError> {
        match self {
            Source::Url(url) => Listener::open(url),
            Source::Pool(pool, _) => pool.listener(),
        }
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("Worker");
        match &self.at {
            Source::Url(url) => out.field("url", &agent_store::without_password(url)),
            Source::Pool(pool, context) => out.field("pool", pool).field("context", context),
        };
        out.field("options", &self.options)
            .field("activities", &self.activities)
            .finish()
    }
}

impl Worker {
    /// A worker running `activities` on the context at `url`, writing
    /// `_date` from `clock`.
    pub fn new(
        url: impl Into<String>,
        activities: Activities,
        clock: Box<dyn Clock>,
        options: WorkerOptions,
    ) -> Worker {
        Worker {
            at: Source::Url(url.into()),
            options,
            activities,
            clock,
        }
    }

    /// A worker running `activities` on the context `context` of `pool`'s
    /// database, through the pool's connections: the workers of one
    /// process then hold at most the pool's size of server connections
    /// between them, and one more to listen (D114: a pool per process).
    ///
    /// ```no_run
    /// use agent_output::SystemClock;
    /// use agent_plan::Activities;
    /// use agent_store::PgPool;
    /// use agent_worker::{Worker, WorkerOptions};
    ///
    /// let pool = PgPool::open("postgres://root@127.0.0.1:5432/test", 4)?;
    /// let threads: Vec<_> = (0..32)
    ///     .map(|i| {
    ///         let pool = pool.clone();
    ///         std::thread::spawn(move || {
    ///             let mut activities = Activities::new();
    ///             activities.register("echo", |input: &agent_core::json::Value| Ok(input.clone()));
    ///             let options = WorkerOptions::new(format!("w{i}")).with_until_idle(true);
    ///             Worker::in_pool(pool, "batch", activities, Box::new(SystemClock), options).run()
    ///         })
    ///     })
    ///     .collect();
    /// for thread in threads {
    ///     let report = thread.join().expect("worker thread")?;
    ///     println!("{} results written", report.written);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_pool(
        pool: PgPool,
        context: impl Into<String>,
        activities: Activities,
        clock: Box<dyn Clock>,
        options: WorkerOptions,
    ) -> Worker {
        Worker {
            at: Source::Pool(pool, context.into()),
            options,
            activities,
            clock,
        }
    }

    /// Runs until killed, or with `until_idle` until nothing is ready or
    /// running; returns what it did.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the store fails for longer than the
    /// worker's patience or in a way waiting cannot mend,
    /// [`Error::NoPlan`] / [`Error::BadPlan`] for a context
    /// without a usable plan, and [`Error::Thread`] when a thread cannot
    /// be started.
    pub fn run(&self) -> Result<WorkerReport, Error> {
        self.run_observed(&mut |_| {})
    }

    /// [`Worker::run`], telling `observe` where the worker stands after
    /// each round in which that changed (a live line, a metric).
    ///
    /// # Errors
    ///
    /// As [`Worker::run`].
    pub fn run_observed(&self, observe: &mut dyn FnMut(&Progress)) -> Result<WorkerReport, Error> {
        let mut state = Running::open(self)?;
        let result = state.work(observe);
        let _ = state.calls.unregister(&self.options.name);
        state.report.round_trips = state.stored.store().round_trips() + state.calls.round_trips();
        result.map(|()| state.report)
    }
}

/// A worker at work.
struct Running<'w> {
    worker: &'w Worker,
    stored: Stored<PgStore>,
    calls: PgCalls,
    current: Option<Current>,
    /// Claims whose activity runs here, by call, each with the handle that
    /// stops its activity once the claim is lost.
    mine: BTreeMap<usize, (Claim, Stop)>,
    /// Results whose commit failed in a way worth trying again.
    unsent: Vec<(Claim, Vec<Message>)>,
    sender: Sender<Event>,
    events: Receiver<Event>,
    renewed: Instant,
    /// The context's length when the plan was last looked for.
    seen: usize,
    /// The tools some live worker has, sorted, and when that was read.
    live: Vec<String>,
    live_at: Option<Instant>,
    report: WorkerReport,
    /// The plan's counts at the last round, the calls it claimed counted
    /// as running.
    counts: Option<Counts>,
    /// What the observer was last told.
    told: Option<Progress>,
    /// Stops the listening thread when the worker stops.
    _listening: Listening,
}

impl<'w> Running<'w> {
    fn open(worker: &'w Worker) -> Result<Running<'w>, Error> {
        let stored = Stored::open_tail(worker.at.store()?)?;
        let mut calls = worker.at.calls()?;
        calls.register(
            &worker.options.name,
            &worker.activities.tools(),
            worker.options.lease,
        )?;
        let (sender, events) = mpsc::channel();
        let listening = listen(worker.at.listener()?, &worker.options.name, sender.clone())?;
        Ok(Running {
            _listening: listening,
            worker,
            stored,
            calls,
            current: None,
            mine: BTreeMap::new(),
            unsent: Vec::new(),
            sender,
            events,
            renewed: Instant::now(),
            seen: 0,
            live: Vec::new(),
            live_at: None,
            report: WorkerReport::default(),
            counts: None,
            told: None,
        })
    }

    fn options(&self) -> &'w WorkerOptions {
        &self.worker.options
    }

    /// Rounds until idle (or forever); database errors are waited out for
    /// the worker's patience.
    fn work(&mut self, observe: &mut dyn FnMut(&Progress)) -> Result<(), Error> {
        let mut failing_since: Option<Instant> = None;
        loop {
            let round = self.round();
            self.tell(observe);
            match round {
                Ok(Some(wait)) => {
                    failing_since = None;
                    self.wait(wait);
                }
                Ok(None) => return Ok(()),
                Err(Error::Store(e)) if transient(&e) => {
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > self.options().patience {
                        return Err(e.into());
                    }
                    eprintln!("warning: worker {}: {e}; trying again", self.options().name);
                    self.wait(Duration::from_millis(500));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Tells `observe` where the worker stands, if that changed.
    fn tell(&mut self, observe: &mut dyn FnMut(&Progress)) {
        let Some(plan) = self.counts.clone() else {
            return;
        };
        let now = Progress {
            plan,
            here: self.mine.len(),
            did: self.report.clone(),
        };
        if self.told.as_ref() != Some(&now) {
            observe(&now);
            self.told = Some(now);
        }
    }

    /// One round: renew, commit what came back, look, claim, start. How
    /// long to sleep at most, or `None` when idle and told to stop then.
    fn round(&mut self) -> Result<Option<Duration>, Error> {
        self.heartbeat()?;
        self.send_unsent()?;
        // The calls are read before the context, so the context holds the
        // result of every call they say is done (one transaction writes
        // both). Read after, a result committed in between made the calls
        // depending on it look blocked for good ("missing …"): the worker
        // could stop with work left, and a later writer of their place
        // could go first.
        let early = match &mut self.current {
            Some(current) => {
                current.rows.refresh(&mut self.calls, current.row)?;
                Some(current.row)
            }
            None => None,
        };
        self.stored.refresh()?;
        if self.plan_may_have_changed() {
            self.refresh_plan()?;
        }
        self.refresh_live_tools()?;
        let until_idle = self.options().until_idle;
        let free = self
            .options()
            .concurrency
            .max(1)
            .saturating_sub(self.mine.len());
        let Some(current) = &mut self.current else {
            if self.options().until_idle {
                return Err(Error::NoPlan {
                    name: self.calls.name().to_owned(),
                });
            }
            // A pool may be started before its plan is appended: wait for it.
            return Ok(Some(self.options().lease.min(Duration::from_secs(5))));
        };
        let row = current.row;
        if early != Some(row) {
            // A new plan: its calls, then the context again.
            current.rows.refresh(&mut self.calls, row)?;
            self.stored.refresh()?;
        }
        let rows = current.rows.rows();
        let wake = next_wake(rows, self.worker.options.lease);
        let standing = Judged::now(
            &mut current.judged,
            &current.plan,
            &current.writes_after,
            rows,
            self.stored.context(),
            &self.live,
        );
        let busy = standing
            .iter()
            .any(|s| matches!(s, Standing::Ready | Standing::Running));
        let counts = Counts::of(row, standing);
        if !busy && self.mine.is_empty() && self.unsent.is_empty() && until_idle {
            self.counts = Some(counts);
            return Ok(None);
        }
        let mut candidates: Vec<usize> = Vec::new();
        if free > 0 {
            candidates = standing
                .iter()
                .enumerate()
                .filter(|(call, s)| {
                    **s == Standing::Ready
                        && !self.mine.contains_key(call)
                        && rows.get(*call).is_some_and(CallRow::claimable)
                        && self
                            .worker
                            .activities
                            .get(current.plan.calls()[*call].tool().unwrap_or_default())
                            .is_some()
                })
                .map(|(call, _)| call)
                .collect();
        }
        let (candidates, more) = window(candidates, free, &self.worker.options.name);
        let claims = self.calls.claim(&ClaimRequest {
            plan: row,
            candidates: &candidates,
            worker: &self.options().name,
            lease: self.options().lease,
            max: free,
        })?;
        let mut counts = counts;
        let claimed = claims.len().min(counts.ready);
        counts.ready -= claimed;
        counts.running += claimed;
        self.counts = Some(counts);
        // Others took the window's calls first, and more are ready: look
        // again soon rather than at the next wake.
        let wake = if claims.is_empty() && more {
            wake.min(Duration::from_millis(10))
        } else {
            wake
        };
        for claim in claims {
            self.start(claim)?;
        }
        Ok(Some(wake))
    }

    /// Renews this worker's row and its claims every third of the lease.
    fn heartbeat(&mut self) -> Result<(), Error> {
        let lease = self.options().lease;
        if self.renewed.elapsed() < lease / 3 {
            return Ok(());
        }
        let name = self.options().name.clone();
        self.calls
            .register(&name, &self.worker.activities.tools(), lease)?;
        for (claim, stop) in self.mine.values() {
            // A claim lost to another worker (its lease ran out while this
            // worker could not renew it) is not renewed: its activity is
            // stopped and its result dropped when it ends; were it written,
            // its commit would be fenced off anyway (D95: lost claims stopped).
            if !stop.is_stopped() && !self.calls.renew(claim, lease)? {
                stop.stop();
                self.report.stopped += 1;
            }
        }
        self.renewed = Instant::now();
        Ok(())
    }

    /// True on the first look, and when a message appended since the last
    /// may be a plan (its line holds `"type":"plan"`): only then is the
    /// newest plan looked up again.
    fn plan_may_have_changed(&mut self) -> bool {
        let context = self.stored.context();
        let len = context.len();
        let seen = std::mem::replace(&mut self.seen, len);
        self.current.is_none()
            || (seen..len).any(|i| {
                context
                    .message_json(i)
                    .is_some_and(|line| line.contains(r#""type":"plan""#))
            })
    }

    /// The tools live workers have, looked up again every third of the
    /// lease (workers come and go rarely; a round should cost little).
    fn refresh_live_tools(&mut self) -> Result<(), Error> {
        let lease = self.options().lease;
        if self.live_at.is_none_or(|at| at.elapsed() >= lease / 3) {
            let mut live = self.calls.live_tools()?;
            // This worker is alive whatever its row says: a row that ran out
            // while the database was away must not make its own tools look
            // absent (every call of theirs blocked, and a worker told to
            // stop when idle stopping with work left).
            live.extend(self.worker.activities.tools());
            live.sort_unstable();
            live.dedup();
            self.live = live;
            self.live_at = Some(Instant::now());
        }
        Ok(())
    }

    /// Reads the newest plan message; a new one replaces the current plan.
    fn refresh_plan(&mut self) -> Result<(), Error> {
        let Some((row, line)) = self.calls.newest_plan()? else {
            self.current = None;
            return Ok(());
        };
        if self.current.as_ref().is_some_and(|c| c.row == row) {
            return Ok(());
        }
        let plan = parse_plan(row, &line)?;
        self.calls.set_up(row, plan.calls().len())?;
        let writes_after = plan.writes_after();
        self.current = Some(Current {
            row,
            plan,
            writes_after,
            rows: KeptRows::new(),
            judged: None,
        });
        Ok(())
    }

    /// Starts the activity of a claimed call, or settles it at once.
    fn start(&mut self, claim: Claim) -> Result<(), Error> {
        let Some(current) = &self.current else {
            return Ok(());
        };
        let call = current.plan.calls()[claim.call].clone();
        let attempts = self
            .options()
            .retries
            .saturating_add(1)
            .saturating_add(TAKEOVERS);
        if claim.attempt > attempts {
            // Claimed again after lease after lease ran out: whatever it
            // does stops its worker. Never forever.
            let error = format!(
                "gave up after {} attempts: its worker stopped before it finished, {} times \
                 or more",
                claim.attempt - 1,
                TAKEOVERS + 1
            );
            self.give_up(&claim, &error)?;
            return Ok(());
        }
        let resolved = match call.resolve(self.stored.context()) {
            Ok(agent_vars::Resolution::Ready(resolved)) => resolved,
            Ok(agent_vars::Resolution::Pending(_)) => {
                // Its references vanished since the look: try again later.
                self.calls
                    .release(&claim, "references missing", Some(Duration::ZERO))?;
                return Ok(());
            }
            Err(e) => {
                self.give_up(&claim, &e.to_string())?;
                return Ok(());
            }
        };
        let tool = call.tool().unwrap_or_default().to_owned();
        let activities = self.worker.activities.clone();
        let sender = self.sender.clone();
        let call_index = claim.call;
        let stop = Stop::new();
        self.mine.insert(claim.call, (claim.clone(), stop.clone()));
        self.report.ran += 1;
        let ran = Ran::started_at(self.worker.clock.now()).by(&self.options().name, claim.attempt);
        std::thread::Builder::new()
            .name(format!("agentctx-activity-{}", claim.call))
            .spawn(move || {
                let outcome = activities.run_caught_until(&tool, &resolved, &stop);
                let _ = sender.send(Event::Finished(claim, ran, outcome));
            })
            .map_err(|source| {
                // Never started: its lease runs out and another takes it.
                self.mine.remove(&call_index);
                Error::Thread {
                    worker: self.options().name.clone(),
                    thread: format!("the activity of call {call_index}"),
                    source,
                }
            })?;
        Ok(())
    }

    /// Sleeps until an event or `at_most`, then handles every event there is.
    fn wait(&mut self, at_most: Duration) {
        let at_most = at_most.min(self.options().lease / 3);
        let first = self.events.recv_timeout(at_most).ok();
        let mut events: Vec<Event> = first.into_iter().collect();
        events.extend(self.events.try_iter());
        for event in events {
            if let Event::Finished(claim, ran, outcome) = event {
                let stopped = self
                    .mine
                    .remove(&claim.call)
                    .is_some_and(|(_, stop)| stop.is_stopped());
                if stopped {
                    // Its claim was lost: counted when it was stopped.
                    continue;
                }
                if let Err(e) = self.finish(claim, &ran, outcome) {
                    eprintln!("warning: worker {}: {e}", self.options().name);
                }
            }
        }
    }

    /// Writes a finished activity's outcome, gives the call back to be
    /// tried again, or gives up on it.
    fn finish(
        &mut self,
        claim: Claim,
        ran: &Ran,
        outcome: Result<Outcome, String>,
    ) -> Result<(), Error> {
        let Some(current) = &self.current else {
            return Ok(());
        };
        if current.row != claim.plan {
            return Ok(());
        }
        let call: Call = current.plan.calls()[claim.call].clone();
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(error) => return self.give_up(&claim, &error),
        };
        // A failure the call's `_outputPath` has an outcome for is its
        // result, written at once, as `run` writes it (D105: one rule for
        // failures); only a failure with nowhere to go is tried again.
        let handled = call
            .output_path()
            .is_some_and(|path| path.outcomes().len() > 1);
        if let Outcome::Failure(value) = &outcome
            && !handled
            && claim.attempt <= self.options().retries
        {
            let error = format!("attempt {} failed: {value}", claim.attempt);
            if self
                .calls
                .release(&claim, &error, Some(retry_delay(claim.attempt)))?
            {
                self.report.retried += 1;
            } else {
                self.report.fenced += 1;
            }
            return Ok(());
        }
        // With when and by whom it ran; a `ran` record for a call that
        // writes nothing (R21b).
        match agent_output::messages_for_run(&call, outcome, self.worker.clock.as_ref(), ran) {
            Ok(messages) => self.commit(claim, messages),
            Err(e) => self.give_up(&claim, &e.to_string()),
        }
    }

    fn commit(&mut self, claim: Claim, messages: Vec<Message>) -> Result<(), Error> {
        match self.stored.commit_call(&messages, &claim) {
            Ok(_) => {
                self.report.written += 1;
                Ok(())
            }
            Err(StoreError::AlreadyWritten { .. }) => {
                self.report.already_written += 1;
                Ok(())
            }
            // The call is no longer this claim's (D43: fencing): another worker holds
            // it, or it finished or failed meanwhile. Its row and the log are
            // as that left them; sending again would be refused again.
            Err(StoreError::Fenced(_)) => {
                self.report.fenced += 1;
                Ok(())
            }
            Err(StoreError::Refused(e)) => self.give_up(&claim, &e.to_string()),
            Err(e) if transient(&e) || matches!(e, StoreError::InDoubt { .. }) => {
                // Safe to send again: the call takes one result.
                self.unsent.push((claim, messages));
                Err(e.into())
            }
            Err(e) => Err(e.into()),
        }
    }

    fn send_unsent(&mut self) -> Result<(), Error> {
        // A failure puts its result back and stops: the rest wait with it.
        while let Some((claim, messages)) = self.unsent.pop() {
            self.commit(claim, messages)?;
        }
        Ok(())
    }

    /// Fails the call, unless the claim is no longer its current one: then
    /// the call is left as its current holder left it, and counted fenced.
    fn give_up(&mut self, claim: &Claim, error: &str) -> Result<(), Error> {
        if self.calls.release(claim, error, None)? {
            self.report.failed += 1;
        } else {
            self.report.fenced += 1;
        }
        Ok(())
    }
}
