"""Plans run with Python callables as activities, under the rules of
``agentctx run``."""

import asyncio
from typing import Any

import agentctx


def test_a_plan_runs_in_dependency_order_with_python_activities() -> None:
    ctx = agentctx.Context()
    ctx.append({"type": "input", "data": {"user": 7}})
    seen: list[dict[str, Any]] = []

    def fetch(call: dict[str, Any]) -> dict[str, Any]:
        seen.append(call)
        return {"name": f"user {call['id']}"}

    def greet(call: dict[str, Any]) -> str:
        seen.append(call)
        return f"Hello, {call['name']}!"

    # Listed last first: the plan orders them by what each reads.
    report = agentctx.run(
        ctx,
        [
            {"_tool": "greet", "name": "†state.profile.name", "_outputPath": "†state.greeting"},
            {"_tool": "fetch", "id": "†input.user", "_outputPath": "†state.profile"},
        ],
        {"fetch": fetch, "greet": greet},
    )
    assert [c["status"] for c in report["calls"]] == ["done", "done"]
    assert [c["wave"] for c in report["calls"]] == [1, 0]
    # Each activity got its call with the references resolved.
    assert seen[0]["id"] == 7 and seen[1]["name"] == "user 7"
    assert ctx.get("†state.greeting") == "Hello, user 7!"


def test_an_exception_is_the_calls_failure_and_what_reads_it_waits() -> None:
    ctx = agentctx.Context()

    def broken(call: dict[str, Any]) -> None:
        raise ValueError("the service said no")

    report = agentctx.run(
        ctx,
        [
            {"_tool": "broken", "_outputPath": "†state.a"},
            {"_tool": "after", "x": "†state.a", "_outputPath": "†state.b"},
        ],
        {"broken": broken, "after": lambda call: 1},
    )
    first, second = report["calls"]
    assert first["status"] == "failed"
    assert first["failure"] == {"error": "ValueError: the service said no"}
    assert second["status"] != "done"
    assert len(ctx) == 0


def test_an_async_activity_is_awaited() -> None:
    ctx = agentctx.Context()

    async def later(call: dict[str, Any]) -> int:
        await asyncio.sleep(0.01)
        return int(call["n"]) * 2

    plan: tuple[dict[str, Any], ...] = ({"_tool": "later", "n": 21, "_outputPath": "†state.x"},)
    report = agentctx.run(ctx, plan, {"later": later})
    assert report["calls"][0]["status"] == "done"
    assert ctx.get("†state.x") == 42


def test_a_plan_that_does_not_build_is_an_error() -> None:
    ctx = agentctx.Context()
    try:
        agentctx.run(
            ctx,
            [
                {"_tool": "a", "x": "†state.b", "_outputPath": "†state.a"},
                {"_tool": "b", "x": "†state.a", "_outputPath": "†state.b"},
            ],
            {},
        )
    except agentctx.Error as error:
        assert "cycle" in str(error)
    else:
        raise AssertionError("a cycle must be refused")
