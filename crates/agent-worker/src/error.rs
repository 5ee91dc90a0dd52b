//! The one error type of this crate.

use agent_store::Error as StoreError;

/// Why a worker stopped before its work was done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The newest plan message is not a plan.
    #[error("the plan message at row {row}: {reason}")]
    BadPlan {
        /// Its row.
        row: u64,
        /// What is wrong.
        reason: String,
    },
    /// The context has no plan message.
    #[error("{name} has no plan message (append {{\"type\":\"plan\",\"calls\":[…]}} first)")]
    NoPlan {
        /// The context.
        name: String,
    },
    /// The worker could not start one of its threads (an activity's, or
    /// the listener's).
    #[error("worker {worker}: cannot start {thread}: {source}")]
    Thread {
        /// The worker's name.
        worker: String,
        /// Which thread (`the activity of call 3`, `its listener`).
        thread: String,
        /// Why.
        source: std::io::Error,
    },
    /// The store failed for longer than the worker's patience, or in a way
    /// waiting cannot mend.
    #[error(transparent)]
    Store(#[from] StoreError),
}
