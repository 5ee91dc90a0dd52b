"""A hostile MCP client against `agentctx mcp`: raw JSON-RPC on its stdin,
no SDK in the way. Oversized and endless lines cost bounded memory and the
session goes on; what the peer sends is never echoed raw."""

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

BIN = os.environ.get("AGENTCTX_BIN", "agentctx")


def start(tmp_path: Path) -> subprocess.Popen[bytes]:
    context = str(tmp_path / "h.jsonl")
    subprocess.run(
        [BIN, "append", context, json.dumps({"type": "state", "data": {"n": 1}})],
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        [BIN, "mcp", context], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    send(server, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}})
    assert answer(server)["id"] == 0
    send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return server


def send(server: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert server.stdin is not None
    server.stdin.write(json.dumps(message).encode() + b"\n")
    server.stdin.flush()


def answer(server: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert server.stdout is not None
    line = server.stdout.readline()
    assert line, "the server closed its stdout"
    reply: dict[str, Any] = json.loads(line)
    return reply


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_r42_an_endless_line_costs_bounded_memory_and_the_session_goes_on(tmp_path: Path) -> None:
    server = start(tmp_path)
    assert server.stdin is not None
    started = time.monotonic()
    chunk = b"A" * (1 << 20)
    for _ in range(64):  # 64 MiB without a newline: four times the line bound
        server.stdin.write(chunk)
    server.stdin.write(b"\n")
    server.stdin.flush()
    send(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "resolve", "arguments": {"expression": "†state.n"}}})
    reply = answer(server)
    assert reply["id"] == 1 and reply["result"]["structuredContent"]["value"] == 1
    assert time.monotonic() - started < 20
    assert peak_rss_mb(server.pid) < 120
    server.stdin.close()
    assert server.wait(timeout=10) == 0


def test_r42_what_the_peer_sends_is_quoted_in_what_comes_back(tmp_path: Path) -> None:
    server = start(tmp_path)
    send(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "view", "arguments": {"kind": "state", "\u001b[2J\u202e": 1}}})
    reply = answer(server)
    text = reply["result"]["content"][0]["text"]
    assert reply["result"]["isError"] is True
    assert "\u001b" not in text and "\u202e" not in text
    assert text == 'view: unknown argument "\\u001b[2J\\u202e" (it takes: at, instance, kind)'
    send(server, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "view", "arguments": {"kind": "st\u001bate"}}})
    reply = answer(server)
    assert reply["result"]["isError"] is True
    assert "\u001b" not in reply["result"]["content"][0]["text"]
    assert server.stdin is not None
    server.stdin.close()
    server.wait(timeout=10)
