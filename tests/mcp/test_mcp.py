"""`agentctx mcp` driven by the official MCP Python SDK (the client Claude
Desktop-style hosts and agent frameworks use): tools, refusals, resources
and their subscriptions, the prompt, on files and on PostgreSQL."""

import asyncio
import json
import os
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, types
from mcp.client.stdio import stdio_client

BIN = os.environ.get("AGENTCTX_BIN", "agentctx")
DATABASE = os.environ.get("AGENTCTX_TEST_DATABASE_URL", "postgres://root@127.0.0.1:5432/test")
STATE = {
    "type": "state",
    "data": {"user": {"name": "Ada"}, "n": 0},
    "schema": {"properties": {"n": {"type": "integer"}}},
}

Session = Callable[[ClientSession], Awaitable[None]]


def seeded(where: str) -> str:
    subprocess.run([BIN, "append", where, json.dumps(STATE)], check=True, capture_output=True)
    return where


def served(context: str, body: Session, *flags: str, updates: list[str] | None = None) -> None:
    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification) and updates is not None:
            updates.append(str(message.params.uri))

    async def main() -> None:
        params = StdioServerParameters(command=BIN, args=["mcp", context, *flags])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                await session.initialize()
                await body(session)

    asyncio.run(main())


@pytest.fixture(params=["files", "postgresql"])
def context(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "files":
        return seeded(str(tmp_path / "memory.jsonl"))
    return seeded(f"{DATABASE}?context=mcp-{uuid.uuid4().hex[:12]}")


def log_length(context: str) -> int:
    out = subprocess.run([BIN, "verify", context], check=True, capture_output=True, text=True)
    return int(json.loads(out.stdout)["messages"])


def test_r42_the_tools_are_listed_with_their_input_schemas(context: str) -> None:
    async def body(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert sorted(tools) == sorted(
            ["view", "resolve", "instances", "apply", "append", "render", "verify", "log"]
        )
        assert tools["view"].input_schema["required"] == ["kind"]
        assert tools["apply"].input_schema["required"] == ["call", "result"]

    served(context, body)


def test_r42_reads_answer_with_structured_content(context: str) -> None:
    async def body(session: ClientSession) -> None:
        view = await session.call_tool("view", {"kind": "state"})
        assert not view.is_error
        assert view.structured_content == {
            "kind": "state",
            "instance": None,
            "view": {"user": {"name": "Ada"}, "n": 0},
        }
        resolved = await session.call_tool("resolve", {"expression": "†state.nick || †state.user.name"})
        assert resolved.structured_content is not None
        assert resolved.structured_content["value"] == "Ada"
        instances = await session.call_tool("instances", {})
        assert instances.structured_content == {"instances": []}
        verified = await session.call_tool("verify", {})
        assert verified.structured_content is not None
        assert verified.structured_content["findings"] == []
        rendered = await session.call_tool("render", {"provider": "openai"})
        assert rendered.structured_content is not None
        assert rendered.structured_content["payload"]["messages"][0]["role"] == "user"

    served(context, body)


def test_r42_a_write_lands_once_and_a_refusal_says_why_and_writes_nothing(context: str) -> None:
    async def body(session: ClientSession) -> None:
        call = {"_tool": "count", "_outputPath": "†state.n"}
        refused = await session.call_tool("apply", {"call": call, "result": "one"})
        assert refused.is_error
        text = refused.content[0]
        assert isinstance(text, types.TextContent)
        assert 'is not of type "integer"' in text.text and "rule `type`" in text.text
        assert log_length(context) == 1
        done = await session.call_tool("apply", {"call": call, "result": 1, "key": "count-1"})
        assert not done.is_error and done.structured_content is not None
        assert done.structured_content["appended"][0]["data"] == {"n": 1}
        again = await session.call_tool("apply", {"call": call, "result": 1, "key": "count-1"})
        assert not again.is_error
        assert log_length(context) == 2
        typo = await session.call_tool(
            "append", {"messages": {"type": "state", "data": {"m": 1}, "_outptPath": "†state.m"}}
        )
        assert typo.is_error
        assert isinstance(typo.content[0], types.TextContent)
        assert 'did you mean "_outputPath"?' in typo.content[0].text
        appended = await session.call_tool("append", {"messages": [{"type": "state", "data": {"m": 1}}]})
        assert appended.structured_content is not None
        assert appended.structured_content["appended"] == 1
        assert appended.structured_content["messages"] == 3

    served(context, body)


def test_r42_bad_arguments_are_refused_before_anything_runs(tmp_path: Path) -> None:
    context = seeded(str(tmp_path / "c.jsonl"))

    async def body(session: ClientSession) -> None:
        unknown = await session.call_tool("view", {"kind": "state", "everything": True})
        assert unknown.is_error
        assert isinstance(unknown.content[0], types.TextContent)
        assert unknown.content[0].text == 'view: unknown argument "everything" (it takes: at, instance, kind)'
        wrong = await session.call_tool("view", {"kind": 7})
        assert wrong.is_error
        missing = await session.call_tool("resolve", {})
        assert missing.is_error
        assert isinstance(missing.content[0], types.TextContent)
        assert missing.content[0].text == "resolve: argument expression is required"
        hint = await session.call_tool("view", {"kind": "stat"})
        assert isinstance(hint.content[0], types.TextContent)
        assert hint.content[0].text == "¶stat: no message of this kind; did you mean ¶state?"
        with pytest.raises(MCPError, match='no tool "\\\\u202enope"'):
            await session.call_tool("\u202enope", {})
        page = await session.call_tool("log", {"limit": 10**9})
        assert page.structured_content is not None
        assert len(page.structured_content["messages"]) == 1

    served(context, body)


def test_r42_read_only_serves_no_writing_tool(tmp_path: Path) -> None:
    context = seeded(str(tmp_path / "ro.jsonl"))

    async def body(session: ClientSession) -> None:
        names = [t.name for t in (await session.list_tools()).tools]
        assert "apply" not in names and "append" not in names
        with pytest.raises(MCPError, match="read-only"):
            await session.call_tool("append", {"messages": {"type": "state", "data": {}}})

    served(context, body, "--read-only")
    assert log_length(context) == 1


def test_r42_a_subscriber_hears_of_another_process_appending(context: str) -> None:
    updates: list[str] = []

    async def body(session: ClientSession) -> None:
        listed = [str(r.uri) for r in (await session.list_resources()).resources]
        assert listed == ["agentctx://log", "agentctx://view/state"]
        read = await session.read_resource("agentctx://view/state")
        first = read.contents[0]
        assert isinstance(first, types.TextResourceContents)
        assert json.loads(first.text) == {"user": {"name": "Ada"}, "n": 0}
        await session.subscribe_resource("agentctx://view/state")
        subprocess.run(
            [BIN, "append", context, json.dumps({"type": "state", "data": {"n": 5}})],
            check=True,
            capture_output=True,
        )
        for _ in range(100):
            if updates:
                break
            await asyncio.sleep(0.05)
        assert updates == ["agentctx://view/state"]
        read = await session.read_resource("agentctx://view/state")
        again = read.contents[0]
        assert isinstance(again, types.TextResourceContents)
        assert json.loads(again.text)["n"] == 5

    served(context, body, updates=updates)


def test_r42_the_context_prompt_is_what_the_model_sees(tmp_path: Path) -> None:
    context = seeded(str(tmp_path / "p.jsonl"))

    async def body(session: ClientSession) -> None:
        prompt = await session.get_prompt("context")
        content = prompt.messages[0].content
        assert isinstance(content, types.TextContent)
        assert "## Data: ¶state" in content.text and '"Ada"' in content.text

    served(context, body)


def test_r42_an_edited_log_is_a_verify_finding(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    context = seeded(str(path))
    subprocess.run([BIN, "append", context, json.dumps({"type": "state", "data": {"n": 2}})], check=True)
    path.write_text(path.read_text().replace('"n":2', '"n":3'))

    async def body(session: ClientSession) -> None:
        verified = await session.call_tool("verify", {})
        assert verified.is_error
        assert isinstance(verified.content[0], types.TextContent)
        assert "finding" in verified.content[0].text

    served(context, body)


def test_r42_a_missing_context_fails_before_serving(tmp_path: Path) -> None:
    out = subprocess.run(
        [BIN, "mcp", "postgres:/nowhere"], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert out.returncode != 0 and out.stdout == ""
    assert "error:" in out.stderr


def test_r42_over_http_it_answers_its_own_address_only(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    from mcp.client.streamable_http import streamable_http_client

    context = seeded(str(tmp_path / "h.jsonl"))
    server = subprocess.Popen(
        [BIN, "mcp", context, "--http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def main() -> None:
            async with streamable_http_client(url) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    view = await session.call_tool("view", {"kind": "state"})
                    assert view.structured_content is not None
                    assert view.structured_content["view"]["user"] == {"name": "Ada"}

        asyncio.run(main())

        def status(headers: dict[str, str]) -> int:
            request = urllib.request.Request(
                url,
                data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                method="POST",
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    **headers,
                },
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return int(response.status)
            except urllib.error.HTTPError as error:
                return int(error.code)

        port = url.split(":")[2].split("/")[0]
        assert status({"Host": f"evil.example:{port}"}) == 403
        assert status({"Origin": "http://evil.example"}) == 403
    finally:
        server.kill()
        server.wait(timeout=10)
