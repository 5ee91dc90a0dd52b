//! `erase` end to end (spec R10b and §11 example 4): an erased path is
//! unresolved (exit 3), an erased view is absent, and a later push starts
//! a new list; in an instance the erase does not fall through.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use std::process::Command;

fn agentctx(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentctx"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().expect("exited, not killed by a signal"),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn context(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("agentctx-erase-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(
        &path,
        r#"{"type":"state","data":{"steps":{"fetch":{"rows":3}},"log":["a"],"results":["r0","r1","r2"]}}
"#,
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

const RESET: &str = r#"{"_tool":"reset","_outputPath":"†state.steps.fetch && †state.log && †state.results[1]","_outputMethod":"erase"}"#;
const DATE: &str = "2025-10-26T12:00:00Z";

#[test]
fn r10b_cli_worked_example_erase_and_rerun() {
    let ctx = context("global.jsonl");
    let (code, out, err) = agentctx(&[
        "apply",
        &ctx,
        RESET,
        "--result",
        "\"ignored\"",
        "--date",
        DATE,
        "--write",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            r#"{{"type":"data","kind":"state","data":{{"steps":{{"fetch":null}}}},"_outputPath":"†state.steps.fetch","_outputMethod":"erase","_call":{RESET},"_date":"{DATE}"}}"#
        )
    );
    assert!(lines[1].contains(r#""data":{"log":null}"#), "{}", lines[1]);
    assert!(
        lines[2].contains(r#""data":{"results":{"1":null}}"#),
        "{}",
        lines[2]
    );
    assert_eq!(
        agentctx(&["view", &ctx, "state"]).1,
        "{\"steps\":{},\"results\":[\"r0\",null,\"r2\"]}\n"
    );
    for path in ["†state.steps.fetch", "†state.results[1]", "†state.log"] {
        let (code, out, _) = agentctx(&["resolve", &ctx, path]);
        assert_eq!((code, out.as_str()), (3, ""), "{path}");
    }
    assert_eq!(
        agentctx(&["resolve", &ctx, "†state.results[2]"]).1,
        "\"r2\"\n"
    );
    let push = r#"{"_outputPath":"†state.log","_outputMethod":"push"}"#;
    let (code, _, err) = agentctx(&["apply", &ctx, push, "--result", "\"b\"", "--write"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(agentctx(&["resolve", &ctx, "†state.log"]).1, "[\"b\"]\n");
    // The whole view erased: `view` is unresolved and says why.
    let all = r#"{"_outputPath":"†state","_outputMethod":"erase"}"#;
    assert_eq!(
        agentctx(&["apply", &ctx, all, "--result", "null", "--write"]).0,
        0
    );
    let (code, _, err) = agentctx(&["view", &ctx, "state"]);
    assert_eq!(code, 3);
    assert!(err.contains("the view is absent (erased"), "{err}");
    assert_eq!(agentctx(&["check", &ctx]).1, "ok\n");
}

#[test]
fn r10b_cli_an_erase_in_an_instance_does_not_fall_through() {
    let ctx = context("instance.jsonl");
    let reset = RESET.replacen('{', r#"{"_instance":"①","#, 1);
    let (code, _, err) = agentctx(&["apply", &ctx, &reset, "--result", "null", "--write"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, _) = agentctx(&["resolve", &ctx, "†state.log", "--instance", "①"]);
    assert_eq!(code, 3);
    assert_eq!(agentctx(&["resolve", &ctx, "†state.log"]).1, "[\"a\"]\n");
    assert_eq!(
        agentctx(&["view", &ctx, "state", "--instance", "①"]).1,
        "{\"steps\":{},\"results\":[\"r0\",null,\"r2\"]}\n"
    );
}

#[test]
fn r10b_cli_a_call_reading_an_erased_path_is_blocked_again_by_run() {
    let ctx = context("run.jsonl");
    // The reader comes first in the plan: it depends on the erase all the
    // same (D18: dependencies by overlap), runs after it, and finds its input gone.
    let plan = r#"[{"_tool":"use","rows":"†state.steps.fetch.rows","_outputPath":"†state.used"},
                   {"_tool":"reset","_outputPath":"†state.steps.fetch","_outputMethod":"erase"}]"#;
    let (code, out, err) = agentctx(&[
        "run",
        &ctx,
        plan,
        "--activity",
        "use=cat",
        "--activity",
        "reset=echo null",
        "--write",
    ]);
    assert_eq!(code, 3, "{out}{err}");
    let report: agent_core::json::Value = agent_core::json::from_str(&out).unwrap();
    assert_eq!(report["calls"][0]["status"], "blocked", "{report}");
    assert_eq!(report["calls"][1]["status"], "done", "{report}");
    assert_eq!(agentctx(&["resolve", &ctx, "†state.used"]).0, 3);
}
