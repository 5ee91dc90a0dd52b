//! `cargo xtask loop-demo`: `agentctx loop` on examples/loop, against a
//! local OpenAI-compatible server when one is configured
//! (`AGENTCTX_BASE_URL`, `AGENTCTX_MODEL`, optionally `OPENAI_API_KEY`),
//! else against a scripted server started here, so the loop can be seen
//! working on a fresh machine with no key.

use agent_core::{json, json::Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;

/// Runs the demo with `cargo run` (building the binary as needed).
pub(crate) fn run(scripted_only: bool) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(["run", "-q", "-p", "agent-cli", "--"]);
    run_with(scripted_only, command)
}

/// Runs the demo with the `agentctx` binary the tests built (CI: `cargo
/// run -p agent-cli` alone resolves other features, and would build the
/// stack again).
pub(crate) fn run_built(scripted_only: bool) -> Result<(), String> {
    let bin = crate::bench::target_dir()?.join("debug").join("agentctx");
    if !bin.is_file() {
        return Err(format!("{} is not built", bin.display()));
    }
    run_with(scripted_only, Command::new(bin))
}

/// Runs the demo through `agentctx` (`command`, to which `loop …` is
/// added); `scripted_only` ignores a configured server (CI).
fn run_with(scripted_only: bool, mut command: Command) -> Result<(), String> {
    let configured = std::env::var("AGENTCTX_BASE_URL")
        .ok()
        .filter(|_| !scripted_only);
    let (base, model) = match configured {
        Some(base) => {
            let model = std::env::var("AGENTCTX_MODEL")
                .map_err(|_| "AGENTCTX_BASE_URL is set: set AGENTCTX_MODEL too")?;
            eprintln!("xtask: loop-demo against {base} ({model})");
            (base, model)
        }
        None => {
            let listener =
                TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot listen: {e}"))?;
            let address = listener
                .local_addr()
                .map_err(|e| format!("no local address: {e}"))?;
            std::thread::spawn(move || serve(&listener));
            eprintln!("xtask: loop-demo against a scripted model at http://{address}");
            (format!("http://{address}"), "scripted".to_owned())
        }
    };
    let root = crate::workspace_root()?;
    let example = root.join("examples/loop");
    let work = root.join("target/loop-demo");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let context = work.join("context.jsonl");
    std::fs::copy(example.join("context.jsonl"), &context)
        .map_err(|e| format!("cannot copy the example context: {e}"))?;
    let status = command
        .current_dir(&root)
        .arg("loop")
        .arg(&context)
        .args(["--model", &model, "--base-url", &base])
        .arg("--output-schema")
        .arg(format!("@{}", example.join("output-schema.json").display()))
        .arg("--activity")
        .arg(format!(
            "weather=sh {}",
            example.join("weather.sh").display()
        ))
        .args(["--write", "--pretty"])
        .status()
        .map_err(|e| format!("cannot run agentctx: {e}"))?;
    if !status.success() {
        return Err(format!("agentctx loop failed ({status})"));
    }
    eprintln!(
        "xtask: the context with every turn's results: {}",
        context.display()
    );
    Ok(())
}

/// A scripted Chat Completions server: the first request gets two calls
/// (the explicit `weather`, then the latent `suggest` that reads its
/// result), every later one the final output.
fn serve(listener: &TcpListener) {
    let mut turn = 0;
    for stream in listener.incoming().flatten() {
        turn += 1;
        let answer = if turn == 1 {
            json!({"calls": [
                {"_tool": "weather", "city": "†input.city", "_outputPath": "†state.weather"},
                {"_tool": "suggest", "weather": "†state.weather",
                 "_output": "Swim at Barton Springs", "_outputPath": "†state.suggestion"}
            ], "output": null})
        } else {
            json!({"calls": [], "output": {"city": "Austin",
                   "plan": "Sunny and 31 °C: swim at Barton Springs."}})
        };
        let _ = answer_one(stream, &answer);
    }
}

/// Reads one HTTP request and answers it with `answer` as the content of a
/// Chat Completions response (without `usage`: nothing was counted, so the
/// loop counts what it sent itself).
fn answer_one(mut stream: TcpStream, answer: &Value) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let response = json!({
        "id": "chatcmpl-demo", "object": "chat.completion", "created": 0, "model": "scripted",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": answer.to_string(), "refusal": null}}]
    })
    .to_string();
    write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{response}",
        response.len()
    )
}
