"""The Python package against the real stores: memory and JSONL files."""

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import agentctx


def test_a_context_in_memory_folds_what_is_appended() -> None:
    ctx = agentctx.Context()
    assert len(ctx) == 0
    assert ctx.append({"type": "state", "data": {"user": {"name": "Ada"}, "n": 1}}) == 1
    assert ctx.append([{"type": "state", "data": {"n": 2}}, {"type": "text", "text": "hi"}]) == 2
    assert len(ctx) == 3
    assert ctx.view("state") == {"user": {"name": "Ada"}, "n": 2}
    assert ctx.get("†state.user.name") == "Ada"
    assert ctx.get("†state.nick || †state.user.name") == "Ada"


def test_objects_keep_their_order_and_integers_their_size() -> None:
    ctx = agentctx.Context()
    big = 2**80 + 1
    ctx.append({"type": "state", "data": {"z": 1, "a": 2, "big": big, "neg": -(2**70), "f": 0.5}})
    view = ctx.view("state")
    assert list(view) == ["z", "a", "big", "neg", "f"]
    assert view["big"] == big and isinstance(view["big"], int)
    assert view["neg"] == -(2**70)
    assert view["f"] == 0.5


def test_absent_is_not_none() -> None:
    ctx = agentctx.Context()
    ctx.append({"type": "state", "data": {"nothing": None}})
    # A null is held (the view has it); an expression reads it as not
    # present (spec R17), and says so rather than returning None.
    assert ctx.view("state") == {"nothing": None}
    with pytest.raises(agentctx.NotFoundError, match="not present: †state.nothing"):
        ctx.get("†state.nothing")
    with pytest.raises(agentctx.NotFoundError, match="not present: †state.missing"):
        ctx.get("†state.missing")
    with pytest.raises(agentctx.NotFoundError, match="¶input: no message of this kind"):
        ctx.view("input")


def test_a_refused_write_raises_and_writes_nothing() -> None:
    ctx = agentctx.Context()
    ctx.append(
        {"type": "state", "data": {"n": 1}, "schema": {"properties": {"n": {"type": "integer"}}}}
    )
    head = ctx.head
    with pytest.raises(agentctx.RefusedError) as refused:
        ctx.append([{"type": "state", "data": {"m": 1}}, {"type": "state", "data": {"n": "one"}}])
    assert isinstance(refused.value, agentctx.Error)
    assert "n" in str(refused.value)
    assert len(ctx) == 1 and ctx.head == head
    assert ctx.view("state") == {"n": 1}


def test_apply_writes_a_result_where_the_call_says() -> None:
    ctx = agentctx.Context()
    ctx.append({"type": "state", "data": {"log": []}})
    written = ctx.apply({"_tool": "note", "_outputPath": "†state.log", "_outputMethod": "push"}, "a")
    assert written[0]["data"] == {"log": "a"} and written[0]["_outputMethod"] == "push"
    assert ctx.view("state") == {"log": ["a"]}


def test_instances_are_listed_in_order() -> None:
    ctx = agentctx.Context()
    ctx.append({"type": "state", "data": {"g": 1}})
    ctx.append({"type": "state", "data": {"v": 1}, "_instance": "②"})
    ctx.append({"type": "state", "data": {"v": 2}, "_instance": "①"})
    assert ctx.instances() == ["②", "①"]
    assert ctx.view("state", "①") == {"g": 1, "v": 2}


def test_a_file_context_is_durable_and_shared(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with pytest.raises(agentctx.NotFoundError):
        agentctx.open(path)
    first = agentctx.open(path, create=True)
    first.append({"type": "state", "data": {"n": 1}})
    second = agentctx.open(str(path))
    assert second.view("state") == {"n": 1}
    assert second.head == first.head
    lines = path.read_text().splitlines()
    # Stored in the normal form (spec R1).
    assert [json.loads(line) for line in lines] == [{"type": "data", "kind": "state", "data": {"n": 1}}]


def test_a_file_changed_by_another_program_is_read_whole_with_its_new_head(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    ctx = agentctx.open(path, create=True)
    ctx.append([{"type": "state", "data": {"n": i}} for i in range(3)])
    head = ctx.head
    del ctx
    path.write_text(path.read_text().replace('"n":2', '"n":7'))
    # The file no longer matches the record kept beside it: it is read
    # whole, folded as it now is, its chain computed again (R34e).
    again = agentctx.open(path)
    assert again.view("state") == {"n": 7}
    assert len(again) == 3 and again.head != head


def test_values_that_are_not_json_are_refused_clearly() -> None:
    ctx = agentctx.Context()
    with pytest.raises(TypeError, match="set is not JSON"):
        ctx.append({"type": "state", "data": {"s": {1, 2}}})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="keys are str, not int"):
        ctx.append({"type": "state", "data": {1: "one"}})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="no NaN or infinity"):
        ctx.append({"type": "state", "data": {"x": float("nan")}})
    deep: object = 1
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ValueError, match="deeper than 128 levels"):
        ctx.append({"type": "state", "data": {"d": deep}})  # type: ignore[dict-item]
    assert len(ctx) == 0


def test_render_gives_the_providers_payload() -> None:
    ctx = agentctx.Context()
    ctx.append({"type": "text", "text": "Hello"})
    assert ctx.render("openai")["messages"][0]["content"] == "Hello"
    with pytest.raises(ValueError, match="unknown mode"):
        ctx.render("openai", "sideways")  # type: ignore[arg-type]


def test_threads_appending_to_one_context_lose_nothing() -> None:
    ctx = agentctx.Context()
    ctx.append({"type": "state", "data": {"log": []}})

    def push(worker: int) -> None:
        for i in range(50):
            ctx.apply({"_tool": "t", "_outputPath": "†state.log", "_outputMethod": "push"}, [worker, i])

    threads = [threading.Thread(target=push, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log = ctx.view("state")["log"]
    assert sorted(map(tuple, log)) == [(w, i) for w in range(4) for i in range(50)]


def test_apply_all_writes_every_result_or_none() -> None:
    ctx = agentctx.Context()
    ctx.append({"type": "state", "data": {"a": 0}})
    a = {"_tool": "a", "_outputPath": "†state.a"}
    b = {"_tool": "b", "_outputPath": "†state.b"}
    written = ctx.apply_all([(a, 1), (b, 2)])
    assert len(written) == 2 and ctx.view("state") == {"a": 1, "b": 2}
    deep = {"_tool": "d", "_outputPath": "†state.a.deep"}
    with pytest.raises(agentctx.RefusedError, match="call 1 of the batch"):
        ctx.apply_all([(a, 3), (deep, 4)])
    assert ctx.view("state") == {"a": 1, "b": 2} and len(ctx) == 3
    with pytest.raises(ValueError, match=r"results\[0\] is not a \(call, result\) pair"):
        ctx.apply_all([a])  # type: ignore[list-item]


def test_messages_are_given_in_their_normal_form_and_range() -> None:
    ctx = agentctx.Context()
    ctx.append([{"type": "state", "data": {"n": i}} for i in range(4)])
    assert ctx.messages() == [{"type": "data", "kind": "state", "data": {"n": i}} for i in range(4)]
    assert [m["data"]["n"] for m in ctx.messages(1, 3)] == [1, 2]
    assert ctx.messages(3, 99) == [{"type": "data", "kind": "state", "data": {"n": 3}}]
    assert ctx.messages(5) == []


def test_resolve_replaces_references_and_names_what_is_missing() -> None:
    ctx = agentctx.Context()
    ctx.append({"type": "input", "data": {"city": "Austin", "days": 3}})
    call: dict[str, Any] = {"_tool": "weather", "city": "†input.city", "span": {"days": "†input.days"},
            "_outputPath": "†state.forecast"}
    assert ctx.resolve(call) == {"_tool": "weather", "city": "Austin", "span": {"days": 3},
                                 "_outputPath": "†state.forecast"}
    with pytest.raises(agentctx.NotFoundError, match="not present: †input.country, †state.x"):
        ctx.resolve({"_tool": "t", "a": "†input.country", "b": "†state.x || †input.country"})


def _database() -> str:
    import os

    return os.environ.get("AGENTCTX_TEST_DATABASE_URL", "postgres://root@127.0.0.1:5432/test")


def test_a_postgresql_context_is_shared_by_handles() -> None:
    import uuid

    base = _database()
    url = f"{base}{'&' if '?' in base else '?'}context=py-{uuid.uuid4().hex}"
    with pytest.raises(agentctx.NotFoundError):
        agentctx.open(url)
    first = agentctx.open(url, create=True)
    first.append({"type": "state", "data": {"n": 1}})
    second = agentctx.open(url)
    assert second.view("state") == {"n": 1} and second.head == first.head
    second.apply({"_tool": "t", "_outputPath": "†state.m"}, 2)
    third = agentctx.open(url)
    assert third.view("state") == {"n": 1, "m": 2} and len(third) == 2


def test_contexts_of_a_pool_of_one_take_turns_on_its_connection() -> None:
    import threading
    import uuid

    base = _database()
    # One connection, a short wait: a context that kept the connection
    # after its call would make the others' calls fail.
    pool = agentctx.Pool(f"{base}{'&' if '?' in base else '?'}context=ignored", size=1, wait=5)
    assert (pool.size, pool.connections, pool.idle) == (1, 1, 1)
    assert repr(pool).startswith("<agentctx.Pool postgres://") and "ignored" not in repr(pool)
    names = [f"py-pool-{uuid.uuid4().hex}-{i}" for i in range(12)]
    with pytest.raises(agentctx.NotFoundError):
        pool.open(names[0])
    contexts = [pool.open(name, create=True) for name in names]

    def write(ctx: agentctx.Context, i: int) -> None:
        for n in range(5):
            ctx.apply({"_tool": "t", "_outputPath": "†state.log", "_outputMethod": "push"}, n)

    threads = [threading.Thread(target=write, args=(c, i)) for i, c in enumerate(contexts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (pool.connections, pool.idle) == (1, 1)
    # What landed is there for any other handle, pooled or not.
    for name in names:
        assert pool.open(name).view("state") == {"log": [0, 1, 2, 3, 4]}
    url = f"{base}{'&' if '?' in base else '?'}context={names[3]}"
    assert len(agentctx.open(url)) == 5
    with pytest.raises(agentctx.StoreError, match="a PostgreSQL address starts with postgres://"):
        agentctx.Pool("mysql://h/db")
    with pytest.raises(ValueError, match="wait=-1: give seconds, 0 or more"):
        agentctx.Pool(base, wait=-1)


def test_a_numbers_text_stays_in_the_log_and_python_gets_the_nearest_float(
    tmp_path: Path,
) -> None:
    path = tmp_path / "numbers.jsonl"
    path.write_text(
        '{"type":"state","data":{"price":1.50,"tiny":0.1000000000000000055511151231257827,'
        '"huge":1e400}}\n'
    )
    ctx = agentctx.open(path)
    view = ctx.view("state")
    assert view == {"price": 1.5, "tiny": 0.1, "huge": float("inf")}
    # The log keeps the text as written.
    assert '"price":1.50' in path.read_text() and "1e400" in path.read_text()
    # A float Python writes reads back as the same float.
    for value in (0.1, 1e300, -2.5e-8, 123456789.125):
        ctx.apply({"_tool": "t", "_outputPath": "†state.x"}, value)
        assert agentctx.open(path).get("†state.x") == value
