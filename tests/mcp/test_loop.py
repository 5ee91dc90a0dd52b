"""`agentctx loop --mcp`: an MCP server's tools offered to the model (a
scripted OpenAI-compatible server here) and run when it calls them."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from servers import tool_server_over_http

BIN = os.environ.get("AGENTCTX_BIN", "agentctx")
SERVER = f"{sys.executable} {Path(__file__).with_name('tool_server.py')}"


class Model(BaseHTTPRequestHandler):
    """Answers the first request with a call of `add` (agentctx's answer
    form, R40), the second with the output."""

    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        Model.requests.append(body)
        if len(Model.requests) == 1:
            content: dict[str, Any] = {
                "calls": [{"_tool": "add", "a": 20, "b": 22, "_outputPath": "†state.sum"}],
                "output": None,
            }
        else:
            content = {"calls": [], "output": "The sum is 42."}
        message = {"role": "assistant", "content": json.dumps(content)}
        finish = "stop"
        answer = json.dumps({"id": "r", "object": "chat.completion", "model": "m", "choices": [
            {"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def loop_with(tmp_path: Path, *source: str) -> None:
    Model.requests = []
    model = HTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    where = str(tmp_path / "loop.jsonl")
    subprocess.run([BIN, "append", where, json.dumps({"type": "text", "text": "Add 20 and 22."})],
                   check=True, capture_output=True)
    try:
        out = subprocess.run(
            [BIN, "loop", where, "--model", "m", "--provider", "openai", "--no-stream",
             "--base-url", f"http://127.0.0.1:{model.server_port}/v1", *source, "--write"],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "OPENAI_API_KEY": "unused"},
        )
    finally:
        model.shutdown()
    assert out.returncode == 0, out.stderr
    # The tool was offered with its description and its input schema.
    first = json.dumps(Model.requests[0])
    assert "Adds two integers." in first and '"add"' in first
    # The tool ran, and its result was written where the call said.
    view = subprocess.run([BIN, "view", where, "state"], check=True, capture_output=True, text=True)
    assert json.loads(view.stdout) == {"sum": {"sum": 42}}
    assert json.loads(out.stdout) == "The sum is 42."


def test_r43_a_loop_offers_an_mcp_servers_tools_and_runs_the_calls(tmp_path: Path) -> None:
    loop_with(tmp_path, "--mcp", SERVER)


def test_r43_a_loop_offers_the_tools_of_a_server_over_http(tmp_path: Path) -> None:
    with tool_server_over_http() as url:
        loop_with(tmp_path, "--mcp-http", url)
