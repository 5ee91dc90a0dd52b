//! Rendering: any loadable context renders in both modes for every provider
//! (or the provider refuses it with a typed error), identically twice.
#![no_main]
use agent_data::{Context, Format};
use agent_render::{Mode, Provider, Renderer, payload};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(loaded) = Context::load(bytes, Format::Jsonl) else { return };
    for mode in [Mode::Merged, Mode::Append] {
        let chat = Renderer::new().render(&loaded.context, mode);
        assert_eq!(chat, Renderer::new().render(&loaded.context, mode));
        for provider in [Provider::Plain, Provider::OpenAi, Provider::Anthropic, Provider::Text] {
            let _ = payload(&chat, provider).map(|p| p.to_text(false));
        }
    }
});
