"""agentctx beside LangGraph on long histories (issue 17).

A LangGraph graph whose state is a small dict updated once per step (the
shape of agentctx's W5 workload, tests/workloads.rs: `x` set to the step
number half the time, `status` set, one of 8 keys merged into `meta`, a
small object pushed onto `recent`, which every 32nd step empties), run for
N steps with the SQLite checkpointer, one checkpoint per step; then, each in
a fresh process:

- get-state: a cold `graph.get_state(config)` and a read of `x` (timed inside
  the process: opening the database and the call; imports and compiling
  the graph excluded) — and the whole process;
- step: open the checkpointer, one update (`graph.update_state(config,
  {"x": 7}, as_node="step")`, which persists a new checkpoint), close — in
  the process and whole.

agentctx at the same sizes (the W5 files, their snapshot 32 messages before
the end): `w5 open FILE` (FileStore::open + load_tail + read of †state.x,
timed inside a fresh process) at first sight (the file, its snapshot and
its record put back before it, as a restore would: the lines before the
snapshot are hashed to check it, D110) and warm (the next open, which the
first recorded), `agentctx view FILE state` and `agentctx apply FILE CALL
--result 7 --write` (whole processes; the files are put back before every
apply, so each opens the same tail at first sight).

Usage (from the workspace root, LangGraph in a virtualenv):

    python3 -m venv /tmp/lgvenv
    /tmp/lgvenv/bin/pip install langgraph==1.2.22 langgraph-checkpoint-sqlite
    cargo build --release -p agent-cli && cargo build --release -p agentctx-tests --bin w5
    /tmp/lgvenv/bin/python xtask/langgraph/compare.py bench target/langgraph 10000 100000

`bench DIR N...` builds what is missing under DIR (LangGraph databases take
minutes: about 1-2 ms a step) and prints a table and JSON; ROUNDS (env,
default 15) runs per measurement, medians.
"""

import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from typing import TypedDict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AGENTCTX = os.path.join(ROOT, "target", "release", "agentctx")
W5 = os.path.join(ROOT, "target", "release", "w5")
CALL = '{"_tool":"observe","_outputPath":"†state.x","_outputMethod":"set"}'
THREAD = {"configurable": {"thread_id": "w5"}}
STATUS = ["thinking", "calling", "waiting", "done"]


class State(TypedDict):
    x: int
    status: str
    meta: dict
    recent: list
    step: int
    target: int


def step(state: State) -> dict:
    i = state["step"] + 1
    rng = random.Random(i)
    update = {"step": i}
    if i % 32 == 0:
        update["recent"] = []
        return update
    roll = rng.randrange(100)
    if roll < 50:
        update["x"] = i
    elif roll < 65:
        update["status"] = STATUS[rng.randrange(4)]
    elif roll < 80:
        update["meta"] = {**state["meta"], f"k{rng.randrange(8)}": i}
    else:
        update["recent"] = state["recent"] + [{"step": i, "note": "observed"}]
    return update


def more(state: State) -> str:
    from langgraph.graph import END

    return "step" if state["step"] < state["target"] else END


def graph(checkpointer):
    from langgraph.graph import START, StateGraph

    builder = StateGraph(State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", more)
    return builder.compile(checkpointer=checkpointer)


def saver(path, fast=False):
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    if fast:
        # Only while building the history: not what is measured.
        conn.execute("PRAGMA synchronous=OFF")
    return conn, SqliteSaver(conn)


def build(path, steps):
    """Runs the graph until `steps` steps are checkpointed in `path`."""
    conn, checkpointer = saver(path, fast=True)
    g = graph(checkpointer)
    current = g.get_state(THREAD).values
    first = {"x": 0, "status": "start", "meta": {}, "recent": [], "step": 0}
    start = first if not current else {}
    done = current.get("step", 0) if current else 0
    g.invoke(
        {**start, "target": steps},
        {**THREAD, "recursion_limit": steps - done + 10},
    )
    conn.close()


def opened(path):
    """Opens the checkpointer and compiles the graph in a fresh process;
    returns (conn, graph, ns spent opening the database): imports and
    compiling the graph are not counted (they are the same at any size)."""
    graph(None)  # imports everything first
    started = time.perf_counter_ns()
    conn = sqlite3.connect(path, check_same_thread=False)
    ns = time.perf_counter_ns() - started
    from langgraph.checkpoint.sqlite import SqliteSaver

    return conn, graph(SqliteSaver(conn)), ns


def get_state(path):
    conn, g, ns = opened(path)
    started = time.perf_counter_ns()
    x = g.get_state(THREAD).values["x"]
    ns += time.perf_counter_ns() - started
    conn.close()
    print(json.dumps({"ns": ns, "x": x}))


def update(path):
    conn, g, ns = opened(path)
    started = time.perf_counter_ns()
    g.update_state(THREAD, {"x": 7}, as_node="step")
    conn.close()
    ns += time.perf_counter_ns() - started
    print(json.dumps({"ns": ns}))


def checkpoints(path):
    conn = sqlite3.connect(path)
    (n,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    conn.close()
    return n


def timed(args, before=None):
    if before:
        before()
    started = time.perf_counter_ns()
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    return time.perf_counter_ns() - started, out.stdout


def medians(rounds, runs):
    """Runs each (name, thunk) of `runs` in turn, `rounds` times after one
    warm-up; thunks return (whole ns, inner ns or None)."""
    samples = {name: ([], []) for name, _ in runs}
    for r in range(rounds + 1):
        for name, thunk in runs:
            whole, inner = thunk()
            if r:
                samples[name][0].append(whole)
                if inner is not None:
                    samples[name][1].append(inner)
    return {
        name: {
            "whole_ms": statistics.median(w) / 1e6,
            "inner_ms": statistics.median(i) / 1e6 if i else None,
        }
        for name, (w, i) in samples.items()
    }


class Fixture:
    """A W5 file with its snapshot and head record, put back as a backup
    restore would before each first sight and each apply: the file no
    longer matches its record's identity (its times changed), so the next
    open is a first sight (D110), checked by hashing the lines before the
    snapshot."""

    def __init__(self, path):
        self.path = path
        self.len = os.path.getsize(path)
        d, name = os.path.split(path)
        self.sidecars = {}
        for suffix in ("snapshot", "head"):
            sidecar = os.path.join(d, f".{name}.{suffix}")
            with open(sidecar, "rb") as f:
                self.sidecars[sidecar] = f.read()

    def restore(self):
        os.truncate(self.path, self.len)
        os.utime(self.path)
        for sidecar, data in self.sidecars.items():
            with open(sidecar, "wb") as f:
                f.write(data)


def bench(directory, sizes, rounds):
    os.makedirs(directory, exist_ok=True)
    ours = json.loads(
        subprocess.run(
            [W5, "files", directory, *map(str, sizes)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    built = None
    for n in sorted(sizes):
        db = os.path.join(directory, f"langgraph-{n}.sqlite")
        if not os.path.exists(db):
            if built:
                shutil.copyfile(built, db)
            started = time.time()
            print(f"building {db}", file=sys.stderr, flush=True)
            build(db, n)
            print(f"  {time.time() - started:.0f} s", file=sys.stderr, flush=True)
        built = db
    results = []
    for n, f in zip(sorted(sizes), sorted(ours["files"], key=lambda f: f["messages"])):
        db = os.path.join(directory, f"langgraph-{n}.sqlite")
        fixture = Fixture(f["path"])
        py = [sys.executable, os.path.abspath(__file__)]

        def inner(args, before=None):
            whole, out = timed(args, before)
            return whole, json.loads(out)["ns"]

        runs = [
            ("ours first sight", lambda: inner([W5, "open", fixture.path], fixture.restore)),
            ("ours warm open", lambda: inner([W5, "open", fixture.path])),
            ("ours view", lambda: (timed([AGENTCTX, "view", fixture.path, "state"])[0], None)),
            (
                "ours apply --write",
                lambda: (
                    timed(
                        [AGENTCTX, "apply", fixture.path, CALL, "--result", "7", "--write"],
                        fixture.restore,
                    )[0],
                    None,
                ),
            ),
            ("langgraph get_state", lambda: inner(py + ["get-state", db])),
            ("langgraph update_state", lambda: inner(py + ["step", db])),
        ]
        print(f"measuring {n} steps, {rounds} rounds", file=sys.stderr, flush=True)
        m = medians(rounds, runs)
        fixture.restore()
        results.append(
            {
                "steps": n,
                "checkpoints": checkpoints(db),
                "sqlite_bytes": os.path.getsize(db),
                "jsonl_bytes": f["bytes"],
                "snapshot_bytes": f["snapshot_bytes"],
                "medians": m,
            }
        )
    for r in results:
        print(
            f"\n{r['steps']} steps: JSONL {r['jsonl_bytes']:,} B (snapshot {r['snapshot_bytes']:,} B), "
            f"SQLite {r['sqlite_bytes']:,} B ({r['checkpoints']:,} checkpoints)"
        )
        for name, v in r["medians"].items():
            inner_ms = f"{v['inner_ms']:.3f} ms in process, " if v["inner_ms"] is not None else ""
            print(f"  {name:<24} {inner_ms}{v['whole_ms']:.1f} ms whole process")
    print(json.dumps(results))


def main():
    match sys.argv[1:]:
        case ["build", path, n]:
            build(path, int(n))
        case ["get-state", path]:
            get_state(path)
        case ["step", path]:
            update(path)
        case ["bench", directory, *sizes] if sizes:
            bench(directory, [int(s) for s in sizes], int(os.environ.get("ROUNDS", "15")))
        case _:
            sys.exit(__doc__)


if __name__ == "__main__":
    main()
