//! Activities written as closures that use `?` on any error.

use agent_core::{json, json::Value};
use agent_output::Outcome;
use agent_plan::Activity;
use std::fmt;

/// Any error, boxed: what an activity closure returns, so `?` works on
/// every error type (and on `&str` and `String`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An error that carries the failure value to record (spec R20 outcome 1)
/// instead of `{"error": TEXT}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure(pub Value);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the activity failed with {}", self.0)
    }
}

impl std::error::Error for Failure {}

/// An [`Activity`] from a closure that returns `Result<Value, BoxError>`:
/// `Ok(v)` is a success with `v`; an error is a failure whose value is the
/// [`Failure`]'s when it is one, else `{"error": "<its Display>"}`.
///
/// ```
/// use agentctx::prelude::*;
/// use agentctx::{json, json::Value};
///
/// let double = activity(|call: &Value| {
///     let n: i64 = call["n"].as_str().ok_or("n must be a string")?.parse()?;
///     Ok(json!(n * 2))
/// });
/// assert_eq!(double.run(&json!({"n": "21"})), Outcome::Success(json!(42)));
/// assert_eq!(
///     double.run(&json!({"n": "x"})),
///     Outcome::Failure(json!({"error": "invalid digit found in string"}))
/// );
/// ```
pub fn activity<F>(run: F) -> FnActivity<F>
where
    F: Fn(&Value) -> Result<Value, BoxError> + Send + Sync,
{
    FnActivity(run)
}

/// The activity [`activity`] makes; register it with
/// [`Activities::register`](agent_plan::Activities::register).
pub struct FnActivity<F>(F);

impl<F> fmt::Debug for FnActivity<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnActivity")
    }
}

impl<F> Activity for FnActivity<F>
where
    F: Fn(&Value) -> Result<Value, BoxError> + Send + Sync,
{
    fn run(&self, call: &Value) -> Outcome {
        match (self.0)(call) {
            Ok(value) => Outcome::Success(value),
            Err(error) => match error.downcast::<Failure>() {
                Ok(failure) => Outcome::Failure(failure.0),
                Err(error) => Outcome::Failure(json!({"error": error.to_string()})),
            },
        }
    }
}
