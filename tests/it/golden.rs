//! R32: every mode × provider rendered for the spec's examples and an
//! instanced batch, compared byte for byte with files under `golden/`.
//! `UPDATE_GOLDEN=1 cargo test -p agentctx-tests --test golden` rewrites them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_data::Context;
use agent_render::{PayloadFormat, RenderMode, Renderer, payload};
use std::path::{Path, PathBuf};

const FIXTURES: [&str; 4] = [
    "example1.json",
    "example2_after.json",
    "batch.jsonl",
    // A loop plan superseded by a later one, and a worker plan (R28).
    "plans.jsonl",
];
const PROVIDERS: [PayloadFormat; 4] = [
    PayloadFormat::Plain,
    PayloadFormat::OpenAi,
    PayloadFormat::Anthropic,
    PayloadFormat::Text,
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn render(fixture: &str, mode: RenderMode, provider: PayloadFormat) -> String {
    let ctx = Context::load_file(&root().join("fixtures").join(fixture))
        .unwrap()
        .context;
    let chat = Renderer::new().render(&ctx, mode);
    let mut text = payload(&chat, provider).unwrap().to_text(true);
    text.push('\n');
    text
}

#[test]
fn r32_renders_match_golden_files() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for fixture in FIXTURES {
        for mode in [RenderMode::Merged, RenderMode::Append] {
            for provider in PROVIDERS {
                let stem = fixture.split('.').next().unwrap();
                let mode_name = if mode == RenderMode::Merged {
                    "merged"
                } else {
                    "append"
                };
                let ext = if provider == PayloadFormat::Text {
                    "txt"
                } else {
                    "json"
                };
                let path = root()
                    .join("golden")
                    .join(format!("{stem}.{mode_name}.{}.{ext}", provider.name()));
                let got = render(fixture, mode, provider);
                assert_eq!(
                    got,
                    render(fixture, mode, provider),
                    "same context, same bytes"
                );
                if update {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, &got).unwrap();
                } else if std::fs::read_to_string(&path).ok().as_deref() != Some(got.as_str()) {
                    mismatches.push(path.display().to_string());
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "renders differ from golden files (UPDATE_GOLDEN=1 to accept): {mismatches:#?}"
    );
}
