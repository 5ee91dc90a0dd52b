//! Reading commands leave nothing beside the user's files (D101: reads leave nothing beside): a
//! context read and never written keeps its head record and snapshot in
//! the user's cache directory, so a checkout stays as it was checked out.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use std::path::Path;
use std::process::Command;

use test_support::files::listing;

#[test]
fn d101_the_readmes_reading_commands_leave_the_examples_directory_as_it_was() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/moderation");
    let checkout = tempfile::tempdir().unwrap();
    for name in ["context.jsonl", "plan.json", "activity.py"] {
        std::fs::copy(examples.join(name), checkout.path().join(name)).unwrap();
    }
    let before = listing(checkout.path());
    let cache = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_agentctx"))
            .args(args)
            .current_dir(checkout.path())
            .env(
                agent_store::CACHE_DIR_VARIABLE,
                cache.path().join("agentctx"),
            )
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let a = "python3 activity.py";
    let activities: Vec<String> = ["classify", "score", "decide", "notify"]
        .iter()
        .map(|name| format!("{name}={a} {name}"))
        .collect();
    let mut readme_run = vec!["run", "context.jsonl", "@plan.json"];
    for activity in &activities {
        readme_run.extend(["--activity", activity]);
    }
    run(&readme_run);
    run(&["view", "context.jsonl", "input"]);
    run(&["instances", "context.jsonl"]);
    run(&["render", "context.jsonl"]);
    run(&["check", "context.jsonl"]);
    run(&["verify", "context.jsonl"]);
    assert_eq!(
        listing(checkout.path()),
        before,
        "a read wrote beside the log"
    );
    // What the reads cached went to the cache directory, private.
    let kept = cache.path().join("agentctx");
    assert!(
        listing(&kept).iter().any(|name| name.ends_with(".head")),
        "{:?}",
        listing(&kept)
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);

    // Writing keeps them beside the log, as before.
    run(&[
        "append",
        "context.jsonl",
        r#"{"type":"note","data":{"seen":true}}"#,
    ]);
    assert!(listing(checkout.path()).contains(&".context.jsonl.head".to_owned()));
}
