//! What a call the model wrote may do (spec R39b). The model is untrusted
//! input: its calls may not write what only the loop writes, nor approve
//! anything, nor name an instance the application did not start.

use crate::CallInstances;
use agent_core::{Instance, quoted};
use agent_output::Call;
use std::collections::HashSet;

/// Kinds only the loop writes (R39, R40): a call writing `error` could
/// forge the errors the model is shown or break their list; one writing
/// `output` could end a run that never finished.
pub(crate) const RESERVED_KINDS: [&str; 2] = ["error", "output"];

/// Where approval gates live (the protocol's `†state.approvals`): a
/// model's call may not write there, nor the whole `state` above it, which
/// would replace or merge into the gates — a model must not approve its
/// own calls.
pub(crate) const GATES: (&str, &str) = ("state", "approvals");

/// The destinations one call may write, over all its alternatives: each
/// destination gets a copy of the result, so more would let a small answer
/// append many times its size.
pub(crate) const MAX_DESTINATIONS: usize = 16;

/// How many instances an error names before it says how many more.
const NAMED: usize = 10;

/// The rules a turn applies to each call of the answer.
pub(crate) struct Guard<'a> {
    instances: CallInstances<'a>,
    existing: HashSet<&'a str>,
}

impl<'a> Guard<'a> {
    /// A guard for a context whose calls may name `instances`.
    pub(crate) fn new(instances: CallInstances<'a>) -> Guard<'a> {
        let existing = match instances {
            CallInstances::Existing(ids) => ids.iter().map(Instance::as_str).collect(),
            CallInstances::Any => HashSet::new(),
        };
        Guard {
            instances,
            existing,
        }
    }

    /// The instances a call may name.
    pub(crate) fn instances(&self) -> CallInstances<'a> {
        self.instances
    }

    /// `Err(text)` for the model when the call writes a reserved kind or
    /// the approval gates, or names an instance it may not.
    pub(crate) fn check(&self, call: &Call) -> Result<(), String> {
        let outcomes = call.output_path().map(|p| p.outcomes()).unwrap_or_default();
        let count: usize = outcomes.iter().map(Vec::len).sum();
        if count > MAX_DESTINATIONS {
            return Err(format!(
                "the call's `_outputPath` has {count} destinations; a call may write at most {MAX_DESTINATIONS}"
            ));
        }
        for outcome in outcomes {
            for (i, reference) in outcome.iter().enumerate() {
                if outcome[..i].contains(reference) {
                    return Err(format!(
                        "the call's `_outputPath` writes {reference} twice in one outcome"
                    ));
                }
            }
        }
        for reference in outcomes.iter().flatten() {
            if RESERVED_KINDS.contains(&reference.kind.as_str()) {
                return Err(format!(
                    "the call may not write {reference}: only the loop writes the \"error\" and \"output\" kinds (give the final result as the answer's \"output\")"
                ));
            }
            let (kind, key) = GATES;
            let first = reference.path.segments().first().map(|s| s.as_key());
            if reference.kind.as_str() == kind && first.as_deref().is_none_or(|k| k == key) {
                return Err(format!(
                    "the call may not write {reference}: approvals under †{kind}.{key} are given by people, not by calls (write under another key of †{kind})"
                ));
            }
        }
        let Some(instance) = call.instance() else {
            return Ok(());
        };
        match self.instances {
            CallInstances::Any => Ok(()),
            CallInstances::Existing([]) => Err(format!(
                "the call names instance {}, but the context has no instances and a call may not start one",
                quoted(instance.as_str())
            )),
            CallInstances::Existing(ids) if !self.existing.contains(instance.as_str()) => {
                let mut named: Vec<String> =
                    ids.iter().take(NAMED).map(|x| quoted(x.as_str())).collect();
                if ids.len() > NAMED {
                    named.push(format!("and {} more", ids.len() - NAMED));
                }
                Err(format!(
                    "unknown instance {}: a call may name only the context's instances, {}",
                    quoted(instance.as_str()),
                    named.join(", ")
                ))
            }
            CallInstances::Existing(_) => Ok(()),
        }
    }
}
