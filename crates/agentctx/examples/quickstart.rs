//! The README's example: `cargo run -p agentctx --example quickstart`.
//! (The tidy check keeps the README's copy identical to this one.)

use agentctx::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A file context (or postgres://…?context=NAME), created on the first
    // write: here in a directory of its own, removed at the end.
    let dir = std::env::temp_dir().join(format!("agentctx-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("task.jsonl");
    let mut ctx = StoredContext::open(&path)?;
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
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
