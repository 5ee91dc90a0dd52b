//! Arguments as users type them (D64: arguments as typed): negative numbers and
//! strings as results, unknown instances named with the ones there are,
//! ASCII aliases for the generated ids ①…㊿.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

use crate::support::agentctx;
use agent_core::json::Value;

const DATE: &str = "2026-01-01T00:00:00Z";
const CALL: &str = r#"{"_tool":"t","_outputPath":"†state.x"}"#;

fn context(content: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("task.jsonl");
    std::fs::write(&path, content).unwrap();
    let path = path.to_str().unwrap().to_owned();
    (dir, path)
}

/// The value `apply` printed it wrote at `†state.x`.
fn written(run: &crate::support::Run) -> Value {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let message: Value = agent_core::json::from_str(&run.stdout).unwrap();
    message["data"]["x"].clone()
}

#[test]
fn d64_a_negative_number_is_a_result_and_a_failure() {
    let (_dir, path) = context("");
    let run = agentctx(&["apply", &path, CALL, "--result", "-1", "--date", DATE]);
    assert_eq!(written(&run), Value::from(-1));
    let run = agentctx(&["apply", &path, CALL, "--result", "-2.5e3", "--date", DATE]);
    assert_eq!(written(&run).to_string(), "-2.5e+3");
    let call = r#"{"_tool":"t","_outputPath":"†state.x || †state.error"}"#;
    let run = agentctx(&["apply", &path, call, "--failure", "-7", "--date", DATE]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(r#""data":{"error":-7}"#),
        "{}",
        run.stdout
    );
}

#[test]
fn d64_a_result_that_is_not_json_says_strings_need_quotes_or_result_text() {
    let (_dir, path) = context("");
    let run = agentctx(&["apply", &path, CALL, "--result", "Rome"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: --result is not valid JSON: expected value at line 1 column 1; a string needs \
         its JSON quotes: --result '\"Rome\"' (or --result-text Rome)\n"
    );
    let run = agentctx(&["apply", &path, CALL, "--result", "New York"]);
    assert!(
        run.stderr
            .ends_with("--result '\"New York\"' (or --result-text 'New York')\n"),
        "{}",
        run.stderr
    );
    let run = agentctx(&["apply", &path, CALL, "--failure", "timeout"]);
    assert!(
        run.stderr
            .ends_with("a string needs its JSON quotes: --failure '\"timeout\"'\n"),
        "{}",
        run.stderr
    );
    let run = agentctx(&["apply", &path, CALL, "--result", "'Rome'", "--date", DATE]);
    assert_eq!(run.code, 1);
    let run = agentctx(&["apply", &path, CALL, "--result", "\"Rome\"", "--date", DATE]);
    assert_eq!(written(&run), "Rome");
    let run = agentctx(&[
        "apply",
        &path,
        CALL,
        "--result-text",
        "New York",
        "--date",
        DATE,
    ]);
    assert_eq!(written(&run), "New York");
    let run = agentctx(&["apply", &path, CALL, "--result-text", "-1", "--date", DATE]);
    assert_eq!(written(&run), "-1");
}

#[test]
fn d64_outcome_goes_with_result_or_result_text_and_only_one_of_them() {
    let (_dir, path) = context("");
    let call = r#"{"_tool":"t","_outputPath":"†state.a || †state.x"}"#;
    let args = ["apply", &path, call, "--outcome", "1", "--date", DATE];
    let run = agentctx(&[&args[..], &["--result-text", "b"]].concat());
    assert_eq!(written(&run), "b");
    let run = agentctx(&[&args[..], &["--failure", "1"]].concat());
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "error: --outcome chooses where --result (or --result-text) goes: give one\n"
    );
    let run = agentctx(&["apply", &path, CALL, "--result", "1", "--result-text", "1"]);
    assert_eq!(run.code, 2);
}

const INSTANCES: &str = "{\"type\":\"input\",\"data\":{\"t\":\"first\"},\"_instance\":\"①\"}\n\
                         {\"type\":\"input\",\"data\":{\"t\":\"second\"},\"_instance\":\"②\"}\n";

#[test]
fn d64_an_unknown_instance_is_warned_about_naming_the_instances_there_are() {
    let (_dir, path) = context(INSTANCES);
    let run = agentctx(&["view", &path, "input", "--instance", "a2"]);
    assert_eq!(run.code, 3);
    assert_eq!(
        run.stderr,
        "warning: instance \"a2\" has no message in this context; the read sees the global \
         layers only; the instances are \"①\" (#1), \"②\" (#2)\n\
         error: ¶input@a2: no message of this kind\n"
    );
    let (_dir, empty) = context("{\"type\":\"state\",\"data\":{}}\n");
    let run = agentctx(&["resolve", &empty, "†state", "--instance", "x"]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stderr,
        "warning: instance \"x\" has no message in this context; the read sees the global \
         layers only (the context has no instances)\n"
    );
}

#[test]
fn d64_hash_n_names_the_generated_id_n_on_the_command_line() {
    let (_dir, path) = context(INSTANCES);
    let run = agentctx(&["view", &path, "input", "--instance", "#2"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "{\"t\":\"second\"}\n"));
    assert_eq!(run.stderr, "");
    let run = agentctx(&["resolve", &path, "†input.t", "--instance", "#1"]);
    assert_eq!(run.stdout, "\"first\"\n");
    // An alias of an id the context does not have reads as that id, warned.
    let run = agentctx(&["resolve", &path, "†input.t", "--instance", "#3"]);
    assert_eq!(run.code, 3);
    assert!(
        run.stderr
            .starts_with("warning: instance \"③\" has no message"),
        "{}",
        run.stderr
    );
    let run = agentctx(&["instances", &path, "--aliases"]);
    assert_eq!(run.stdout, "{\"①\":\"#1\",\"②\":\"#2\"}\n");
    assert_eq!(agentctx(&["instances", &path]).stdout, "[\"①\",\"②\"]\n");
}

#[test]
fn d64_an_instance_really_named_hash_n_is_read_as_itself() {
    let (_dir, path) = context(
        "{\"type\":\"input\",\"data\":{\"t\":\"mine\"},\"_instance\":\"#2\"}\n\
         {\"type\":\"input\",\"data\":{\"t\":\"gen\"},\"_instance\":\"②\"}\n\
         {\"type\":\"input\",\"data\":{\"t\":\"later\"},\"_instance\":\"#51\"}\n",
    );
    let run = agentctx(&["resolve", &path, "†input.t", "--instance", "#2"]);
    assert_eq!(run.stdout, "\"mine\"\n");
    let run = agentctx(&["resolve", &path, "†input.t", "--instance", "#51"]);
    assert_eq!(run.stdout, "\"later\"\n");
    let run = agentctx(&["instances", &path, "--aliases"]);
    // ② has no alias here: `#2` names the instance called so.
    assert_eq!(run.stdout, "{\"#2\":\"#2\",\"②\":\"②\",\"#51\":\"#51\"}\n");
}

#[test]
fn d64_an_object_result_that_is_not_json_is_shown_as_json_not_as_a_string() {
    let (_dir, path) = context("");
    let run = agentctx(&["apply", &path, CALL, "--result", "{'a':1}"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .ends_with("; JSON quotes keys and strings with \": --result '{\"a\":1}'\n"),
        "{}",
        run.stderr
    );
    let run = agentctx(&["apply", &path, CALL, "--failure", "[1, 2"]);
    assert!(
        run.stderr
            .ends_with("; --failure takes JSON, and this object or array is not valid JSON\n"),
        "{}",
        run.stderr
    );
}
