"""`agentctx run --mcp`: an MCP server's tools (the official SDK's
MCPServer) as the activities of a plan."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from servers import tool_server_over_http

BIN = os.environ.get("AGENTCTX_BIN", "agentctx")
SERVER = f"{sys.executable} {Path(__file__).with_name('tool_server.py')}"


def context(tmp_path: Path) -> str:
    path = str(tmp_path / "run.jsonl")
    state = {"type": "state", "data": {"x": 2, "word": "hi"}}
    subprocess.run([BIN, "append", path, json.dumps(state)], check=True, capture_output=True)
    return path


def run(where: str, plan: list[dict[str, Any]], *flags: str) -> tuple[dict[str, Any], str]:
    out = subprocess.run(
        [BIN, "run", where, json.dumps(plan), "--write", *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(out.stdout), out.stderr


def view(where: str) -> Any:
    out = subprocess.run([BIN, "view", where, "state"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def statuses(report: dict[str, Any]) -> list[str]:
    return [str(c["status"]) for c in report["calls"]]


def test_r43_a_servers_tools_are_activities_their_results_written(tmp_path: Path) -> None:
    where = context(tmp_path)
    report, _ = run(where, [
        {"_tool": "add", "a": "†state.x", "b": 40, "_outputPath": "†state.sum"},
        {"_tool": "shout", "text": "†state.word", "_outputPath": "†state.loud"},
    ], "--mcp", SERVER)
    assert statuses(report) == ["done", "done"]
    # Structured content when the tool gives it, else its text as JSON.
    assert view(where) == {"x": 2, "word": "hi", "sum": {"sum": 42}, "loud": {"result": "HI"}}


def test_r43_is_error_and_a_schema_mismatch_are_the_calls_failures(tmp_path: Path) -> None:
    where = context(tmp_path)
    report, _ = run(where, [
        {"_tool": "boom", "_outputPath": "†state.ok || †state.failed"},
        {"_tool": "add", "a": "two", "b": 1, "_outputPath": "†state.bad || †state.refused"},
    ], "--mcp", SERVER)
    assert statuses(report) == ["done", "done"]
    state = view(where)
    assert "Error executing tool boom" in state["failed"]["error"]
    assert state["refused"]["error"] == (
        'the arguments of "add" do not match its inputSchema: '
        '"\\"two\\" is not of type \\"integer\\"" (at "/a")'
    )


def test_r43_two_servers_with_one_tool_name_are_refused_until_named(tmp_path: Path) -> None:
    where = context(tmp_path)
    out = subprocess.run(
        [BIN, "run", where, "[]", "--mcp", SERVER, "--mcp", SERVER],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 2
    assert 'the tool "add" is served by both' in out.stderr
    report, _ = run(where, [{"_tool": "b.add", "a": 1, "b": 2, "_outputPath": "†state.b"}],
                    "--mcp", SERVER, "--mcp", f"b={SERVER}")
    assert statuses(report) == ["done"] and view(where)["b"] == {"sum": 3}


def test_r43_a_call_past_the_timeout_fails_and_the_run_goes_on(tmp_path: Path) -> None:
    where = context(tmp_path)
    report, _ = run(where, [
        {"_tool": "nap", "seconds": 60, "_outputPath": "†state.nap || †state.napFailed"},
        {"_tool": "shout", "text": "after", "_outputPath": "†state.after"},
    ], "--mcp", SERVER, "--activity-timeout", "2")
    assert statuses(report) == ["done", "done"]
    state = view(where)
    assert state["napFailed"]["error"] == '"nap" did not answer in 2 s'
    assert state["after"] == {"result": "AFTER"}


def test_r43_a_server_that_dies_mid_call_fails_that_call_only(tmp_path: Path) -> None:
    where = context(tmp_path)
    before = len(Path(where).read_text().splitlines())
    report, _ = run(where, [
        {"_tool": "die", "_outputPath": "†state.died || †state.death"},
    ], "--mcp", SERVER, "--activity-timeout", "10")
    assert statuses(report) == ["done"]
    assert "error" in view(where)["death"]
    # One line: the failure; nothing half-written.
    assert len(Path(where).read_text().splitlines()) == before + 1


def test_r43_an_answer_past_the_line_bound_is_never_held(tmp_path: Path) -> None:
    where = context(tmp_path)
    report, _ = run(where, [
        {"_tool": "flood", "megabytes": 100, "_outputPath": "†state.flood || †state.flooded"},
    ], "--mcp", SERVER, "--activity-timeout", "5")
    assert statuses(report) == ["done"]
    assert view(where)["flooded"]["error"] == '"flood" did not answer in 5 s'


def test_r43_a_worker_runs_a_stored_plan_with_an_mcp_servers_tools() -> None:
    import uuid

    database = os.environ.get("AGENTCTX_TEST_DATABASE_URL", "postgres://root@127.0.0.1:5432/test")
    where = f"{database}?context=mcp-worker-{uuid.uuid4().hex[:12]}"
    messages = [
        {"type": "state", "data": {"x": 2}},
        {"type": "plan", "calls": [
            {"_tool": "add", "a": "†state.x", "b": 3, "_outputPath": "†state.sum"},
            {"_tool": "shout", "text": "done", "_outputPath": "†state.loud"},
        ]},
    ]
    subprocess.run([BIN, "append", where, json.dumps(messages)], check=True, capture_output=True)
    out = subprocess.run(
        [BIN, "worker", where, "--mcp", SERVER, "--until-idle"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert view(where) == {"x": 2, "sum": {"sum": 5}, "loud": {"result": "DONE"}}


def test_r43_a_server_over_http_serves_activities_too(tmp_path: Path) -> None:
    with tool_server_over_http() as url:
        where = context(tmp_path)
        report, _ = run(where, [
            {"_tool": "web.shout", "text": "†state.word", "_outputPath": "†state.loud"},
        ], "--mcp-http", f"web={url}")
        assert statuses(report) == ["done"]
        assert view(where)["loud"] == {"result": "HI"}


HOSTILE = f"{sys.executable} {Path(__file__).with_name('hostile_server.py')}"
EVIL = "evil\u001b[2J\u202etool"


def test_r43_a_hostile_servers_names_and_texts_are_quoted_where_printed(tmp_path: Path) -> None:
    where = context(tmp_path)
    out = subprocess.run(
        [BIN, "run", where, json.dumps([{"_tool": EVIL, "_outputPath": "†state.ok || †state.failed"}]),
         "--write", "--mcp", HOSTILE],
        capture_output=True, text=True, timeout=120,
    )
    for printed in (out.stdout, out.stderr):
        assert "\u001b" not in printed and "\u202e" not in printed and "\u0007" not in printed
    assert statuses(json.loads(out.stdout)) == ["done"]
    failed = view(where)["failed"]["error"]
    assert failed == '"evil\\u001b[2J\\u202etool": "failed\\u001b[31m red \\u202e reversed"'
    clash = subprocess.run(
        [BIN, "run", where, "[]", "--mcp", HOSTILE, "--mcp", HOSTILE],
        capture_output=True, text=True, timeout=120,
    )
    assert clash.returncode == 2
    assert "\u001b" not in clash.stderr and "\u202e" not in clash.stderr
    assert 'the tool "evil\\u001b[2J\\u202etool" is served by both' in clash.stderr


def test_r43_a_server_that_never_answers_cannot_hang_the_run(tmp_path: Path) -> None:
    import time

    where = context(tmp_path)
    silent = f"{sys.executable} {Path(__file__).with_name('silent_server.py')}"
    started = time.monotonic()
    out = subprocess.run(
        [BIN, "run", where, "[]", "--mcp", silent, "--activity-timeout", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 1
    assert "no answer to initialize in 2 s" in out.stderr
    assert time.monotonic() - started < 20
