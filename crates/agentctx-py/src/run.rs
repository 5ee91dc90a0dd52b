//! `agentctx.run`: a plan run with Python callables as activities, under
//! exactly the readiness and outcome rules of `agentctx run`.

use crate::context::Context;
use crate::values::{to_json, to_python};
use agent_core::json::{Map, Value};
use agentctx::output::Outcome;
use agentctx::plan::{Activities, Activity};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A Python callable as an activity: called with the resolved call as a
/// dict; what it returns is the success value, what it raises the call's
/// failure (`{"error": "ValueError: …"}`). An `async def` is run to its end
/// on an event loop of its own.
struct PythonActivity {
    callable: Py<PyAny>,
}

impl Activity for PythonActivity {
    fn run(&self, call: &Value) -> Outcome {
        Python::attach(|py| match self.call(py, call) {
            Ok(value) => Outcome::Success(value),
            Err(error) => Outcome::Failure(failure(py, &error)),
        })
    }
}

impl PythonActivity {
    fn call(&self, py: Python<'_>, call: &Value) -> PyResult<Value> {
        let mut returned = self.callable.bind(py).call1((to_python(py, call)?,))?;
        let inspect = py.import("inspect")?;
        if inspect
            .call_method1("iscoroutine", (&returned,))?
            .is_truthy()?
        {
            returned = py.import("asyncio")?.call_method1("run", (returned,))?;
        }
        to_json(&returned)
    }
}

/// A raised exception as a failure value.
fn failure(py: Python<'_>, error: &PyErr) -> Value {
    let kind = error
        .get_type(py)
        .name()
        .map_or_else(|_| "Exception".to_owned(), |n| n.to_string());
    let mut map = Map::new();
    map.insert(
        "error".to_owned(),
        Value::String(format!("{kind}: {}", error.value(py))),
    );
    Value::Object(map)
}

/// Runs `plan` (a list of calls) on `ctx` with `activities`, a dict from
/// tool name to callable; each result is committed as it is written.
/// Returns the report: `{"calls": [{"index", "tool", "status", …}, …]}`.
///
/// The ready calls of a wave run at once, on `parallel` threads (the
/// number of CPUs when `None`): Python code runs one thread at a time,
/// but an activity waiting on I/O lets the others run. With `key`, each
/// call's result is written at most once under `KEY/call-N`: running the
/// plan again with the same key writes nothing twice.
///
/// Raises `agentctx.Error` for a plan that does not build (a bad call, a
/// cycle); a call that fails is in the report, not raised.
#[pyfunction]
#[pyo3(signature = (ctx, plan, activities, *, parallel = None, key = None))]
pub(crate) fn run<'py>(
    py: Python<'py>,
    ctx: &Context,
    plan: &Bound<'py, PyAny>,
    activities: &Bound<'py, PyDict>,
    parallel: Option<usize>,
    key: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let calls: Vec<Value> = plan
        .try_iter()?
        .map(|c| to_json(&c?))
        .collect::<PyResult<_>>()?;
    let mut registered = Activities::new();
    for (tool, callable) in activities.iter() {
        if !callable.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "the activity for {tool} is not callable"
            )));
        }
        let tool: String = tool.extract()?;
        registered.register(
            tool,
            PythonActivity {
                callable: callable.unbind(),
            },
        );
    }
    let report = ctx.run_released(py, calls, &registered, parallel, key)?;
    let value: Value = agent_core::json::to_value(&report)
        .map_err(|e| crate::errors::Error::new_err(format!("the report: {e}")))?;
    to_python(py, &value)
}
