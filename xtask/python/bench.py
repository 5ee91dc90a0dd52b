"""The Python package's rows of `cargo xtask bench` (`bench python`).

Usage: bench.py HELPER W5 DATABASE_URL DIR — HELPER is the release
`py-baseline` (tests/bin/py_baseline.rs), W5 the release `w5`, DIR a
scratch directory. Prints one JSON array of rows, in the shape of the
suite's (`ours_ns`, `baseline_ns`, per-round `ratios`), each side run in
turns with the other, round after round, the order turning every round:

- PY-apply-vs-facade: a durable `ctx.apply(call, result)` from Python
  against the same `StoredContext::apply` through the Rust facade, on a
  file context each (`PY_APPLY_ROUNDS`, default 15, of 50 applies each);
- PY-open-view-vs-facade: `agentctx.open(FILE).view("state")` on a
  100,000-message W5 file (its snapshot beside it) against the facade's
  `StoredContext::open_existing` and the view (`PY_OPEN_ROUNDS`, 15, of 5);
- LG-step-vs-sqlite and LG-step-vs-postgres: one step of the same graph
  (the W5 state: a small dict updated once a step), checkpointed by
  `AgentctxSaver` against LangGraph's `SqliteSaver` (a file, its default
  durable settings) and `PostgresSaver` (the same server), chunks of
  steps in turns until each thread holds `LG_STEPS` (default 1,000)
  steps; agentctx on files against SQLite, on PostgreSQL against
  PostgreSQL; and LG-bytes-vs-sqlite / LG-bytes-vs-postgres: what each
  holds after those steps (files and their sidecars; the tables' total
  relation size, in schemas of their own).
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any, Callable

import agentctx

ROUND_SIZE_APPLY = 50
ROUND_SIZE_OPEN = 5


def knob(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


class Helper:
    """The Rust side, one process answering one command a line."""

    def __init__(self, path: str) -> None:
        self.process = subprocess.Popen(
            [path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ns(self, command: str) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if not answer.isdigit():
            raise SystemExit(f"py-baseline {command!r}: {answer or 'no answer'}")
        return int(answer)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def turns(rounds: int, ours: Callable[[], int], baseline: Callable[[], int]) -> tuple[list[int], list[int]]:
    mine, theirs = [], []
    for r in range(rounds + 1):
        order = [(ours, mine), (baseline, theirs)]
        if r % 2:
            order.reverse()
        for run, into in order:
            ns = run()
            if r > 0:  # the first round warms up
                into.append(ns)
    return mine, theirs


def row(workload: str, mine: list[int], theirs: list[int], per: int, baseline: str, **more: Any) -> dict[str, Any]:
    return {
        "workload": workload,
        "ours_ns": statistics.median(mine) / per,
        "baseline_ns": statistics.median(theirs) / per,
        "ratio": statistics.median(mine) / statistics.median(theirs),
        "ratios": [a / b for a, b in zip(mine, theirs)],
        "baseline": baseline,
        "rounds": len(mine),
        **more,
    }


def apply_rows(helper: Helper, scratch: str) -> dict[str, Any]:
    ours_path = os.path.join(scratch, "py-apply.jsonl")
    theirs_path = os.path.join(scratch, "rs-apply.jsonl")
    ctx = agentctx.open(ours_path, create=True)
    call = {"_tool": "t", "_outputPath": "†state.n"}
    count = [0]

    def ours() -> int:
        started = time.perf_counter_ns()
        for _ in range(ROUND_SIZE_APPLY):
            ctx.apply(call, count[0])
            count[0] += 1
        return time.perf_counter_ns() - started

    def theirs() -> int:
        return helper.ns(f"apply {theirs_path} {ROUND_SIZE_APPLY}")

    mine, other = turns(knob("PY_APPLY_ROUNDS", 15), ours, theirs)
    return row(
        "PY-apply-vs-facade",
        mine,
        other,
        ROUND_SIZE_APPLY,
        "StoredContext::apply of the same call through the Rust facade (a process of its own), interleaved",
    )


def open_rows(helper: Helper, w5: str, scratch: str) -> dict[str, Any]:
    made = json.loads(subprocess.run([w5, "files", scratch, "100000"], check=True,
                                     capture_output=True, text=True).stdout)
    path = made["files"][0]["path"]

    def ours() -> int:
        started = time.perf_counter_ns()
        for _ in range(ROUND_SIZE_OPEN):
            agentctx.open(path).view("state")
        return time.perf_counter_ns() - started

    def theirs() -> int:
        return helper.ns(f"open {path} {ROUND_SIZE_OPEN}")

    mine, other = turns(knob("PY_OPEN_ROUNDS", 15), ours, theirs)
    return row(
        "PY-open-view-vs-facade",
        mine,
        other,
        ROUND_SIZE_OPEN,
        "StoredContext::open_existing and the view of state through the Rust facade, 100,000-message W5 file",
    )


# ---- LangGraph: the W5 state, one update a step (the graph of
# xtask/langgraph/compare.py, which set agentctx beside SqliteSaver before)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "langgraph"))
from compare import graph  # noqa: E402


class Runner:
    """A graph on one thread, run a chunk of steps at a time."""

    def __init__(self, checkpointer: Any) -> None:
        self.graph = graph(checkpointer)
        self.config: Any = {"configurable": {"thread_id": "bench"}}
        self.done = 0

    def chunk(self, steps: int) -> int:
        first = {"x": 0, "status": "start", "meta": {}, "recent": [], "step": 0}
        start = first if self.done == 0 else {}
        started = time.perf_counter_ns()
        self.graph.invoke(
            {**start, "target": self.done + steps},
            {**self.config, "recursion_limit": steps + 10},
        )
        ns = time.perf_counter_ns() - started
        self.done += steps
        return ns


def directory_bytes(path: str) -> int:
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(path)
        for name in names
    )


def schema_bytes(database: str, schema: str) -> int:
    import psycopg

    with psycopg.connect(database, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r'",
            (schema,),
        ).fetchone()
        return int(row[0]) if row else 0


def with_search_path(database: str, schema: str) -> str:
    joiner = "&" if "?" in database else "?"
    return f"{database}{joiner}options=-c%20search_path%3D{schema}"


def langgraph_rows(database: str, scratch: str) -> list[dict[str, Any]]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    from agentctx.langgraph import AgentctxSaver

    steps = knob("LG_STEPS", 1000)
    chunk = max(1, steps // 20)
    rows = []

    files = os.path.join(scratch, "lg-agentctx")
    sqlite_path = os.path.join(scratch, "lg.sqlite")
    conn = sqlite3.connect(sqlite_path, check_same_thread=False)
    ours, theirs = Runner(AgentctxSaver(files)), Runner(SqliteSaver(conn))
    mine, other = turns(steps // chunk - 1, lambda: ours.chunk(chunk), lambda: theirs.chunk(chunk))
    conn.close()
    rows.append(row("LG-step-vs-sqlite", mine, other, chunk,
                    f"SqliteSaver (langgraph-checkpoint-sqlite), the same graph, {steps} steps, chunks of {chunk}"))
    ours_bytes = directory_bytes(files)
    sqlite_bytes = sum(os.path.getsize(p) for p in (sqlite_path, sqlite_path + "-wal") if os.path.exists(p))
    rows.append({"workload": "LG-bytes-vs-sqlite", "ratio": ours_bytes / sqlite_bytes,
                 "ours_bytes": ours_bytes, "baseline_bytes": sqlite_bytes,
                 "baseline": f"the SQLite file after {steps} steps"})

    tag = uuid.uuid4().hex[:10]
    schemas = (f"lg_bench_agentctx_{tag}", f"lg_bench_postgres_{tag}")
    with psycopg.connect(database, autocommit=True) as admin:
        for schema in schemas:
            admin.execute(f"CREATE SCHEMA {schema}")
    try:
        ours_url = with_search_path(database, schemas[0])
        ours_url += "&context=bench"
        with PostgresSaver.from_conn_string(with_search_path(database, schemas[1])) as pg:
            pg.setup()
            ours, theirs = Runner(AgentctxSaver(ours_url)), Runner(pg)
            mine, other = turns(steps // chunk - 1, lambda: ours.chunk(chunk), lambda: theirs.chunk(chunk))
        rows.append(row("LG-step-vs-postgres", mine, other, chunk,
                        f"PostgresSaver (langgraph-checkpoint-postgres), the same server, {steps} steps, chunks of {chunk}"))
        ours_bytes, pg_bytes = schema_bytes(database, schemas[0]), schema_bytes(database, schemas[1])
        rows.append({"workload": "LG-bytes-vs-postgres", "ratio": ours_bytes / pg_bytes,
                     "ours_bytes": ours_bytes, "baseline_bytes": pg_bytes,
                     "baseline": f"PostgresSaver's tables after {steps} steps (total relation size)"})
    finally:
        with psycopg.connect(database, autocommit=True) as admin:
            for schema in schemas:
                admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    return rows


def main() -> None:
    helper_path, w5, database, scratch = sys.argv[1:5]
    os.makedirs(scratch, exist_ok=True)
    helper = Helper(helper_path)
    rows = []
    try:
        print("bench.py: PY-apply-vs-facade", file=sys.stderr)
        rows.append(apply_rows(helper, scratch))
        print("bench.py: PY-open-view-vs-facade", file=sys.stderr)
        rows.append(open_rows(helper, w5, scratch))
    finally:
        helper.close()
    print("bench.py: LangGraph beside SqliteSaver and PostgresSaver", file=sys.stderr)
    rows.extend(langgraph_rows(database, scratch))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
