//! Hostile input at the command line (R33, spec §10): whatever the files and
//! arguments, `agentctx` exits 0, 1, 2 or 3 — never 101 (a panic) or by a
//! signal — and every failure prints an `error: …` line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use proptest::prelude::*;
use std::process::{Command, Stdio};

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentctx"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("killed by a signal: {args:?}"));
    (code, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn check(args: &[&str]) {
    let (code, stderr) = run(args);
    assert!(matches!(code, 0..=3), "exit {code} for {args:?}: {stderr}");
    if code != 0 {
        assert!(
            stderr.contains("error: "),
            "exit {code} without `error:` for {args:?}: {stderr}"
        );
    }
}

fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[†\"\\[\\]{}|&\\\\ .,:a-z0-9()\\-]{0,60}",
        prop::sample::select(vec![
            "[",
            "[]",
            "{}",
            "[{}]",
            "[1e400]",
            "[{\"type\":\"data\",\"data\":{\"a\":1,\"a\":2}}]",
            "[{\"type\":\"text\",\"text\":\"\\ud800\"}]",
            "{\"data\":1}\n{\"data\":",
            "†",
            "†a ||",
            "\\†x",
            "{\"_outputPath\":\"†state.x\"}",
            "{\"_outputPath\":7}",
            "{\"_instance\":\"\"}",
            "null",
            "\"†state\"",
        ])
        .prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn r33_every_command_exits_0_to_3_with_error_lines(context in hostile_text(), arg in hostile_text(), bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let dir = std::env::temp_dir().join(format!("agentctx-hostile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let json = dir.join("ctx.json");
        let jsonl = dir.join("ctx.jsonl");
        let raw = dir.join("ctx.bin");
        std::fs::write(&json, &context).unwrap();
        std::fs::write(&jsonl, &context).unwrap();
        std::fs::write(&raw, &bytes).unwrap();
        for file in [&json, &jsonl, &raw] {
            let f = file.to_str().unwrap();
            check(&["view", f, &arg]);
            check(&["view", f, "state", "--instance", &arg]);
            check(&["instances", f]);
            check(&["check", f, "--complete"]);
            check(&["resolve", f, &arg]);
            check(&["resolve-call", f, &arg]);
            check(&["apply", f, &arg, "--result", &arg]);
            check(&["apply", f, "{\"_outputPath\":\"†state.x || †state.y\"}", "--failure", &arg, "--date", &arg]);
            check(&["apply", f, "{\"_outputPath\":\"†state.x\"}", "--message", &arg]);
            check(&["render", f, "--provider", "anthropic"]);
            check(&["render", f, "--mode", &arg]);
        }
        check(&["render", json.to_str().unwrap(), "--tokens"]);
        check(&[&arg]);
    }
}
