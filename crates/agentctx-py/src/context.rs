//! `agentctx.Context`: a context in memory or in a file, read by reference
//! and written through the store's validated, durable commit.

use crate::errors::{self, Error as PyAgentError, NotFoundError};
use crate::values::{to_json, to_python};
use agent_core::{Instance, Kind};
use agentctx::StoredContext;
use agentctx::data::{AppendKey, Message};
use agentctx::output::Outcome;
use agentctx::render::{PayloadFormat, RenderMode};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, MutexGuard};

/// A context: an ordered, append-only log of messages and the views they
/// fold into. `Context()` is a new one in memory; `agentctx.open(path)`
/// one in a file. Safe to share between threads: calls take turns.
#[pyclass(module = "agentctx")]
pub(crate) struct Context {
    inner: Mutex<StoredContext>,
}

/// Runs `work` with the GIL released, a panic turned into `agentctx.Error`
/// (none reaches Python as a crash).
pub(crate) fn released<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, agentctx::Error> + Send,
) -> PyResult<T> {
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(errors::to_python(&error)),
        Err(_) => Err(PyAgentError::new_err(
            "agentctx failed inside (a bug): nothing was written",
        )),
    }
}

impl Context {
    /// A Python handle on `stored`.
    pub(crate) fn from_stored(stored: StoredContext) -> Context {
        Context {
            inner: Mutex::new(stored),
        }
    }

    /// The context, for a short read with the GIL held.
    fn lock(&self) -> PyResult<MutexGuard<'_, StoredContext>> {
        self.inner.lock().map_err(|_| poisoned())
    }

    /// Runs `work` on the context with the GIL released; the lock is taken
    /// and let go without the GIL, so a thread waiting for it never holds
    /// the GIL another needs to finish.
    fn with_released<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut StoredContext) -> Result<T, agentctx::Error> + Send,
    ) -> PyResult<T> {
        let inner = &self.inner;
        let outcome = py.detach(|| {
            let mut guard = inner.lock().map_err(|_| poisoned())?;
            let context: &mut StoredContext = &mut guard;
            Ok::<_, PyErr>(catch_unwind(AssertUnwindSafe(|| work(context))))
        });
        match outcome? {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(errors::to_python(&error)),
            Err(_) => Err(PyAgentError::new_err(
                "agentctx failed inside (a bug): nothing was written",
            )),
        }
    }
}

impl Context {
    /// [`StoredContext::run`] (or `run_keyed`) with the GIL released,
    /// on `parallel` threads when given; activities take the GIL back for
    /// each Python call.
    pub(crate) fn run_released(
        &self,
        py: Python<'_>,
        plan: Vec<agent_core::json::Value>,
        activities: &agentctx::plan::Activities,
        parallel: Option<usize>,
        key: Option<&str>,
    ) -> PyResult<agentctx::plan::Report> {
        let key = append_key(key)?;
        let pool = match parallel {
            None => None,
            Some(0) => return Err(PyValueError::new_err("parallel must be at least 1")),
            Some(threads) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("agentctx-activity-{i}"))
                    .build()
                    .map_err(|e| PyAgentError::new_err(format!("parallel: {e}")))?,
            ),
        };
        self.with_released(py, move |inner| {
            let run = || match &key {
                None => inner.run(plan, activities),
                Some(key) => inner.run_keyed(plan, activities, key),
            };
            match &pool {
                None => run(),
                Some(pool) => pool.install(run),
            }
        })
    }
}

/// The key as agentctx checks it (1–128 bytes, printable).
fn append_key(key: Option<&str>) -> PyResult<Option<AppendKey>> {
    key.map(AppendKey::new)
        .transpose()
        .map_err(|e| PyValueError::new_err(format!("key: {e}")))
}

/// The messages in `range`, as values.
fn messages_in(
    inner: &mut StoredContext,
    range: std::ops::Range<usize>,
) -> Result<Vec<agent_core::json::Value>, agentctx::Error> {
    let mut values = Vec::with_capacity(range.len());
    for index in range {
        if let Some(message) = inner.message(index)? {
            values.push(message.to_value());
        }
    }
    Ok(values)
}

fn values_list<'py>(
    py: Python<'py>,
    values: &[agent_core::json::Value],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for value in values {
        list.append(to_python(py, value)?)?;
    }
    Ok(list)
}

fn poisoned() -> PyErr {
    PyAgentError::new_err("the context is unusable: an earlier call failed inside it")
}

/// Opens the context at `path`: a file (JSONL, or a JSON array) or a
/// PostgreSQL URL (`postgres://…?context=NAME`, credentials as libpq finds
/// them); with `create`, a new empty one when it does not exist yet.
///
/// Raises `NotFoundError` when it does not exist (without `create`),
/// `StoreError` when it cannot be read, `TamperedError` when it does not
/// chain.
#[pyfunction]
#[pyo3(signature = (path, *, create = false))]
pub(crate) fn open(py: Python<'_>, path: &Bound<'_, PyAny>, create: bool) -> PyResult<Context> {
    // Text may be a URL; any other path-like is a file's path.
    let address: agentctx::Address = match path.extract::<String>() {
        Ok(text) => text.into(),
        Err(_) => path.extract::<std::path::PathBuf>()?.into(),
    };
    let stored = released(py, move || {
        if create {
            StoredContext::open(address)
        } else {
            StoredContext::open_existing(address)
        }
    })?;
    Ok(Context {
        inner: Mutex::new(stored),
    })
}

#[pymethods]
impl Context {
    /// A new, empty context in this process's memory.
    #[new]
    fn new() -> Context {
        Context {
            inner: Mutex::new(StoredContext::in_memory()),
        }
    }

    /// How many messages the log holds.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.lock()?.context().len())
    }

    fn __repr__(&self) -> PyResult<String> {
        let inner = self.lock()?;
        Ok(format!(
            "<agentctx.Context {:?}, {} message(s)>",
            inner.name(),
            inner.context().len()
        ))
    }

    /// The chain's head: the SHA-256 digest after the last message, as hex.
    #[getter]
    fn head(&self) -> PyResult<String> {
        Ok(self.lock()?.context().head().to_string())
    }

    /// The value an expression names: `"†state.user.name"`, with `||`
    /// and `&&` (`"†state.nick || †state.name"`), in `instance` when given.
    /// Raises `NotFoundError` when nothing it names is present.
    #[pyo3(signature = (expression, instance = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        expression: &str,
        instance: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.lock()?;
        let value = match instance {
            Some(instance) => inner.get_in(expression, instance),
            None => inner.get(expression),
        }
        .map_err(|e| errors::to_python(&e))?;
        to_python(py, &value)
    }

    /// `call` with every reference in its parameters replaced by its value
    /// (spec R18), the `_` keys as written. Raises `NotFoundError` naming
    /// every reference still missing.
    fn resolve<'py>(
        &self,
        py: Python<'py>,
        call: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        use agentctx::ContextExt;
        let call = to_json(call)?;
        let inner = self.lock()?;
        let resolved = inner
            .context()
            .resolve_call(&call)
            .map_err(|e| errors::to_python(&e))?;
        to_python(py, &resolved)
    }

    /// The folded view of `kind` (in `instance`, over the global one).
    /// Raises `NotFoundError` when no message of the kind is there.
    #[pyo3(signature = (kind, instance = None))]
    fn view<'py>(
        &self,
        py: Python<'py>,
        kind: &str,
        instance: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let kind_id = Kind::new(kind).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let instance_id = instance
            .map(Instance::new)
            .transpose()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let inner = self.lock()?;
        match inner.context().view(&kind_id, instance_id.as_ref()) {
            Some(view) => to_python(py, view),
            None => Err(NotFoundError::new_err(format!(
                "¶{kind}: no message of this kind"
            ))),
        }
    }

    /// Reads what other handles and processes appended since this one
    /// last read or wrote (a write catches up by itself; a read does not).
    fn refresh(&self, py: Python<'_>) -> PyResult<()> {
        self.with_released(py, |inner| inner.refresh())
    }

    /// The instances, in the order they first appear.
    fn instances(&self) -> PyResult<Vec<String>> {
        Ok(self
            .lock()?
            .context()
            .instances()
            .map(ToString::to_string)
            .collect())
    }

    /// Appends a message (a dict) or messages (a list), all or none,
    /// checked against the views and schemas; returns how many were
    /// appended. With `key`, at most once: sent again with the same key it
    /// appends nothing and returns how many the first append wrote.
    /// Raises `RefusedError` when a rule refuses one.
    #[pyo3(signature = (messages, *, key = None))]
    fn append(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        key: Option<&str>,
    ) -> PyResult<usize> {
        let value = to_json(messages)?;
        match append_key(key)? {
            None => self.with_released(py, move |inner| inner.append(value)),
            Some(key) => self.with_released(py, move |inner| {
                inner.append_once(value, &key).map(|o| o.range().len())
            }),
        }
    }

    /// Writes `result` as the success of `call` where its `_outputPath`
    /// says (R20); returns the messages appended, as dicts. With `key`, at
    /// most once: sent again with the same key it appends nothing and
    /// returns the messages the first one wrote.
    #[pyo3(signature = (call, result, *, key = None))]
    fn apply<'py>(
        &self,
        py: Python<'py>,
        call: &Bound<'py, PyAny>,
        result: &Bound<'py, PyAny>,
        key: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (call, result) = (to_json(call)?, to_json(result)?);
        let written = match append_key(key)? {
            None => self.with_released(py, move |inner| {
                inner
                    .apply(call, Outcome::Success(result))
                    .map(|messages| messages.iter().map(Message::to_value).collect())
            })?,
            Some(key) => self.with_released(py, move |inner| {
                let range = inner
                    .apply_once(call, Outcome::Success(result), &key)?
                    .range();
                messages_in(inner, range)
            })?,
        };
        values_list(py, &written)
    }

    /// Writes several results in one commit, all or none: `results` is a
    /// list of `(call, result)` pairs. Returns the messages appended; with
    /// `key`, at most once, as `apply`. Raises `RefusedError` naming the
    /// pair to blame; nothing is written.
    #[pyo3(signature = (results, *, key = None))]
    fn apply_all<'py>(
        &self,
        py: Python<'py>,
        results: &Bound<'py, PyAny>,
        key: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut pairs = Vec::new();
        for (index, pair) in results.try_iter()?.enumerate() {
            let pair = pair?;
            let (call, result): (Bound<'py, PyAny>, Bound<'py, PyAny>) =
                pair.extract().map_err(|_| {
                    PyValueError::new_err(format!("results[{index}] is not a (call, result) pair"))
                })?;
            let call = agentctx::output::Call::parse(to_json(&call)?)
                .map_err(|e| errors::to_python(&agentctx::Error::from(e)))?;
            pairs.push((call, Outcome::Success(to_json(&result)?)));
        }
        let written = match append_key(key)? {
            None => self.with_released(py, move |inner| {
                inner
                    .apply_all(pairs)
                    .map(|messages| messages.iter().map(Message::to_value).collect())
            })?,
            Some(key) => self.with_released(py, move |inner| {
                let range = inner.apply_all_once(pairs, &key)?.range();
                messages_in(inner, range)
            })?,
        };
        values_list(py, &written)
    }

    /// The context as it was after its first `k` messages, as a new
    /// context in memory (time travel: reading it, or writing to it,
    /// leaves this one as it is).
    fn at(&self, py: Python<'_>, k: usize) -> PyResult<Context> {
        let copy = self.with_released(py, move |inner| {
            StoredContext::in_memory_from(&inner.at(k)?)
        })?;
        Ok(Context {
            inner: Mutex::new(copy),
        })
    }

    /// Checks the stored log as `agentctx verify` does (the chain
    /// recomputed, every digest kept beside the log compared; with
    /// `expect`, the head too) and returns the report
    /// (`{"name", "messages", "head", "findings": []}`). Raises
    /// `TamperedError` when something does not match; its `report`
    /// attribute holds the findings.
    #[pyo3(signature = (expect = None))]
    fn verify<'py>(&self, py: Python<'py>, expect: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let expected = expect
            .map(str::parse::<agentctx::data::Digest>)
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("expect: {e}")))?;
        let report = self.with_released(py, move |inner| {
            let mut verified = inner.verify()?;
            if let Some(expected) = expected {
                verified.expect(expected);
            }
            Ok(verified)
        })?;
        let value = agent_core::json::to_value(&report)
            .map_err(|e| PyAgentError::new_err(format!("the report: {e}")))?;
        let report_object = to_python(py, &value)?;
        match report.findings.first() {
            None => Ok(report_object),
            Some(first) => {
                let error = errors::TamperedError::new_err(format!(
                    "{} finding(s): {first}",
                    report.findings.len()
                ));
                error.value(py).setattr("report", report_object)?;
                Err(error)
            }
        }
    }

    /// The messages from `start` up to `stop` (the end when `None`), each
    /// in its normal form (spec R1), as dicts.
    #[pyo3(signature = (start = 0, stop = None))]
    fn messages<'py>(
        &self,
        py: Python<'py>,
        start: usize,
        stop: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let values = self.with_released(py, move |inner| {
            let end = stop.unwrap_or(usize::MAX).min(inner.context().len());
            let mut values = Vec::new();
            for index in start..end {
                if let Some(message) = inner.message(index)? {
                    values.push(message.to_value());
                }
            }
            Ok(values)
        })?;
        values_list(py, &values)
    }

    /// What the model sees: the payload for `provider` (`"openai"`,
    /// `"anthropic"`, `"plain"` or `"text"`) rendered in `mode`
    /// (`"merged"` or `"append"`).
    #[pyo3(signature = (provider = "openai", mode = "merged"))]
    fn render<'py>(
        &self,
        py: Python<'py>,
        provider: &str,
        mode: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let format: PayloadFormat = provider.parse().map_err(PyValueError::new_err)?;
        let mode = match mode {
            "merged" => RenderMode::Merged,
            "append" => RenderMode::Append,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown mode {other:?}: expected \"merged\" or \"append\""
                )));
            }
        };
        let payload = self.with_released(py, move |inner| inner.render(format, mode))?;
        to_python(py, &payload)
    }
}
