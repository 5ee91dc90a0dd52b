//! JSON values between Python and agentctx: objects are dicts in their
//! order, integers of any size are exact `int`s, other numbers `float`s;
//! `null` is `None`.

use agent_core::json::{Map, Number, Value};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// The deepest a value may nest, as everywhere in agentctx (spec R33).
const MAX_DEPTH: usize = agent_core::json::MAX_DEPTH;

/// A Python value as JSON: `None`, `bool`, `int`, `float`, `str`, `list`
/// or `tuple`, and `dict` with `str` keys.
pub(crate) fn to_json(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_json_within(value, 0)
}

fn to_json_within(value: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if let Ok(int) = value.cast::<PyInt>() {
        if let Ok(small) = int.extract::<i64>() {
            return Ok(Value::from(small));
        }
        let text = int.str()?.to_string();
        let number: Number = text.parse().map_err(|_| {
            PyValueError::new_err(format!("the integer {text} is not a JSON number"))
        })?;
        return Ok(Value::Number(number));
    }
    if let Ok(float) = value.cast::<PyFloat>() {
        let f = float.value();
        return Number::from_f64(f).map(Value::Number).ok_or_else(|| {
            PyValueError::new_err(format!(
                "{f} is not a JSON number (JSON has no NaN or infinity)"
            ))
        });
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Value::String(text.to_str()?.to_owned()));
    }
    if depth >= MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "the value nests deeper than {MAX_DEPTH} levels"
        )));
    }
    if let Ok(list) = value.cast::<PyList>() {
        let items = list
            .iter()
            .map(|item| to_json_within(&item, depth + 1))
            .collect::<PyResult<Vec<Value>>>()?;
        return Ok(Value::from(items));
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        let items = tuple
            .iter()
            .map(|item| to_json_within(&item, depth + 1))
            .collect::<PyResult<Vec<Value>>>()?;
        return Ok(Value::from(items));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let key = key.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "a JSON object's keys are str, not {}",
                    key.get_type()
                        .name()
                        .map_or_else(|_| "?".into(), |n| n.to_string())
                ))
            })?;
            map.insert(key.to_str()?.to_owned(), to_json_within(&item, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    Err(PyTypeError::new_err(format!(
        "{} is not JSON: use None, bool, int, float, str, list, tuple or dict",
        value
            .get_type()
            .name()
            .map_or_else(|_| "?".into(), |n| n.to_string())
    )))
}

/// A JSON value as Python: integers exact whatever their size.
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(number) => number_to_python(py, number)?,
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items.iter() {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map.iter() {
                dict.set_item(key, to_python(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

fn number_to_python<'py>(py: Python<'py>, number: &Number) -> PyResult<Bound<'py, PyAny>> {
    if let Some(small) = number.as_i64() {
        return Ok(small.into_pyobject(py)?.into_any());
    }
    if let Some(small) = number.as_u64() {
        return Ok(small.into_pyobject(py)?.into_any());
    }
    let text = number.to_string();
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        // An integer past 64 bits: Python's int holds it exactly.
        return py.get_type::<PyInt>().call1((text,));
    }
    // The nearest float, as Python's `float(text)` gives it: past the
    // float's range that is an infinity (`1e400`), never a NaN.
    let float: f64 = text
        .parse()
        .map_err(|_| PyValueError::new_err(format!("the number {text} is not a float")))?;
    Ok(PyFloat::new(py, float).into_any())
}
