//! The one error type of this crate.

/// A plan that cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A call is malformed: not an object, a bad `_instance`, a syntax
    /// error in a parameter, or a bad `_outputPath` / `_outputMethod`.
    #[error("call {index}: {reason}")]
    BadCall {
        /// The call's position in the plan.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// Calls that wait for each other (their positions, in cycle order).
    #[error("calls {} depend on each other in a cycle", .calls.iter().map(ToString::to_string).collect::<Vec<_>>().join(" → "))]
    Cycle {
        /// The calls in the cycle, each depending on the next; the last on the first.
        calls: Vec<usize>,
    },
    /// More dependencies between calls than the plan's author may ask for
    /// ([`crate::Plan::with_dependency_limit`]).
    #[error("the calls depend on each other more than {limit} times in all")]
    TooManyDependencies {
        /// The limit.
        limit: usize,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
