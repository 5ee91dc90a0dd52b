//! How a worker runs: its name, concurrency, lease, retries and patience.

use std::time::Duration;

/// How a worker runs.
///
/// `#[non_exhaustive]`: build it with [`WorkerOptions::new`] and the
/// `with_*` setters (or set its fields), so a new setting is not a
/// breaking change.
///
/// ```
/// use agent_worker::WorkerOptions;
/// use std::time::Duration;
/// let options = WorkerOptions::new("w1").with_concurrency(4).with_until_idle(true);
/// assert_eq!((options.concurrency, options.lease), (4, Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WorkerOptions {
    /// The worker's name in the calls table (unique among live workers).
    pub name: String,
    /// Activities it runs at once (0 counts as 1).
    pub concurrency: usize,
    /// How long a claim holds without renewal: a worker that dies leaves
    /// its calls to others after this. Renewed every third of it.
    pub lease: Duration,
    /// Attempts after the first when an activity fails (with backoff) and
    /// its call's `_outputPath` has no outcome for a failure; a failure
    /// it has one for is written at once, as `run` writes it. A
    /// call taken over from a worker that stopped mid-activity counts that
    /// attempt too, and may be claimed up to two more times than this
    /// allows, so a worker dying does not fail its calls.
    pub retries: u32,
    /// Stop when nothing is ready or running (else run until killed).
    pub until_idle: bool,
    /// How long the database may stay unreachable before the worker gives
    /// up.
    pub patience: Duration,
}

impl WorkerOptions {
    /// One activity at a time, a 30 s lease, 2 retries, running until
    /// killed, waiting up to 5 minutes for the database.
    pub fn new(name: impl Into<String>) -> WorkerOptions {
        WorkerOptions {
            name: name.into(),
            concurrency: 1,
            lease: Duration::from_secs(30),
            retries: 2,
            until_idle: false,
            patience: Duration::from_secs(300),
        }
    }

    /// With `concurrency` activities at once (0 counts as 1).
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// With claims held for `lease` without renewal.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// With `retries` attempts after the first.
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Stopping when nothing is ready or running, or not.
    pub fn with_until_idle(mut self, until_idle: bool) -> Self {
        self.until_idle = until_idle;
        self
    }

    /// Waiting up to `patience` for an unreachable database.
    pub fn with_patience(mut self, patience: Duration) -> Self {
        self.patience = patience;
        self
    }
}
