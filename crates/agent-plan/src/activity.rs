//! Activities: the code that runs a tool, registered by tool name.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// What an activity returns on success.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A value for the call's first outcome (R20).
    Value(Value),
    /// A value for an outcome the activity chose.
    Chosen(usize, Value),
    /// A whole data message to append as given (R22).
    Message(Value),
}

/// Runs one tool. A failure is a value (`Err`), written to the call's
/// failure outcome when it has one (R20). Activities run concurrently, so
/// they must be `Send + Sync`; a panic inside one is caught and reported as
/// that call's failure.
pub trait Activity: Send + Sync {
    /// Runs the resolved call (references already replaced by values).
    fn run(&self, call: &Value) -> Result<Output, Value>;
}

/// Any `Fn(&Value) -> Result<Value, Value>` is an activity returning a value.
impl<F> Activity for F
where
    F: Fn(&Value) -> Result<Value, Value> + Send + Sync,
{
    fn run(&self, call: &Value) -> Result<Output, Value> {
        self(call).map(Output::Value)
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

    /// The activity for `tool`, if registered.
    pub fn get(&self, tool: &str) -> Option<&dyn Activity> {
        self.by_tool.get(tool).map(|a| a.as_ref())
    }
}
