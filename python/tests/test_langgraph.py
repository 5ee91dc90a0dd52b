"""The LangGraph checkpointer: LangGraph's own conformance suite on files
and on PostgreSQL, and real graphs (interrupts, history, replay, updates,
subgraphs) run through it."""

import asyncio
import operator
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

import agentctx
from agentctx.langgraph import AgentctxSaver

DATABASE = os.environ.get("AGENTCTX_TEST_DATABASE_URL", "postgres://root@127.0.0.1:5432/test")
CAPABILITIES = {
    "put",
    "put_writes",
    "get_tuple",
    "list",
    "delete_thread",
    "delete_for_runs",
    "copy_thread",
    "prune",
}


def pg_where() -> str:
    return f"{DATABASE}?context=lg-{uuid.uuid4().hex[:12]}"


def conformance(make: Any) -> None:
    @checkpointer_test(name="AgentctxSaver")
    async def saver() -> AsyncIterator[AgentctxSaver]:
        yield make()

    report = asyncio.run(validate(saver))
    results = report.to_dict()["results"]
    failures = {cap: r["failures"] for cap, r in results.items() if r["failures"]}
    assert failures == {}
    assert {cap for cap, r in results.items() if r["detected"]} == CAPABILITIES
    assert report.passed_all_base() and report.passed_all()
    assert sum(r["tests_passed"] for r in results.values()) == 81


def test_the_conformance_suite_passes_on_files() -> None:
    conformance(lambda: AgentctxSaver(tempfile.mkdtemp(prefix="agentctx-lg-")))


def test_the_conformance_suite_passes_on_postgresql() -> None:
    conformance(lambda: AgentctxSaver(pg_where()))


def test_a_saver_over_postgresql_runs_many_threads_on_a_pool_of_one_connection() -> None:
    # A thread's context that kept the connection would leave the next
    # thread waiting for it, then failing.
    saver = AgentctxSaver(pg_where(), pool_size=1)
    graph = counter_graph(saver)
    for i in range(20):
        config: Any = {"configurable": {"thread_id": f"t-{i}"}}
        assert graph.invoke({"n": i, "log": []}, config)["n"] == (i + 1) * 2
    assert (saver._pool.connections, saver._pool.idle) == (1, 1)
    assert len(list(saver.list(None))) == 20 * 4


class Counter(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


def counter_graph(saver: AgentctxSaver) -> Any:
    builder = StateGraph(Counter)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1, "log": [f"inc {s['n']}"]})
    builder.add_node("double", lambda s: {"n": s["n"] * 2, "log": ["double"]})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", "double")
    builder.add_edge("double", END)
    return builder.compile(checkpointer=saver)


@pytest.fixture(params=["files", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path) if request.param == "files" else pg_where()


@pytest.fixture
def saver(where: str) -> AgentctxSaver:
    return AgentctxSaver(where)


def test_a_graph_keeps_history_replays_and_updates_through_the_saver(
    saver: AgentctxSaver,
) -> None:
    graph = counter_graph(saver)
    config: Any = {"configurable": {"thread_id": "t-1"}}
    assert graph.invoke({"n": 1, "log": []}, config) == {"n": 4, "log": ["inc 1", "double"]}
    history = list(graph.get_state_history(config))
    assert [h.values.get("n") for h in history] == [4, 2, 1, None]
    # Replay from the checkpoint after "inc": only "double" runs again.
    after_inc = history[1]
    assert after_inc.next == ("double",)
    assert graph.invoke(None, after_inc.config)["n"] == 4
    # update_state writes a new checkpoint, as the node "inc" would have.
    graph.update_state(config, {"n": 100}, as_node="inc")
    assert graph.get_state(config).values["n"] == 100
    assert graph.get_state(config).next == ("double",)
    assert graph.invoke(None, config)["n"] == 200
    # The thread is an agentctx context: it chains, and its values show as JSON.
    ctx = saver.context("t-1")
    assert ctx.verify()["findings"] == []
    view = ctx.view("langgraph")
    assert {"checkpoints", "blobs", "latest"} <= set(view)
    assert ["value", 200] in [
        blob for versions in view["blobs"][""].values() for blob in versions.values()
    ]


class Approval(TypedDict):
    request: str
    answer: str


def test_an_interrupted_graph_resumes_with_a_command(where: str) -> None:
    saver = AgentctxSaver(where)
    def ask(state: Approval) -> dict[str, str]:
        return {"answer": str(interrupt({"question": f"approve {state['request']}?"}))}

    builder = StateGraph(Approval)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "approval"}}
    paused = graph.invoke({"request": "refund", "answer": ""}, config)
    assert paused["__interrupt__"][0].value == {"question": "approve refund?"}
    assert graph.get_state(config).next == ("ask",)
    # A second saver (another process would do the same) resumes the thread.
    other = AgentctxSaver(where)
    resumed = builder.compile(checkpointer=other).invoke(Command(resume="yes"), config)
    assert resumed == {"request": "refund", "answer": "yes"}


class Outer(TypedDict):
    text: str


def test_a_subgraph_checkpoints_in_its_own_namespace(saver: AgentctxSaver) -> None:
    inner = StateGraph(Outer)
    inner.add_node("shout", lambda s: {"text": s["text"].upper()})
    inner.add_edge(START, "shout")
    outer = StateGraph(Outer)
    outer.add_node("sub", inner.compile())
    outer.add_node("mark", lambda s: {"text": s["text"] + "!"})
    outer.add_edge(START, "sub")
    outer.add_edge("sub", "mark")
    graph = outer.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "nested"}}
    assert graph.invoke({"text": "hi"}, config) == {"text": "HI!"}
    assert graph.get_state(config).values == {"text": "HI!"}
    root = list(saver.list({"configurable": {"thread_id": "nested", "checkpoint_ns": ""}}))
    every = list(saver.list({"configurable": {"thread_id": "nested"}}))
    assert len(root) >= 3 and len(every) >= len(root)


def test_an_async_graph_runs_through_the_async_methods(saver: AgentctxSaver) -> None:
    graph = counter_graph(saver)
    config: Any = {"configurable": {"thread_id": "async"}}

    async def main() -> None:
        assert (await graph.ainvoke({"n": 5, "log": []}, config))["n"] == 12
        states = [s async for s in graph.aget_state_history(config)]
        assert [s.values.get("n") for s in states] == [12, 6, 5, None]

    asyncio.run(main())


def test_deleting_a_thread_erases_it_and_keeps_its_log(saver: AgentctxSaver) -> None:
    graph = counter_graph(saver)
    config: Any = {"configurable": {"thread_id": "gone"}}
    graph.invoke({"n": 1, "log": []}, config)
    ctx = saver.context("gone")
    before = len(ctx)
    saver.delete_thread("gone")
    assert saver.get_tuple(config) is None
    assert list(saver.list(config)) == []
    assert len(ctx) == before + 1 and ctx.messages(before)[0]["_outputMethod"] == "erase"
    # The thread starts again from nothing.
    assert graph.invoke({"n": 3, "log": []}, config)["n"] == 8


WRITER = """
import sys
from agentctx.langgraph import AgentctxSaver
from langgraph.checkpoint.base import empty_checkpoint, create_checkpoint
saver = AgentctxSaver(sys.argv[1])
config = {"configurable": {"thread_id": "shared", "checkpoint_ns": ""}}
for i in range(int(sys.argv[3])):
    cp = create_checkpoint(empty_checkpoint(), None, i)
    put = saver.put(config, cp, {"source": "loop", "step": i, "writer": sys.argv[2]}, {})
    saver.put_writes(put, [("log", f"{sys.argv[2]}-{i}")], task_id=f"{sys.argv[2]}-{i}")
"""


def test_processes_writing_one_thread_lose_no_update(tmp_path: Path) -> None:
    for where in (str(tmp_path), pg_where()):
        writers = [
            subprocess.Popen([sys.executable, "-c", WRITER, where, f"w{w}", "15"])
            for w in range(3)
        ]
        assert [p.wait(timeout=120) for p in writers] == [0, 0, 0]
        saver = AgentctxSaver(where)
        listed = list(saver.list({"configurable": {"thread_id": "shared"}}))
        assert len(listed) == 45
        written = sorted(w[2] for t in listed for w in t.pending_writes or [])
        assert written == sorted(f"w{w}-{i}" for w in range(3) for i in range(15))
        assert saver.context("shared").verify()["findings"] == []


def test_a_value_plain_json_cannot_hold_goes_through_the_serializer(tmp_path: Path) -> None:
    saver = AgentctxSaver(tmp_path)
    builder = StateGraph(Outer)
    builder.add_node("t", lambda s: {"text": s["text"]})
    builder.add_edge(START, "t")
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "odd"}}
    graph.invoke({"text": "ok"}, config)
    graph.update_state(config, {"text": "x"}, as_node="t")
    # A tuple and a set are not plain JSON: kept through LangGraph's serde.
    saver.put_writes(
        saver.get_tuple(config).config,  # type: ignore[union-attr]
        [("text", {1, 2}), ("other", (1, "a"))],
        task_id="odd-task",
    )
    writes = saver.get_tuple(config).pending_writes  # type: ignore[union-attr]
    assert writes == [("odd-task", "text", {1, 2}), ("odd-task", "other", [1, "a"])]
    stored = saver.context("odd").view("langgraph")["writes"][""]
    kinds = {
        r["channel"]: r["value"][0]
        for by_id in stored.values()
        for r in by_id.values()
        if r["task"] == "odd-task"
    }
    assert kinds == {"text": "serde", "other": "value"}


def test_an_unknown_prune_strategy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown prune strategy 'oldest'"):
        AgentctxSaver(tmp_path).prune(["t"], strategy="oldest")
    assert isinstance(agentctx.Context(), agentctx.Context)
