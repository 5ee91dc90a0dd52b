//! Applying outcomes: context, call and result come from the input (split at
//! newlines); a refused write must leave the context byte-identical.
#![no_main]
use agent_data::{Context, Format};
use agent_output::{FixedClock, Outcome};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let mut parts = bytes.splitn(3, |b| *b == b'\n');
    let (context, call, result) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let Ok(loaded) = Context::load(context, Format::Jsonl) else { return };
    let (Ok(call), Ok(value)) = (serde_json::from_slice(call), serde_json::from_slice::<serde_json::Value>(result)) else {
        return;
    };
    let clock = FixedClock(chrono::DateTime::UNIX_EPOCH);
    for outcome in [Outcome::Success(value.clone()), Outcome::Failure(value.clone()), Outcome::Message(value)] {
        let mut ctx = loaded.context.clone();
        let before = ctx.to_jsonl();
        if agent_output::apply(&mut ctx, &call, outcome, &clock).is_err() {
            assert_eq!(ctx.to_jsonl(), before);
        }
    }
});
