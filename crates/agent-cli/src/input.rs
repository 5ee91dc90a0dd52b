//! Reading CONTEXT arguments and printing values.

use crate::Failure;
use agent_data::{Context, Format, Loaded};
use serde_json::Value;
use std::io::Read;

/// Loads CONTEXT: a file path, or `-` for stdin (SPEC §10). Load warnings
/// (a torn last line, R34) go to stderr.
pub(crate) fn load_context(arg: &str) -> Result<Context, Failure> {
    load_context_file(arg).map(|(loaded, _)| loaded.context)
}

/// Like [`load_context`], also returning the format and the warnings, for
/// commands that write the file back.
pub(crate) fn load_context_file(arg: &str) -> Result<(Loaded, Format), Failure> {
    let (loaded, format) = if arg == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::invalid(format!("cannot read stdin: {e}")))?;
        let format = Format::detect(None, &bytes);
        (Context::load(&bytes, format), format)
    } else {
        // Files go through the library, which streams JSONL line by line.
        let path = std::path::Path::new(arg);
        let format = Format::detect_file(path)
            .map_err(|e| Failure::invalid(format!("cannot read {arg}: {e}")))?;
        (Context::load_file(path), format)
    };
    let loaded = loaded.map_err(Failure::invalid)?;
    for warning in &loaded.warnings {
        eprintln!("warning: {arg}: {warning}");
    }
    Ok((loaded, format))
}

/// A value as one line of compact JSON, or pretty JSON.
pub(crate) fn print_value(value: &Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    };
    // Serialising a Value cannot fail (its keys are strings).
    text.unwrap_or_default() + "\n"
}

/// A JSON argument (SPEC §10): inline JSON, or `@path` to read a file.
pub(crate) fn json_arg(what: &str, arg: &str) -> Result<Value, Failure> {
    let text = match arg.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| Failure::invalid(format!("cannot read {what} from {path}: {e}")))?,
        None => arg.to_owned(),
    };
    serde_json::from_str(&text)
        .map_err(|e| Failure::invalid(format!("{what} is not valid JSON: {e}")))
}

/// A syntax error with the expression and a caret under the fault (SPEC §10).
pub(crate) fn syntax_failure(prefix: &str, error: &agent_vars::SyntaxError) -> Failure {
    Failure::invalid(format!("{prefix}{error}\n{}", error.caret()))
}

/// The references of an unresolved expression or pending call, for stderr.
pub(crate) fn missing_list(references: &[agent_core::Reference]) -> String {
    let names: Vec<String> = references.iter().map(ToString::to_string).collect();
    names.join(", ")
}
