//! A validated plan: its calls, what each depends on, and its waves.

use crate::graph::{self, Access};
use crate::{Activities, Error, Result};
use agent_core::json::Value;
use agent_output::Call;

/// A list of calls wired together through references and output paths,
/// checked and ordered: B runs after A when B reads what A may write.
///
/// ```
/// use agent_plan::Plan;
/// use agent_core::json;
///
/// let plan = Plan::new(vec![
///     json!({"_tool": "summarize", "text": "†state.profile", "_outputPath": "†state.summary"}),
///     json!({"_tool": "fetchUserProfile", "id": "†input.id", "_outputPath": "†state.profile"}),
/// ])?;
/// assert_eq!(plan.waves(), [vec![1], vec![0]]);
/// # Ok::<(), agent_plan::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Plan {
    calls: Vec<Call>,
    deps: Vec<Vec<usize>>,
    waves: Vec<Vec<usize>>,
}

impl Plan {
    /// Checks every call (object, `_instance`, parameter syntax,
    /// `_outputPath`, `_outputMethod`) and orders them; a cycle is an error
    /// naming its calls.
    ///
    /// # Errors
    ///
    /// [`Error::BadCall`] for a call that is not an object or has a bad
    /// `_instance`, parameter, `_outputPath` or `_outputMethod`;
    /// [`Error::Cycle`] when calls depend on each other in a cycle.
    pub fn new(calls: Vec<Value>) -> Result<Plan> {
        Plan::with_dependency_limit(calls, usize::MAX)
    }

    /// [`Plan::new`], refusing a plan with more than `limit` dependencies
    /// in all ([`Error::TooManyDependencies`]) before it builds them: for
    /// plans from untrusted authors, where 5,000 calls reading what 5,000
    /// others write would make 25 million.
    ///
    /// # Errors
    ///
    /// Those of [`Plan::new`], and [`Error::TooManyDependencies`] past `limit`.
    pub fn with_dependency_limit(calls: Vec<Value>, limit: usize) -> Result<Plan> {
        let calls: Vec<Call> = calls
            .into_iter()
            .enumerate()
            .map(|(index, call)| {
                Call::parse(call).map_err(|e| Error::BadCall {
                    index,
                    reason: e.to_string(),
                })
            })
            .collect::<Result<_>>()?;
        let accesses: Vec<Access> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| graph::access(i, c))
            .collect::<Result<_>>()?;
        let deps = graph::dependencies(&accesses, limit)?;
        let waves = graph::waves(&deps)?;
        Ok(Plan { calls, deps, waves })
    }

    /// The calls, parsed.
    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// The calls each call waits for.
    pub fn dependencies(&self) -> &[Vec<usize>] {
        &self.deps
    }

    /// The waves the calls would run in if every call succeeded (dry run).
    pub fn waves(&self) -> &[Vec<usize>] {
        &self.waves
    }

    /// The tools the plan calls that have no activity in `activities`, in
    /// order of first use, each once: running the plan would fail those
    /// calls.
    pub fn tools_without_activity(&self, activities: &Activities) -> Vec<String> {
        let mut missing: Vec<String> = Vec::new();
        for call in &self.calls {
            let tool = call.tool().unwrap_or_default();
            if activities.get(tool).is_none() && !missing.iter().any(|m| m == tool) {
                missing.push(tool.to_owned());
            }
        }
        missing
    }
}
