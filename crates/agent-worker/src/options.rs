//! How a worker runs: its name, concurrency, lease, retries and patience.

use std::time::Duration;

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The worker's name in the calls table (unique among live workers).
    pub name: String,
    /// Activities it runs at once.
    pub concurrency: usize,
    /// How long a claim holds without renewal: a worker that dies leaves
    /// its calls to others after this. Renewed every third of it.
    pub lease: Duration,
    /// Attempts after the first when an activity fails (with backoff). A
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
}
