//! spec §11 worked examples, as far as the layers built so far reach.
//! (Rendering and `apply` parts are tested in their own crates.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use agent_core::{Kind, Reference};
use agent_core::{json, json::Value};
use agent_data::{CheckMode, Context, DataMessage};

fn fixture(name: &str) -> Context {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    Context::load_file(&path).unwrap().context
}

fn read(ctx: &Context, reference: &str) -> Option<Value> {
    ctx.read(&Reference::parse(reference).unwrap(), None)
        .cloned()
}

#[test]
fn example_1_data_merge() {
    let ctx = fixture("example1.json");
    let user = Kind::new("user").unwrap();
    assert_eq!(
        ctx.view(&user, None),
        Some(&json!({"name": "John Doe", "age": 30}))
    );
    assert_eq!(
        ctx.description(&user, None),
        Some("Represents the current user.")
    );
    assert_eq!(
        ctx.schema(&user, None).unwrap()["properties"]["city"],
        json!({"type": "string"})
    );
    assert!(ctx.check(CheckMode::Complete).is_empty());
}

#[test]
fn example_2_output_and_resolution() {
    // The context after the engine appended updateUserStatus's result.
    let ctx = fixture("example2_after.json");
    assert_eq!(read(&ctx, "†data.user.status"), Some(json!("inactive")));
    assert_eq!(read(&ctx, "†data.user.name"), Some(json!("Alex")));
}

#[test]
fn example_2_seed_message_without_output_path_uses_call() {
    // The seed's appended message has no `_outputPath`, only `_call._outputPath` (R9).
    let ctx = Context::from_json(
        r#"[{"type":"data","data":{"user":{"name":"Alex","status":"active"}}},
            {"type":"data","data":{"user":{"status":"inactive"}},
             "_call":{"_tool":"updateUserStatus","newStatus":"inactive","_outputPath":"†data.user.status"},
             "_date":"2025-10-26T12:00:00Z"}]"#,
    )
    .unwrap();
    let msg = ctx.message(1).unwrap();
    let msg = msg.as_data().unwrap();
    assert_eq!(msg.destination().to_string(), ".user.status");
    assert_eq!(read(&ctx, "†data.user.status"), Some(json!("inactive")));
    assert_eq!(read(&ctx, "†data.user.name"), Some(json!("Alex")));
}

#[test]
fn example_3_set_replaces_the_subtree() {
    let mut ctx = fixture("example2_after.json");
    let set = DataMessage::from_value(json!({
        "type": "data", "kind": "data",
        "data": {"user": {"name": "Bea"}},
        "_outputPath": "†data.user", "_outputMethod": "set"
    }))
    .unwrap();
    ctx.append(&set.into()).unwrap();
    assert_eq!(read(&ctx, "†data.user.status"), None);
    assert_eq!(read(&ctx, "†data.user.name"), Some(json!("Bea")));
}
