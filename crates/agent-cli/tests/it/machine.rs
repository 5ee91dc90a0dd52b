//! Machine-readable output everywhere, completions and the manual page
//! (D65: machine-readable output).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use crate::support::agentctx;
use agent_core::{json, json::Value};

fn parsed(run: &crate::support::Run) -> Value {
    agent_core::json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

#[test]
fn d65_demo_json_is_one_object_with_the_plan_the_report_the_transcript_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.jsonl");
    let file = file.to_str().unwrap();
    let run = agentctx(&["demo", "--json", "--context", file]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 1);
    let demo = parsed(&run);
    assert_eq!(demo["context"], json!(file));
    assert!(std::path::Path::new(file).exists());
    assert_eq!(
        demo["plan"],
        json!({"calls": 10, "waves": [[0, 1, 2, 9], [3, 4, 5], [6, 7, 8]]})
    );
    assert_eq!(demo["report"]["calls"].as_array().unwrap().len(), 10);
    assert_eq!(demo["report"]["calls"][0]["status"], "done");
    assert!(
        demo["transcript"]
            .as_str()
            .unwrap()
            .contains("## Data: ¶state@①")
    );
}

#[test]
fn d65_check_json_lists_the_problems_and_keeps_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.jsonl");
    std::fs::write(&good, "{\"type\":\"state\",\"data\":{\"a\":1}}\n").unwrap();
    let run = agentctx(&["check", good.to_str().unwrap(), "--json"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "{\"ok\":true,\"problems\":[]}\n")
    );
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"type\":\"state\",\"data\":{\"a\":\"x\"}}\n\
         {\"type\":\"data\",\"kind\":\"state\",\"data\":{\"a\":1},\"_outputPath\":\"†state.a\",\"_outputMethod\":\"push\"}\n",
    )
    .unwrap();
    let text = agentctx(&["check", bad.to_str().unwrap()]);
    let run = agentctx(&["check", bad.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, "error: 1 problem(s) found\n");
    let problems: Vec<String> = text.stdout.lines().map(str::to_owned).collect();
    assert_eq!(parsed(&run), json!({"ok": false, "problems": problems}));
}

#[test]
fn d65_run_status_and_worker_accept_json_as_they_print_json_already() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "").unwrap();
    let plan = r#"[{"_tool":"t","_outputPath":"†state.x"}]"#;
    let run = agentctx(&["run", path.to_str().unwrap(), plan, "--dry-run", "--json"]);
    assert_eq!(
        run.stdout,
        "{\"waves\":[[0]],\"missingActivities\":[\"t\"]}\n"
    );
    // status and worker take --json and go on to say what they need.
    let run = agentctx(&["status", path.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: status needs a PostgreSQL CONTEXT"),
        "{}",
        run.stderr
    );
    let run = agentctx(&["worker", path.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: worker needs a PostgreSQL CONTEXT"),
        "{}",
        run.stderr
    );
}

#[test]
fn d65_loop_json_prints_the_output_and_each_turn() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start());
    let answer = json!({"calls": [], "output": {"result": "done"}});
    let body = json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.to_string()},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}});
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&server),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "{\"type\":\"input\",\"data\":{\"a\":1}}\n").unwrap();
    let uri = server.uri();
    let args = [
        "loop",
        path.to_str().unwrap(),
        "--model",
        "m",
        "--base-url",
        &uri,
    ];
    let run = agentctx(&[&args[..], &["--json"]].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        parsed(&run),
        json!({"finished": true, "output": {"result": "done"},
               "turns": [{"turn": 1, "callsRun": 0, "errors": 0, "tokensSent": 12}],
               "waiting": [], "rejected": []})
    );
    let run = agentctx(&args);
    assert_eq!(run.stdout, "{\"result\":\"done\"}\n");
}

#[test]
fn d65_completions_for_bash_zsh_and_fish_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let run = agentctx(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        for command in [
            "view",
            "resolve-call",
            "apply",
            "append",
            "loop",
            "worker",
            "completions",
        ] {
            assert!(run.stdout.contains(command), "{shell} lacks {command}");
        }
        assert!(
            run.stdout.contains("allow-key"),
            "{shell} lacks --allow-key"
        );
    }
    let run = agentctx(&["completions", "tcsh"]);
    assert_eq!(run.code, 2);
}

/// The pages kept in docs/man/ are what `agentctx man --dir` writes now;
/// `AGENTCTX_BLESS=1 cargo test -p agent-cli --test machine` rewrites them.
#[test]
fn d65_the_manual_pages_in_docs_man_are_current() {
    let kept = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/man");
    let dir = tempfile::tempdir().unwrap();
    let target = if std::env::var_os("AGENTCTX_BLESS").is_some() {
        kept.clone()
    } else {
        dir.path().to_owned()
    };
    let run = agentctx(&["man", "--dir", target.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let names = |d: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&kept),
        names(&target),
        "run with AGENTCTX_BLESS=1 to update docs/man"
    );
    for name in names(&target) {
        assert_eq!(
            std::fs::read_to_string(kept.join(&name)).unwrap(),
            std::fs::read_to_string(target.join(&name)).unwrap(),
            "docs/man/{name} is out of date: run with AGENTCTX_BLESS=1 to update it"
        );
    }
    let page = agentctx(&["man"]);
    assert_eq!(
        page.stdout,
        std::fs::read_to_string(kept.join("agentctx.1")).unwrap()
    );
    // One command's page, as --dir writes it.
    for command in ["run", "log", "append"] {
        let page = agentctx(&["man", command]);
        assert_eq!(page.code, 0, "{}", page.stderr);
        assert_eq!(
            page.stdout,
            std::fs::read_to_string(kept.join(format!("agentctx-{command}.1"))).unwrap(),
            "{command}"
        );
    }
    let unknown = agentctx(&["man", "rn"]);
    assert_eq!(unknown.code, 2);
    assert_eq!(
        unknown.stderr,
        "error: no command \"rn\"; did you mean \"run\"?\n"
    );
}

#[test]
fn d65_help_says_a_context_may_be_a_postgresql_url() {
    for command in [
        "view", "resolve", "render", "check", "append", "apply", "run",
    ] {
        let run = agentctx(&[command, "--help"]);
        assert!(
            run.stdout.contains("Context file or PostgreSQL URL")
                || run.stdout.contains("or PostgreSQL URL"),
            "{command}: {}",
            run.stdout
        );
    }
}

#[test]
fn d65_the_readme_activities_run_the_moderation_plan_as_demo_does() {
    let examples =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/moderation");
    let dir = tempfile::tempdir().unwrap();
    let context = dir.path().join("context.jsonl");
    std::fs::copy(examples.join("context.jsonl"), &context).unwrap();
    let script = examples.join("activity.py");
    let activities: Vec<String> = ["classify", "score", "decide", "notify"]
        .iter()
        .map(|tool| format!("{tool}=python3 '{}' {tool}", script.display()))
        .collect();
    let plan = format!("@{}", examples.join("plan.json").display());
    let mut args = vec!["run", context.to_str().unwrap(), &plan];
    for activity in &activities {
        args.extend(["--activity", activity]);
    }
    let run = agentctx(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let scratch = tempfile::tempdir().unwrap();
    let written = scratch.path().join("demo.jsonl");
    let demo = parsed(&agentctx(&[
        "demo",
        "--json",
        "--context",
        written.to_str().unwrap(),
    ]));
    let summary = |report: &Value| -> Vec<Value> {
        report["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| json!([c["tool"], c["status"], c["outcome"], c["paths"]]))
            .collect()
    };
    assert_eq!(summary(&parsed(&run)), summary(&demo["report"]));
}

#[test]
fn d53_json_printed_escapes_what_a_terminal_would_act_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bidi.jsonl");
    let file = file.to_str().unwrap();
    let message = "{\"type\":\"state\",\"data\":{\"name\":\"ok\u{202e}kO\u{7f}\",\"long\":\""
        .to_owned()
        + &"\u{2066}é".repeat(40_000)
        + "\"}}";
    let input = dir.path().join("message.jsonl");
    std::fs::write(&input, message).unwrap();
    let at = format!("@{}", input.display());
    let run = agentctx(&["append", file, &at]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Printed whole (view streams it) and as a returned value (resolve).
    for args in [
        vec!["view", file, "state"],
        vec!["resolve", file, "†state.name"],
    ] {
        let run = agentctx(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            !run.stdout.contains(['\u{202e}', '\u{2066}', '\u{7f}']),
            "{}",
            &run.stdout[..80]
        );
        let value: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let name = value.get("name").unwrap_or(&value);
        assert_eq!(name, "ok\u{202e}kO\u{7f}");
    }
}
