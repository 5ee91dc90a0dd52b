//! Context loading, both formats: any bytes load or fail with a typed error.
#![no_main]
use agent_data::{CheckMode, Context, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    for format in [Format::Json, Format::Jsonl] {
        if let Ok(loaded) = Context::load(bytes, format) {
            let _ = loaded.context.check(CheckMode::Complete);
            let _ = loaded.context.to_jsonl();
        }
    }
});
