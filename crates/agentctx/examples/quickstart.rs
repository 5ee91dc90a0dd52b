//! The README's example: `cargo run -p agentctx --example quickstart`.
//! (The tidy check keeps the README's copy identical to this one.)

use agentctx::prelude::*;
use serde_json::{Value, json};

fn main() -> Result<(), agentctx::Error> {
    // A file context (or postgres://…?context=NAME), created on the first write.
    let mut ctx = StoredContext::open("task.jsonl")?;
    ctx.append(json!({"type": "input", "data": {"user": 7}}))?;
    let mut activities = Activities::new();
    activities.register(
        "fetch",
        activity(|call: &Value| {
            let id = call["id"].as_i64().ok_or("id must be an integer")?;
            Ok(json!({"name": format!("user {id}")}))
        }),
    );
    let plan =
        vec![json!({"_tool": "fetch", "id": "†input.user", "_outputPath": "†state.profile"})];
    ctx.run(plan, &activities)?;
    println!("{}", ctx.get("†state.profile.name")?);
    Ok(())
}
