"""Writes made once per key, time travel, verify, and the async context."""

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import agentctx


def test_a_keyed_apply_is_written_once_and_returns_what_the_first_wrote(tmp_path: Path) -> None:
    path = tmp_path / "keys.jsonl"
    ctx = agentctx.open(path, create=True)
    call = {"_tool": "charge", "_outputPath": "†state.receipt"}
    first = ctx.apply(call, "r-1", key="charge-7")
    again = ctx.apply(call, "r-2", key="charge-7")
    assert again == first and first[0]["data"] == {"receipt": "r-1"}
    assert len(ctx) == 1
    # Another handle (another process would do the same) sees the key too.
    other = agentctx.open(path)
    assert other.apply(call, "r-3", key="charge-7") == first
    assert len(agentctx.open(path)) == 1 and other.get("†state.receipt") == "r-1"


def test_a_keyed_append_and_apply_all_land_once_in_memory() -> None:
    ctx = agentctx.Context()
    message: dict[str, Any] = {"type": "state", "data": {"n": 1}}
    assert ctx.append([message, message], key="batch-1") == 2
    assert ctx.append([message, message], key="batch-1") == 2
    assert len(ctx) == 2
    pairs: list[tuple[Any, Any]] = [
        ({"_tool": "a", "_outputPath": "†state.a"}, 1),
        ({"_tool": "b", "_outputPath": "†state.b"}, 2),
    ]
    assert len(ctx.apply_all(pairs, key="pair")) == 2
    assert len(ctx.apply_all(pairs, key="pair")) == 2
    assert len(ctx) == 4


def test_a_key_agentctx_cannot_keep_is_a_value_error() -> None:
    ctx = agentctx.Context()
    with pytest.raises(ValueError, match="key: "):
        ctx.append({"type": "state", "data": {}}, key="")
    with pytest.raises(ValueError, match="key: "):
        ctx.append({"type": "state", "data": {}}, key="k" * 129)
    assert len(ctx) == 0


def test_at_is_the_context_after_its_first_k_messages_and_a_copy() -> None:
    ctx = agentctx.Context()
    for step in range(3):
        ctx.append({"type": "state", "data": {"step": step}})
    past = ctx.at(2)
    assert len(past) == 2 and past.get("†state.step") == 1
    past.append({"type": "state", "data": {"step": 9}})
    assert past.get("†state.step") == 9
    assert ctx.get("†state.step") == 2 and len(ctx) == 3
    assert len(ctx.at(10)) == 3 and len(ctx.at(0)) == 0


def test_verify_reports_a_clean_log_and_a_wrong_expected_head(tmp_path: Path) -> None:
    path = tmp_path / "v.jsonl"
    ctx = agentctx.open(path, create=True)
    ctx.append({"type": "state", "data": {"n": 1}})
    report = ctx.verify()
    assert report["findings"] == [] and report["messages"] == 1
    assert report["head"] == ctx.head
    assert ctx.verify(expect=ctx.head)["findings"] == []
    wrong = "0" * 64
    with pytest.raises(agentctx.TamperedError, match="1 finding") as raised:
        ctx.verify(expect=wrong)
    assert raised.value.report["findings"][0]["expected"] == wrong
    with pytest.raises(ValueError, match="expect: "):
        ctx.verify(expect="not a digest")


def test_verify_finds_a_line_edited_behind_the_store(tmp_path: Path) -> None:
    path = tmp_path / "edited.jsonl"
    ctx = agentctx.open(path, create=True)
    ctx.append({"type": "state", "data": {"amount": 10}})
    ctx.append({"type": "state", "data": {"note": "ok"}})
    path.write_text(path.read_text().replace('"amount":10', '"amount":99'))
    with pytest.raises(agentctx.TamperedError) as raised:
        ctx.verify()
    assert raised.value.report["findings"], "the edit is a finding"


def test_run_with_parallel_runs_a_waves_activities_at_once() -> None:
    ctx = agentctx.Context()
    ctx.append({"type": "state", "data": {}})
    # Four calls meet at a barrier: only four threads at once get past it.
    barrier = threading.Barrier(4, timeout=10)

    def meet(call: dict[str, Any]) -> int:
        barrier.wait()
        return int(call["n"])

    plan: list[Any] = [{"_tool": "meet", "n": n, "_outputPath": f"†state.n{n}"} for n in range(4)]
    report = agentctx.run(ctx, plan, {"meet": meet}, parallel=4)
    assert [c["status"] for c in report["calls"]] == ["done"] * 4
    assert ctx.view("state") == {"n0": 0, "n1": 1, "n2": 2, "n3": 3}
    with pytest.raises(ValueError, match="parallel must be at least 1"):
        agentctx.run(ctx, plan, {"meet": meet}, parallel=0)


def test_run_with_a_key_writes_nothing_twice(tmp_path: Path) -> None:
    ctx = agentctx.open(tmp_path / "run.jsonl", create=True)
    ctx.append({"type": "state", "data": {"log": []}})
    plan: list[Any] = [{"_tool": "note", "_outputPath": "†state.log", "_outputMethod": "push"}]
    agentctx.run(ctx, plan, {"note": lambda call: "x"}, key="job-1")
    report = agentctx.run(ctx, plan, {"note": lambda call: "y"}, key="job-1")
    assert report["calls"][0]["status"] == "done"
    assert ctx.view("state") == {"log": ["x"]}


def test_the_async_context_awaits_writes_and_reads_at_once(tmp_path: Path) -> None:
    async def main() -> None:
        ctx = await agentctx.open_async(tmp_path / "a.jsonl", create=True)
        await ctx.append({"type": "state", "data": {"n": 0}})
        # Writes from many tasks at once: each lands, none is lost.
        await asyncio.gather(
            *(
                ctx.apply({"_tool": "t", "_outputPath": "†state.log", "_outputMethod": "push"}, i)
                for i in range(20)
            )
        )
        assert sorted(ctx.get("†state.log")) == list(range(20))
        assert len(ctx) == 21 and len(await ctx.messages(0, 5)) == 5
        assert (await ctx.verify())["messages"] == 21
        assert len(await ctx.at(1)) == 1
        report = await ctx.run(
            [{"_tool": "double", "x": 2, "_outputPath": "†state.d"}],
            {"double": lambda call: call["x"] * 2},
        )
        assert report["calls"][0]["status"] == "done" and ctx.get("†state.d") == 4
        rendered = await ctx.render("plain")
        assert json.dumps(rendered)

    asyncio.run(main())
