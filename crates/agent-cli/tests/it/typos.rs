//! Typos are errors, tried as a user types them: a misspelt `_` key, method
//! or kind is refused or warned about, naming what was meant (decision
//! D63); loading never refuses an unknown field (R2).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use crate::support::agentctx;
use agent_core::json::Value;

const DATE: &str = "2026-01-01T00:00:00Z";

/// A fresh context file holding `content`, in a directory kept alive by
/// the returned guard.
fn context(content: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("task.jsonl");
    std::fs::write(&path, content).unwrap();
    let path = path.to_str().unwrap().to_owned();
    (dir, path)
}

const STATE: &str = "{\"type\":\"state\",\"data\":{\"items\":[]}}\n\
                     {\"type\":\"input\",\"data\":{\"text\":\"hello\"}}\n";

#[test]
fn d63_a_misspelt_output_path_is_refused_naming_the_key_meant_and_nothing_is_written() {
    let (_dir, path) = context(STATE);
    let call = r#"{"_tool":"t","_outputpath":"†state.x"}"#;
    let run = agentctx(&["apply", &path, call, "--result", "1", "--write"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "error: CALL: unknown key \"_outputpath\"; did you mean \"_outputPath\"?\n"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), STATE);
}

#[test]
fn d63_a_misspelt_output_method_key_is_refused_instead_of_falling_back_to_set() {
    let (_dir, path) = context(STATE);
    let call = r#"{"_tool":"t","_outputPath":"†state.items","_outputMetod":"push"}"#;
    let run = agentctx(&["apply", &path, call, "--result", "1"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: CALL: unknown key \"_outputMetod\"; did you mean \"_outputMethod\"?\n"
    );
}

#[test]
fn d63_an_unknown_key_far_from_any_names_the_engines_keys_and_allow_key_admits_it() {
    let (_dir, path) = context(STATE);
    let call = r#"{"_tool":"t","_outputPath":"†state.x","_trace":"run-7"}"#;
    let run = agentctx(&["apply", &path, call, "--result", "1", "--date", DATE]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: CALL: unknown key \"_trace\": the engine reads \"_tool\", \"_instance\", \
         \"_outputPath\", \"_outputMethod\", \"_output\"; an application's own `_` key must be \
         allowed (--allow-key _trace)\n"
    );
    let run = agentctx(&[
        "--allow-key",
        "_trace",
        "apply",
        &path,
        call,
        "--result",
        "1",
        "--date",
        DATE,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let written: Value = agent_core::json::from_str(&run.stdout).unwrap();
    assert_eq!(written["_call"]["_trace"], "run-7");
}

#[test]
fn d63_append_refuses_a_misspelt_instance_key_and_a_plans_misspelt_key_appending_nothing() {
    let (_dir, path) = context(STATE);
    let run = agentctx(&["append", &path, r#"{"type":"state","x":1,"_instanse":"①"}"#]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: MESSAGES: message 0: unknown key \"_instanse\"; did you mean \"_instance\"?\n"
    );
    let plan = r#"[{"type":"text","text":"go"},
                   {"type":"plan","calls":[{"_tool":"a"},{"_tool":"b","_outputPat":"†state.b"}]}]"#;
    let run = agentctx(&["append", &path, plan]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: MESSAGES: message 1: calls[1]: unknown key \"_outputPat\"; did you mean \"_outputPath\"?\n"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), STATE);
    // With the key allowed, the message lands with it.
    let run = agentctx(&[
        "--allow-key",
        "_source",
        "append",
        &path,
        r#"{"type":"state","data":{"x":1},"_source":"import"}"#,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn d63_apply_refuses_a_returned_message_with_a_misspelt_key() {
    let (_dir, path) = context(STATE);
    let message = r#"{"type":"state","data":{"y":1},"_outputMethd":"merge"}"#;
    let run = agentctx(&["apply", &path, r#"{"_tool":"t"}"#, "--message", message]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: --message: message 0: unknown key \"_outputMethd\"; did you mean \"_outputMethod\"?\n"
    );
}

#[test]
fn d63_run_refuses_a_plan_call_with_a_misspelt_key_before_running_anything() {
    let (_dir, path) = context(STATE);
    let plan = r#"[{"_tool":"a","_outputPath":"†state.a"},{"_tool":"b","_outputpath":"†state.b"}]"#;
    let run = agentctx(&["run", &path, plan, "--activity", "a=echo 1", "--write"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "error: PLAN call 1: unknown key \"_outputpath\"; did you mean \"_outputPath\"?\n"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), STATE);
}

#[test]
fn d63_r2_loading_reading_checking_and_copying_keep_unknown_keys_of_an_existing_log() {
    let log = "{\"type\":\"data\",\"kind\":\"state\",\"data\":{\"a\":1},\"_trace\":\"x\"}\n\
               {\"type\":\"plan\",\"calls\":[{\"_tool\":\"t\",\"_meta\":1}]}\n";
    let (dir, path) = context(log);
    assert_eq!(agentctx(&["view", &path, "state"]).stdout, "{\"a\":1}\n");
    assert_eq!(agentctx(&["check", &path]).stdout, "ok\n");
    let copy = dir.path().join("copy.jsonl");
    let copy = copy.to_str().unwrap();
    assert_eq!(agentctx(&["copy", &path, copy]).code, 0);
    assert_eq!(std::fs::read_to_string(copy).unwrap(), log);
}

#[test]
fn d63_a_parameter_naming_a_value_of_the_context_without_its_dagger_is_warned() {
    let (_dir, path) = context(STATE);
    let call = r#"{"_tool":"t","text":"input.text","word":"state","_outputPath":"†state.x"}"#;
    let run = agentctx(&["apply", &path, call, "--result", "1", "--date", DATE]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stderr,
        "warning: CALL: parameter \"text\" is the string \"input.text\", which passes as \
         written; did you mean \"†input.text\"?\n"
    );
    let run = agentctx(&["run", &path, &format!("[{call}]"), "--dry-run"]);
    assert!(
        run.stderr
            .starts_with("warning: PLAN call 0: parameter \"text\""),
        "{}",
        run.stderr
    );
    // The run's report says so too, the same words.
    let said = run
        .stderr
        .trim_end()
        .trim_start_matches("warning: ")
        .to_owned();
    let dry: agent_core::json::Value = agent_core::json::from_str(&run.stdout).unwrap();
    assert_eq!(dry["warnings"], agent_core::json::json!([said]));
    let ran = agentctx(&["run", &path, &format!("[{call}]"), "--activity", "t=echo 1"]);
    let report: agent_core::json::Value = agent_core::json::from_str(&ran.stdout).unwrap();
    assert_eq!(
        report["warnings"],
        agent_core::json::json!([said]),
        "{}",
        ran.stdout
    );
    // A string naming nothing in the context passes silently.
    let call = r#"{"_tool":"t","text":"input.nothing"}"#;
    assert_eq!(agentctx(&["resolve-call", &path, call]).stderr, "");
}

#[test]
fn d63_an_unknown_method_and_an_unknown_kind_suggest_the_nearest() {
    let (_dir, path) = context(STATE);
    let call = r#"{"_tool":"t","_outputPath":"†state.items","_outputMethod":"pus"}"#;
    let run = agentctx(&["apply", &path, call, "--result", "1"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: `_outputMethod`: unknown method \"pus\": expected set, merge, assign, push, \
         concat or erase; did you mean \"push\"?\n"
    );
    let run = agentctx(&["view", &path, "stat"]);
    assert_eq!(run.code, 3);
    assert_eq!(
        run.stderr,
        "error: ¶stat: no message of this kind; did you mean ¶state?\n"
    );
    let run = agentctx(&["view", &path, "output"]);
    assert_eq!(
        run.stderr,
        "error: ¶output: no message of this kind; the kinds are ¶state, ¶input\n"
    );
}

#[test]
fn d63_a_typo_in_a_global_flag_or_a_subcommand_is_clap_s_suggestion() {
    let run = agentctx(&["veiw"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("tip: some similar subcommands exist: 'verify', 'view'"),
        "{}",
        run.stderr
    );
    let run = agentctx(&["view", "x", "y", "--allow-keys", "_a"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("tip: a similar argument exists: '--allow-key'"),
        "{}",
        run.stderr
    );
}

#[test]
fn d63_append_says_on_stderr_how_many_messages_it_appended_and_stdout_stays_empty() {
    let (_dir, path) = context(STATE);
    let run = agentctx(&[
        "append",
        &path,
        r#"[{"type":"text","text":"a"},{"type":"text","text":"b"}]"#,
    ]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        format!("appended 2 message(s); {path} now has 4 message(s)\n")
    );
}

#[test]
fn d63_a_reference_to_a_kind_nothing_has_or_writes_is_warned_before_the_run() {
    let (_dir, path) = context(STATE);
    // ¶stat: nothing has it, nothing writes it — the call would wait.
    let plan = r#"[{"_tool":"t","c":"†stat.items","_outputPath":"†state.x"},
                  {"_tool":"t","c":"†made.x","_outputPath":"†state.y"},
                  {"_tool":"t","_outputPath":"†made.x"}]"#;
    let run = agentctx(&["run", &path, plan, "--dry-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "warning: PLAN call 0: †stat.items reads ¶stat, a kind the context does not have \
         and no call of the plan writes: the call will be blocked; did you mean ¶state?\n"
    );
    // Far from every kind: the kinds there are.
    let run = agentctx(&["run", &path, r#"[{"_tool":"t","c":"†zzz.q"}]"#, "--dry-run"]);
    assert_eq!(
        run.stderr,
        "warning: PLAN call 0: †zzz.q reads ¶zzz, a kind the context does not have \
         and no call of the plan writes: the call will be blocked; the kinds are ¶state, ¶input\n"
    );
}

#[test]
fn d104_a_dollar_or_a_plus_typed_for_the_dagger_is_named() {
    let (_dir, path) = context(STATE);
    for typed in ["$input.text", "+input.text"] {
        let run = agentctx(&["resolve", &path, typed]);
        assert_eq!(run.code, 1, "{typed}");
        assert!(
            run.stderr.starts_with(
                "error: syntax error at byte 0: expected '†' (an expression starts with a \
                 reference): did you mean \"†input.text\"?\n"
            ),
            "{typed}: {}",
            run.stderr
        );
    }
    let call = r#"{"_tool":"t","_outputPath":"$state.x"}"#;
    let run = agentctx(&["apply", &path, call, "--result", "1"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: `_outputPath` \"$state.x\" is not an expression: it must start with '†'; \
         did you mean \"†state.x\"?\n"
    );
}

#[test]
fn r27_view_of_a_value_breaking_its_schema_prints_it_and_warns_as_check_does() {
    let schema = r#"{"type":"object","properties":{"age":{"type":"integer"}}}"#;
    let (_dir, path) = context(&format!(
        "{{\"type\":\"data\",\"kind\":\"user\",\"data\":{{\"age\":\"ten\"}},\"schema\":{schema}}}\n\
         {{\"type\":\"data\",\"kind\":\"user\",\"data\":{{\"age\":10}},\"_instance\":\"a\"}}\n"
    ));
    let run = agentctx(&["view", &path, "user"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "{\"age\":\"ten\"}\n");
    let check = agentctx(&["check", &path]);
    let said = check.stdout.lines().next().unwrap().to_owned();
    assert_eq!(run.stderr, format!("warning: {said}\n"));
    // A view that keeps its schema is printed without a word.
    let run = agentctx(&["view", &path, "user", "--instance", "a"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
}
