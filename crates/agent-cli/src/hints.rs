//! What the command line does for arguments as users type them: typos
//! named (D63: typos refused), instance aliases and unknown instances (D64: arguments as typed),
//! strings that look like references.

use crate::Failure;
use agent_core::{Instance, Kind, quoted};
use agent_data::{Context, Message};
use agent_output::Call;
use std::sync::OnceLock;

/// `--allow-key`: the application's own `_` keys.
pub(crate) static ALLOWED: OnceLock<Vec<String>> = OnceLock::new();

fn allowed() -> &'static [String] {
    ALLOWED.get().map_or(&[], Vec::as_slice)
}

/// What an unknown-key error adds: how to admit a key that is meant.
fn allow_hint(key: &str) -> String {
    format!(" (--allow-key {key})")
}

/// Refuses a call with a `_` key the engine does not read (D63: typos refused); `what`
/// says which call (`CALL`, `PLAN call 2`).
pub(crate) fn check_call(call: &Call, what: &str) -> Result<(), Failure> {
    call.check_keys(allowed()).map_err(|e| {
        let hint = match &e {
            agent_output::Error::UnknownKey(k) if k.suggestion().is_none() => allow_hint(&k.key),
            _ => String::new(),
        };
        Failure::invalid(format!("{what}: {e}{hint}"))
    })
}

/// Refuses messages with a `_` key the engine does not read (D63: typos refused).
pub(crate) fn check_messages(messages: &[Message], what: &str) -> Result<(), Failure> {
    for (i, message) in messages.iter().enumerate() {
        message.check_keys(allowed()).map_err(|fault| {
            let hint = match &fault {
                agent_data::MessageFault::UnknownKey { key, .. } if key.suggestion().is_none() => {
                    allow_hint(&key.key)
                }
                _ => String::new(),
            };
            Failure::invalid(format!("{what}: message {i}: {fault}{hint}"))
        })?;
    }
    Ok(())
}

/// Warns about each parameter whose string value, with a `†` in front,
/// is a reference to a value of the context: most likely a forgotten `†`
/// (the string would pass as written). Only strings with a path (a `.` or
/// `[`): a bare word such as "state" is far more often meant as a word.
pub(crate) fn warn_literal_references(call: &Call, context: &Context, what: &str) {
    for warning in literal_references(call, context, what) {
        eprintln!("warning: {warning}");
    }
}

/// [`warn_literal_references`]'s warnings, without `warning: `.
pub(crate) fn literal_references(call: &Call, context: &Context, what: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    let scope = agent_vars::Scope::new(context, call.instance());
    for (key, value) in call.parameters() {
        let Some(text) = value.as_str() else { continue };
        if !text.contains(['.', '[']) || text.starts_with(agent_core::DAGGER) {
            continue;
        }
        let Ok(expression) = agent_vars::Expression::parse(&format!("†{text}")) else {
            continue;
        };
        if let agent_vars::Evaluation::Value(_) = expression.evaluate(&scope) {
            warnings.push(format!(
                "{what}: parameter {} is the string {}, which passes as written; \
                 did you mean {}?",
                quoted(key),
                quoted(text),
                quoted(&format!("†{text}"))
            ));
        }
    }
    warnings
}

/// The instance an `--instance` argument names: an id of the context as
/// typed, else `#1`…`#50` for ①…㊿ (D64: arguments as typed). An id the context does not have
/// is still read (R5) with a warning naming the ones it has.
pub(crate) fn instance_arg(
    context: &Context,
    typed: Option<&str>,
) -> Result<Option<Instance>, Failure> {
    let Some(typed) = typed else {
        return Ok(None);
    };
    let known: Vec<&Instance> = context.instances().collect();
    let text = if known.iter().any(|k| k.as_str() == typed) {
        typed.to_owned()
    } else {
        unalias(typed).unwrap_or_else(|| typed.to_owned())
    };
    let instance = Instance::new(text).map_err(Failure::invalid)?;
    if !known.contains(&&instance) {
        eprintln!(
            "warning: instance {} has no message in this context; the read sees the global \
             layers only{}",
            quoted(instance.as_str()),
            known_instances(&known, typed)
        );
    }
    Ok(Some(instance))
}

/// How many instances a warning names before it says how many more.
const NAMED: usize = 10;

/// `; did you mean …?` and the instances there are, for a warning.
fn known_instances(known: &[&Instance], typed: &str) -> String {
    if known.is_empty() {
        return " (the context has no instances)".into();
    }
    let mut named: Vec<String> = known
        .iter()
        .take(NAMED)
        .map(|x| match alias(x.as_str(), known) {
            Some(alias) => format!("{} ({alias})", quoted(x.as_str())),
            None => quoted(x.as_str()),
        })
        .collect();
    if known.len() > NAMED {
        named.push(format!("and {} more", known.len() - NAMED));
    }
    format!(
        "; the instances are {}{}",
        named.join(", "),
        agent_core::did_you_mean(typed, known.iter().map(|x| x.as_str()))
    )
}

/// `#N` for the generated id ①…㊿ (N from 1 to 50), an ASCII name to
/// type — unless an instance of `known` is called `#N` itself.
pub(crate) fn alias(id: &str, known: &[&Instance]) -> Option<String> {
    (1..=50)
        .find(|&n| agent_instancing::nth_id(n) == id)
        .map(|n| format!("#{n}"))
        .filter(|alias| !known.iter().any(|k| k.as_str() == alias))
}

/// The generated id `#N` stands for, N from 1 to 50 (`#01` is not one).
fn unalias(typed: &str) -> Option<String> {
    let digits = typed.strip_prefix('#')?;
    if digits.starts_with('0') {
        return None;
    }
    let n: usize = digits.parse().ok()?;
    (1..=50).contains(&n).then(|| agent_instancing::nth_id(n))
}

/// `; did you mean ¶KIND?` when a kind of the context is near `kind`, else
/// the kinds there are (up to ten).
pub(crate) fn kind_hint(context: &Context, kind: &Kind) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for identity in context.identities() {
        let name = identity.kind.as_str();
        if !kinds.contains(&name) {
            kinds.push(name);
        }
    }
    if kinds.contains(&kind.as_str()) {
        // The kind is there, only not in the layers this read sees.
        return String::new();
    }
    if let Some(near) = agent_core::nearest(kind.as_str(), kinds.iter().copied()) {
        return format!("; did you mean ¶{near}?");
    }
    match kinds.len() {
        0 => "; the context has no data messages".into(),
        n => {
            let mut named: Vec<String> =
                kinds.iter().take(NAMED).map(|k| format!("¶{k}")).collect();
            if n > NAMED {
                named.push(format!("and {} more", n - NAMED));
            }
            format!("; the kinds are {}", named.join(", "))
        }
    }
}

/// The warnings for each reference in `calls`' parameters to a kind the
/// context does not have and none of `calls` writes (`_outputPath`): such a
/// call would wait, blocked, for a value nothing makes. It names the
/// nearest kind, or the kinds there are, as `view` does.
pub(crate) fn unknown_kinds(calls: &[Call], context: &Context) -> Vec<String> {
    let mut warnings = Vec::new();
    let written: Vec<&Kind> = calls
        .iter()
        .filter_map(Call::output_path)
        .flat_map(|path| path.outcomes().iter().flatten())
        .map(|reference| &reference.kind)
        .collect();
    let mut known: Vec<&str> = context.identities().map(|id| id.kind.as_str()).collect();
    known.sort_unstable();
    known.dedup();
    for (i, call) in calls.iter().enumerate() {
        // A call whose expressions do not parse is refused by the run itself.
        let Ok(reads) = agent_vars::call_reads(call.as_value()) else {
            continue;
        };
        let mut warned: Vec<&Kind> = Vec::new();
        for reference in &reads.references {
            let kind = &reference.kind;
            let there = known.binary_search(&kind.as_str()).is_ok();
            if there || written.contains(&kind) || warned.contains(&kind) {
                continue;
            }
            warned.push(kind);
            warnings.push(format!(
                "PLAN call {i}: {reference} reads ¶{kind}, a kind the context does not \
                 have and no call of the plan writes: the call will be blocked{}",
                kind_hint(context, kind)
            ));
        }
    }
    warnings
}
