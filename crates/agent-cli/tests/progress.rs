//! Live progress lines on a terminal (`run`): rewritten in place on a
//! pseudo-terminal, absent without one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

mod support;

#[test]
fn spec10_run_on_a_terminal_shows_one_live_line_per_wave_and_clears_it() {
    let dir = tempfile::tempdir().unwrap();
    let context = dir.path().join("task.jsonl");
    std::fs::write(&context, "{\"type\":\"input\",\"data\":{\"x\":1}}\n").unwrap();
    let context = context.to_str().unwrap();
    // Two independent calls, then one reading the first.
    let plan = r#"[{"_tool":"x","_outputPath":"†state.a"},{"_tool":"x","_outputPath":"†state.b"},
                   {"_tool":"x","in":"†state.a","_outputPath":"†state.c"}]"#;
    let args = [
        env!("CARGO_BIN_EXE_agentctx"),
        "run",
        context,
        plan,
        "--activity",
        "x=echo '\"v\"'",
    ];
    let on_tty = support::on_terminal(&args);
    let seen = String::from_utf8_lossy(&on_tty.stdout);
    assert!(on_tty.status.success(), "{seen}");
    let live = "\r\x1b[2Krun: 2 running, 0 done, 1 waiting\
                \r\x1b[2Krun: 1 running, 2 done, 0 waiting\
                \r\x1b[2Krun: 0 running, 3 done, 0 waiting\r\x1b[2K";
    assert!(seen.starts_with(live), "{seen:?}");
    assert!(seen.contains("\"status\":\"done\""), "{seen:?}");

    // Without a terminal: nothing on stderr.
    let plain = support::command(&args[1..]).output().unwrap();
    assert!(plain.status.success());
    assert_eq!(String::from_utf8_lossy(&plain.stderr), "");
}
