//! Where each call of a plan stands when many workers run it (R34d; no
//! database): the order results of calls writing the same place land in
//! (`Plan::writes_after`), and why a call is blocked (`standings`), with
//! the exact reasons `agentctx status --calls` prints.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests

use agent_core::{json, json::Value};
use agent_data::Context;
use agent_plan::{Known, Plan, Standing, standings};

fn plan(calls: &[Value]) -> Plan {
    Plan::new(calls.to_vec()).unwrap()
}

fn push(tool: &str, path: &str) -> Value {
    json!({"_tool": tool, "_outputPath": path, "_outputMethod": "push"})
}

fn set(path: &str) -> Value {
    json!({"_tool": "t", "_outputPath": path})
}

fn blocked(reason: &str, stuck: bool) -> Standing {
    Standing::Blocked {
        reason: reason.to_owned(),
        stuck,
    }
}

/// The standings of `plan` against `context`, with the stored states
/// `known` and the tools `tools` some worker has.
fn stand(plan: &Plan, known: &[Known], context: &Context, tools: &[&str]) -> Vec<Standing> {
    standings(plan, &plan.writes_after(), known, context, &|tool| {
        tools.contains(&tool)
    })
}

fn empty() -> Context {
    Context::from_json("[]").unwrap()
}

#[test]
fn r34d_calls_writing_the_same_place_are_ordered_by_wave_then_index() {
    // Calls 1 and 2 are in wave 0; call 0 reads what call 3 writes, so it
    // is in wave 1 with call 3 in wave 0: the pushes land 1, 2, 0 — the
    // order `run` writes them — whatever their plan order. Each waits for
    // the latest push before it only.
    let p = plan(&[
        json!({"_tool": "t", "x": "†state.seed", "_outputPath": "†state.list", "_outputMethod": "push"}),
        push("t", "†state.list"),
        push("t", "†state.list"),
        set("†state.seed"),
    ]);
    assert_eq!(p.waves(), [vec![1, 2, 3], vec![0]]);
    assert_eq!(p.writes_after(), [vec![2], vec![], vec![1], vec![]]);

    // Three pushes in one wave: each waits only for the one before it.
    let chain = plan(&[
        push("t", "†state.list"),
        push("u", "†state.list"),
        push("t", "†state.list"),
    ]);
    assert_eq!(chain.writes_after(), [vec![], vec![0], vec![1]]);

    // The failure outcome's destination counts as a place the call writes.
    let outcomes = plan(&[
        set("†state.a || †state.err"),
        set("†state.err"),
        set("†state.b && †state.a"),
    ]);
    assert_eq!(outcomes.writes_after(), [vec![], vec![0], vec![0]]);
}

#[test]
fn r34d_calls_writing_different_places_are_not_ordered() {
    let p = plan(&[
        // Different first segments of one layer.
        set("†state.a"),
        set("†state.b"),
        // Another kind.
        set("†audit.a"),
        // Another instance, and an instance against the global layer: R5
        // folds an instance's layer on top of the global one whatever their
        // order in the log.
        json!({"_tool": "t", "_instance": "i1", "_outputPath": "†state.a"}),
        json!({"_tool": "t", "_instance": "i2", "_outputPath": "†state.a"}),
        // No output path: writes nothing.
        json!({"_tool": "t"}),
        // The same first segment, deeper: ordered (conservatively).
        set("†state.a.deep"),
        json!({"_tool": "t", "_instance": "i1", "_outputPath": "†state.a.x"}),
    ]);
    assert_eq!(
        p.writes_after(),
        [
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![0],
            vec![3]
        ]
    );
}

#[test]
fn r34d_a_write_at_a_layers_root_waits_for_every_writer_since_the_last_one() {
    let p = plan(&[
        set("†state.a"),
        set("†state.b"),
        set("†state"),
        set("†state.c"),
        set("†state.a"),
        set("†state"),
        set("†state.d"),
        // Another instance's root is another layer: it waits for nobody.
        json!({"_tool": "t", "_instance": "i1", "_outputPath": "†state"}),
    ]);
    assert_eq!(
        p.writes_after(),
        [
            vec![],
            vec![],
            // Every writer since the start.
            vec![0, 1],
            // After a root write, a path waits for that root write.
            vec![2],
            vec![2],
            // Every writer since the previous root write, and that one.
            vec![2, 3, 4],
            vec![5],
            vec![],
        ]
    );
}

#[test]
fn r34d_a_call_waits_for_the_calls_it_depends_on_and_for_earlier_writers_of_its_place() {
    let p = plan(&[
        json!({"_tool": "fetch", "_outputPath": "†state.profile"}),
        json!({"_tool": "summ", "p": "†state.profile", "_outputPath": "†state.summary"}),
        push("fetch", "†state.log"),
        push("fetch", "†state.log"),
    ]);
    let open = [Known::Open; 4];
    let tools = ["fetch", "summ"];
    assert_eq!(
        stand(&p, &open, &empty(), &tools),
        [
            Standing::Ready,
            blocked("waits for call 0", false),
            Standing::Ready,
            blocked("waits for call 2, which writes the same place first", false),
        ]
    );
    // Running is not done: still waiting.
    let running = [Known::Running, Known::Open, Known::Running, Known::Open];
    assert_eq!(
        stand(&p, &running, &empty(), &tools),
        [
            Standing::Running,
            blocked("waits for call 0", false),
            Standing::Running,
            blocked("waits for call 2, which writes the same place first", false),
        ]
    );
    // Done: the dependent resolves against the context and is ready; so
    // is the second push.
    let context = Context::from_json(r#"[{"type":"state","data":{"profile":{"n":1}}}]"#).unwrap();
    let done = [Known::Done, Known::Open, Known::Done, Known::Open];
    assert_eq!(
        stand(&p, &done, &context, &tools),
        [
            Standing::Done,
            Standing::Ready,
            Standing::Done,
            Standing::Ready
        ]
    );
    // A failed writer of the same place lets the next one write; a failed
    // dependency does not.
    let failed = [Known::Failed, Known::Open, Known::Failed, Known::Open];
    assert_eq!(
        stand(&p, &failed, &context, &tools),
        [
            Standing::Failed,
            blocked("call 0, which it depends on, will not be done", true),
            Standing::Failed,
            Standing::Ready,
        ]
    );
}

#[test]
fn r34d_a_call_after_a_failed_dependency_will_not_be_done_and_neither_will_its_dependents() {
    let p = plan(&[
        json!({"_tool": "t", "x": "†state.b", "_outputPath": "†state.c"}),
        json!({"_tool": "t", "x": "†state.a", "_outputPath": "†state.b"}),
        set("†state.a"),
        // Writes where call 0 writes, after it in write order (both are in
        // wave 2): call 0 will never write, so it does not hold call 3 up.
        json!({"_tool": "t", "x": "†audit.z", "_outputPath": "†state.c"}),
        set("†audit.y"),
        json!({"_tool": "t", "x": "†audit.y", "_outputPath": "†audit.z"}),
    ]);
    assert_eq!(p.waves(), [vec![2, 4], vec![1, 5], vec![0, 3]]);
    assert_eq!(p.writes_after()[3], [0]);
    let context =
        Context::from_json(r#"[{"type":"data","kind":"audit","data":{"y":1,"z":2}}]"#).unwrap();
    let known = [
        Known::Open,
        Known::Open,
        Known::Failed,
        Known::Open,
        Known::Done,
        Known::Done,
    ];
    assert_eq!(
        stand(&p, &known, &context, &["t"]),
        [
            blocked("call 1, which it depends on, will not be done", true),
            blocked("call 2, which it depends on, will not be done", true),
            Standing::Failed,
            Standing::Ready,
            Standing::Done,
            Standing::Done,
        ]
    );
}

#[test]
fn r18_missing_references_block_a_call_for_good_and_name_every_reference() {
    let p = plan(&[
        json!({"_tool": "t", "_instance": "i1", "x": "†input.id", "y": {"z": "†input.name"}, "_outputPath": "†state.a"}),
        // Its dependency is stuck, so it is stuck too.
        json!({"_tool": "t", "_instance": "i1", "a": "†state.a", "_outputPath": "†state.b"}),
        // Present in i1's view through the global layer (R5): ready.
        json!({"_tool": "t", "_instance": "i1", "g": "†input.shared", "_outputPath": "†state.c"}),
    ]);
    let context = Context::from_json(
        r#"[{"type":"input","data":{"shared":1}},{"type":"input","data":{"other":2},"_instance":"i1"}]"#,
    )
    .unwrap();
    assert_eq!(
        stand(&p, &[Known::Open; 3], &context, &["t"]),
        [
            blocked("missing †input.id, †input.name", true),
            blocked("call 0, which it depends on, will not be done", true),
            Standing::Ready,
        ]
    );
}

#[test]
fn r34d_a_call_whose_tool_no_worker_has_is_blocked_naming_the_tool() {
    let p = plan(&[
        json!({"_tool": "x", "_outputPath": "†state.a"}),
        json!({"_tool": "t", "a": "†state.a", "_outputPath": "†state.b"}),
        json!({"_tool": "say \"hi\"", "_outputPath": "†state.c"}),
        // Missing references are reported before a missing tool.
        json!({"_tool": "x", "m": "†input.none", "_outputPath": "†state.d"}),
        // A worker with tool x may still come: a later writer of its place
        // waits for it, so results land in the order `run` writes them.
        json!({"_tool": "t", "_outputPath": "†state.a"}),
    ]);
    assert_eq!(
        stand(&p, &[Known::Open; 5], &empty(), &["t"]),
        [
            blocked("no worker has an activity for tool \"x\"", false),
            blocked("waits for call 0", false),
            blocked(
                "no worker has an activity for tool \"say \\\"hi\\\"\"",
                false
            ),
            blocked("missing †input.none", true),
            blocked("waits for call 0, which writes the same place first", false),
        ]
    );
    // With the tool, the first call is ready and the others wait for it.
    assert_eq!(
        stand(&p, &[Known::Open; 5], &empty(), &["t", "x", "say \"hi\""]),
        [
            Standing::Ready,
            blocked("waits for call 0", false),
            Standing::Ready,
            blocked("missing †input.none", true),
            blocked("waits for call 0, which writes the same place first", false),
        ]
    );
}

#[test]
fn r34d_standing_names_are_those_status_counts() {
    let names: Vec<&str> = [
        Standing::Done,
        Standing::Failed,
        Standing::Running,
        Standing::Ready,
        blocked("why", false),
    ]
    .iter()
    .map(Standing::name)
    .collect();
    assert_eq!(names, ["done", "failed", "running", "ready", "blocked"]);
}
