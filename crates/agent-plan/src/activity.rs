//! Activities: the code that runs a tool, registered by tool name.

use agent_core::json::Value;
use agent_core::quoted;
use agent_output::Outcome;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// Runs one tool and says how it went, as the [`Outcome`] agent-output
/// writes: a success value, a failure value (written to the call's failure
/// outcome when it has one, R20), an outcome the activity chose, or a whole
/// message (R22). Activities run concurrently, so they must be
/// `Send + Sync`; a panic inside one is caught and reported as that call's
/// failure.
pub trait Activity: Send + Sync {
    /// Runs the resolved call (references already replaced by values).
    fn run(&self, call: &Value) -> Outcome;

    /// [`Activity::run`], asked to end early once `stop` is set: its result
    /// will not be used (a worker's claim on the call was taken over). An
    /// activity that can stop — one running a process it may kill —
    /// checks `stop` as it runs; the default runs to the end, and its
    /// result is dropped.
    fn run_until(&self, call: &Value, stop: &Stop) -> Outcome {
        let _ = stop;
        self.run(call)
    }
}

/// Tells a running activity its result is no longer wanted. Cloned handles
/// share one flag: the runner keeps one, the activity checks another.
///
/// ```
/// use agent_plan::Stop;
/// let stop = Stop::new();
/// let seen_by_activity = stop.clone();
/// assert!(!seen_by_activity.is_stopped());
/// stop.stop();
/// assert!(seen_by_activity.is_stopped());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<std::sync::atomic::AtomicBool>);

impl Stop {
    /// Not stopped.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks the activity to stop.
    pub fn stop(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether it was asked to stop.
    pub fn is_stopped(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Any `Fn(&Value) -> Result<Value, Value>` is an activity: `Ok` is a
/// success, `Err` a failure.
impl<F> Activity for F
where
    F: Fn(&Value) -> Result<Value, Value> + Send + Sync,
{
    fn run(&self, call: &Value) -> Outcome {
        match self(call) {
            Ok(value) => Outcome::Success(value),
            Err(value) => Outcome::Failure(value),
        }
    }
}

/// Activities by tool name (`_tool`).
#[derive(Clone, Default)]
pub struct Activities {
    by_tool: HashMap<String, Arc<dyn Activity>>,
}

impl std::fmt::Debug for Activities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut tools: Vec<&String> = self.by_tool.keys().collect();
        tools.sort();
        f.debug_struct("Activities").field("tools", &tools).finish()
    }
}

impl Activities {
    /// No activities.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `activity` for `tool`, replacing any earlier one.
    pub fn register(
        &mut self,
        tool: impl Into<String>,
        activity: impl Activity + 'static,
    ) -> &mut Self {
        self.by_tool.insert(tool.into(), Arc::new(activity));
        self
    }

    /// The tools that have an activity, sorted.
    pub fn tools(&self) -> Vec<String> {
        let mut tools: Vec<String> = self.by_tool.keys().cloned().collect();
        tools.sort();
        tools
    }

    /// The activity for `tool`, if registered.
    pub fn get(&self, tool: &str) -> Option<&dyn Activity> {
        self.by_tool.get(tool).map(|a| a.as_ref())
    }

    /// Runs `tool`'s activity on a resolved call: its outcome, or why it
    /// has none — no activity registered, or the activity panicked (caught
    /// here, so one bad activity cannot take the executor down). What
    /// `Plan::run` and a worker both run.
    ///
    /// # Errors
    ///
    /// Why the call has no outcome, as text: no activity is registered for
    /// `tool`, or the activity panicked.
    pub fn run_caught(&self, tool: &str, call: &Value) -> Result<Outcome, String> {
        self.run_caught_until(tool, call, &Stop::new())
    }

    /// [`Activities::run_caught`], the activity asked to end early once
    /// `stop` is set ([`Activity::run_until`]).
    ///
    /// # Errors
    ///
    /// As [`Activities::run_caught`].
    pub fn run_caught_until(
        &self,
        tool: &str,
        call: &Value,
        stop: &Stop,
    ) -> Result<Outcome, String> {
        let activity = self
            .get(tool)
            .ok_or_else(|| format!("no activity registered for tool {}", quoted(tool)))?;
        catch_unwind(AssertUnwindSafe(|| activity.run_until(call, stop))).map_err(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            format!("activity for {} panicked: {message}", quoted(tool))
        })
    }
}
