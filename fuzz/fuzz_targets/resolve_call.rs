//! Call resolution: the input is a context line and a call, split at the
//! first newline; any pair resolves, is pending, or fails with a typed error.
#![no_main]
use agent_data::{Context, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let split = bytes.iter().position(|b| *b == b'\n').unwrap_or(bytes.len());
    let context = Context::load(&bytes[..split], Format::Jsonl).map(|l| l.context).unwrap_or_default();
    if let Ok(call) = serde_json::from_slice::<serde_json::Value>(bytes.get(split + 1..).unwrap_or_default()) {
        let _ = agent_vars::resolve_call(&call, &context);
        let _ = agent_vars::call_reads(&call);
    }
});
