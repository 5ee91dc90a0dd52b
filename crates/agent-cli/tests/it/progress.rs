//! Live progress lines on a terminal (`run`, `worker`): rewritten in place on a
//! pseudo-terminal, absent without one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

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
    let on_tty = crate::support::on_terminal(&args);
    let seen = String::from_utf8_lossy(&on_tty.stdout);
    assert!(on_tty.status.success(), "{seen}");
    let live = "\r\x1b[2Krun: 2 running, 0 done, 1 waiting\
                \r\x1b[2Krun: 1 running, 2 done, 0 waiting\
                \r\x1b[2Krun: 0 running, 3 done, 0 waiting\r\x1b[2K";
    assert!(seen.starts_with(live), "{seen:?}");
    // The report, as text on a terminal (D108: readable on a terminal).
    assert!(
        seen.contains("3 call(s): \x1b[32m3 done\x1b[0m"),
        "{seen:?}"
    );
    // Without --write the three results were appended in memory only.
    assert!(
        seen.contains(
            "(not written: 3 message(s) appended in memory only; add --write to save them)"
        ),
        "{seen:?}"
    );
    let written = crate::support::on_terminal(&[args.as_slice(), &["--write"]].concat());
    assert!(!String::from_utf8_lossy(&written.stdout).contains("not written"));

    // Without a terminal: nothing on stderr.
    let plain = crate::support::command(&args[1..]).output().unwrap();
    assert!(plain.status.success());
    assert_eq!(String::from_utf8_lossy(&plain.stderr), "");
}

#[test]
fn spec10_worker_on_a_terminal_shows_where_the_plan_stands_and_clears_it() {
    let url = crate::support::fresh("live-worker");
    let plan = r#"{"type":"plan","calls":[{"_tool":"x","_outputPath":"†state.a"},
                   {"_tool":"x","_outputPath":"†state.b"},
                   {"_tool":"x","in":"†state.a","_outputPath":"†state.c"}]}"#;
    let appended = crate::support::agentctx(&["append", &url, plan]);
    assert_eq!(appended.code, 0, "{appended:?}");
    let args = [
        env!("CARGO_BIN_EXE_agentctx"),
        "worker",
        &url,
        "--name",
        "w1",
        "--concurrency",
        "2",
        "--activity",
        "x=cat",
        "--until-idle",
    ];
    let on_tty = crate::support::on_terminal(&args);
    let seen = String::from_utf8_lossy(&on_tty.stdout);
    assert!(on_tty.status.success(), "{seen}");
    // The first round claims the two ready calls; the third waits on the first.
    let first = "\r\x1b[2Kworker w1: 0/3 done, 2 running (2 here), 0 ready, 1 blocked, 0 failed";
    assert!(seen.starts_with(first), "{seen:?}");
    let last = "\r\x1b[2Kworker w1: 3/3 done, 0 running (0 here), 0 ready, 0 blocked, 0 failed\
                \r\x1b[2K{";
    assert!(seen.contains(last), "{seen:?}");
    assert!(seen.contains(r#""done":3"#), "{seen:?}");

    // Without a terminal: nothing on stderr (a second worker finds it all done).
    let plain = crate::support::command(&args[1..]).output().unwrap();
    assert!(plain.status.success(), "{plain:?}");
    assert_eq!(String::from_utf8_lossy(&plain.stderr), "");
}
