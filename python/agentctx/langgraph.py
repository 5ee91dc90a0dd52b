"""A LangGraph checkpointer that keeps each thread as an agentctx context.

``AgentctxSaver(where)`` stores LangGraph's checkpoints, their pending
writes and their channel values as data messages of kind ``langgraph``, one
context per thread: in a directory of JSONL files, or in PostgreSQL. Every
``put`` and ``put_writes`` is one durable, validated append; nothing is
edited in place, so ``agentctx verify``, ``agentctx inspect`` and
``ctx.at(k)`` work on LangGraph threads, and many processes may write one
thread without losing an update.

>>> import tempfile
>>> from langgraph.graph import StateGraph, START
>>> from typing import TypedDict
>>> class State(TypedDict):
...     n: int
>>> builder = StateGraph(State)
>>> _ = builder.add_node("inc", lambda s: {"n": s["n"] + 1})
>>> _ = builder.add_edge(START, "inc")
>>> saver = AgentctxSaver(tempfile.mkdtemp())
>>> graph = builder.compile(checkpointer=saver)
>>> graph.invoke({"n": 1}, {"configurable": {"thread_id": "t1"}})
{'n': 2}
>>> graph.get_state({"configurable": {"thread_id": "t1"}}).values
{'n': 2}
>>> saver.context("t1").get("†langgraph.latest[\\"\\"]") == saver.get_tuple(
...     {"configurable": {"thread_id": "t1"}}).config["configurable"]["checkpoint_id"]
True

The view a thread folds into (``ctx.view("langgraph")``)::

    {"checkpoints": {NS: {ID: {"checkpoint": V, "metadata": V, "parent": ID | None}}},
     "blobs": {NS: {CHANNEL: {VERSION: V}}},
     "writes": {NS: {ID: {"[TASK, IDX]": {"task", "channel", "value": V, "path", "idx"}}}},
     "latest": {NS: ID}}

where a value ``V`` is ``["value", JSON]`` when it is plain JSON and the
serializer is LangGraph's default (so ``inspect`` shows it as it is), else
``["serde", TYPE, BASE64]`` from the serializer, and ``["empty"]`` for a
channel emptied. Deleting (``delete_thread``, ``delete_for_runs``,
``prune``) appends erases (spec R10b): the thread reads as LangGraph
expects, and the log keeps what was written and when it was erased.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import hashlib
import json
import math
import os
import random
import re
import threading
import urllib.parse
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

import agentctx

__all__ = ["AgentctxSaver"]

KIND = "langgraph"
"""The kind of the data messages a thread holds."""

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")


def _reference(path: Sequence[str], kind: str = KIND) -> str:
    """``†KIND["a"]["b"]``: every key quoted, whatever it holds."""
    return "†" + kind + "".join("[" + json.dumps(p, ensure_ascii=False) + "]" for p in path)


def _nested(path: Sequence[str], value: Any) -> Any:
    for key in reversed(path):
        value = {key: value}
    return value


def _erase(path: Sequence[str], kind: str = KIND) -> dict[str, Any]:
    """A message that makes ``path`` read as absent (spec R10b)."""
    return {
        "type": "data",
        "kind": kind,
        "data": _nested(path, None),
        "_outputPath": _reference(path, kind),
        "_outputMethod": "erase",
    }


def _data(value: Any, kind: str = KIND) -> dict[str, Any]:
    return {"type": "data", "kind": kind, "data": value}


def _is_plain(value: Any, depth: int = 0) -> bool:
    """JSON that comes back as the same Python value: exact types only (a
    ``str`` enum member is not a ``str`` here), finite floats."""
    if depth > 64:
        return False
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is int:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is list or kind is tuple:
        return all(_is_plain(item, depth + 1) for item in value)
    if kind is dict:
        return all(type(k) is str and _is_plain(v, depth + 1) for k, v in value.items())
    return False


class AgentctxSaver(BaseCheckpointSaver[str]):
    """LangGraph's checkpointer, each thread an agentctx context.

    ``where`` is a directory (created if missing; thread ``T`` is
    ``t-T.jsonl`` in it, or ``h-<sha256>.jsonl`` when ``T`` is not a plain
    file name, and ``threads.jsonl`` lists the threads), or a PostgreSQL URL
    ``postgres://…?context=PREFIX`` (thread ``T`` is the context
    ``PREFIX/t-T`` or ``PREFIX/h-<sha256>``, the list ``PREFIX/threads``;
    ``PREFIX`` defaults to ``langgraph``).

    Safe to share between threads and tasks; any number of processes may
    use the same directory or database. In PostgreSQL its threads share one
    ``agentctx.Pool`` of at most ``pool_size`` connections (default 10),
    however many threads it holds.
    """

    def __init__(
        self,
        where: str | os.PathLike[str],
        *,
        serde: SerializerProtocol | None = None,
        pool_size: int = 10,
    ) -> None:
        super().__init__(serde=serde)
        # Plain JSON is stored as itself only under the default serializer:
        # another (an encrypting one, say) sees every value.
        self._plain_json = type(self.serde) is JsonPlusSerializer
        text = os.fspath(where)
        self._url: urllib.parse.SplitResult | None = None
        self._prefix = ""
        if text.startswith(("postgres://", "postgresql://")):
            self._url = urllib.parse.urlsplit(text)
            query = dict(urllib.parse.parse_qsl(self._url.query, keep_blank_values=True))
            self._prefix = query.pop("context", "langgraph") or "langgraph"
            self._pool = agentctx.Pool(text, size=pool_size)
        else:
            os.makedirs(text, exist_ok=True)
            self._directory = text
        self._lock = threading.Lock()
        self._contexts: dict[str, agentctx.Context] = {}
        self._registered: set[str] = set()
        # One per thread: a write that reads first (is this write there
        # yet? is this checkpoint the newest?) does so with no other write
        # of this process to the thread in between.
        self._writing: dict[str, threading.Lock] = {}

    def __repr__(self) -> str:
        return f"<AgentctxSaver {self._describe()}>"

    def _describe(self) -> str:
        if self._url is None:
            return self._directory
        netloc = self._url.hostname or ""
        return f"postgres://{netloc}{self._url.path}?context={self._prefix}"

    # ---- where threads live


    @staticmethod
    def _name(thread_id: str) -> str:
        if _PLAIN_NAME.fullmatch(thread_id):
            return "t-" + thread_id
        return "h-" + hashlib.sha256(thread_id.encode()).hexdigest()[:48]

    def _open(self, name: str) -> agentctx.Context:
        with self._lock:
            ctx = self._contexts.get(name)
            if ctx is None:
                if self._url is None:
                    path = os.path.join(self._directory, name + ".jsonl")
                    ctx = agentctx.open(path, create=True)
                else:
                    ctx = self._pool.open(f"{self._prefix}/{name}", create=True)
                self._contexts[name] = ctx
            return ctx

    def context(self, thread_id: str) -> agentctx.Context:
        """The context that holds ``thread_id`` (read it, render it,
        ``verify`` it, go back with ``at``)."""
        return self._open(self._name(str(thread_id)))

    def _writer(self, thread_id: str) -> threading.Lock:
        with self._lock:
            return self._writing.setdefault(thread_id, threading.Lock())

    def _thread(self, thread_id: str) -> agentctx.Context:
        ctx = self.context(thread_id)
        ctx.refresh()
        return ctx

    def _threads(self) -> agentctx.Context:
        ctx = self._open("threads")
        ctx.refresh()
        return ctx

    def _register(self, thread_id: str) -> None:
        if thread_id in self._registered:
            return
        threads = self._threads()
        try:
            threads.get(_reference([thread_id], "threads"))
        except agentctx.NotFoundError:
            threads.append(_data({thread_id: self._name(thread_id)}, "threads"))
        self._registered.add(thread_id)

    # ---- values

    def _encode(self, value: Any) -> list[Any]:
        if self._plain_json and _is_plain(value):
            return ["value", value]
        kind, data = self.serde.dumps_typed(value)
        return ["serde", kind, base64.b64encode(data).decode("ascii")]

    def _decode(self, stored: list[Any]) -> Any:
        if stored[0] == "value":
            return stored[1]
        return self.serde.loads_typed((stored[1], base64.b64decode(stored[2])))

    @staticmethod
    def _get(ctx: agentctx.Context, path: Sequence[str]) -> Any:
        try:
            return ctx.get(_reference(path))
        except agentctx.NotFoundError:
            return None

    # ---- reading

    def _tuple(
        self,
        ctx: agentctx.Context,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        entry: dict[str, Any],
        config: RunnableConfig | None,
        writes: dict[str, Any] | None,
    ) -> CheckpointTuple:
        checkpoint = cast(Checkpoint, self._decode(entry["checkpoint"]))
        values: dict[str, Any] = {}
        for channel, version in checkpoint.get("channel_versions", {}).items():
            blob = self._get(ctx, ["blobs", ns, channel, str(version)])
            if blob is not None and blob[0] != "empty":
                values[channel] = self._decode(blob)
        checkpoint = cast(Checkpoint, {**checkpoint, "channel_values": values})
        records = sorted(
            (writes or {}).values(), key=lambda w: (w["path"], w["task"], w["idx"])
        )
        parent = entry.get("parent")
        return CheckpointTuple(
            config=config
            or {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": checkpoint_id,
                }
            },
            checkpoint=checkpoint,
            metadata=cast(CheckpointMetadata, self._decode(entry["metadata"])),
            parent_config=(
                {
                    "configurable": {
                        "thread_id": thread_id,
                        "checkpoint_ns": ns,
                        "checkpoint_id": parent,
                    }
                }
                if parent
                else None
            ),
            pending_writes=[(w["task"], w["channel"], self._decode(w["value"])) for w in records],
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's latest in its
        namespace; ``None`` when there is none."""
        configurable = config.get("configurable", {})
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "")
        ctx = self._thread(thread_id)
        checkpoint_id = get_checkpoint_id(config)
        given = checkpoint_id is not None
        if checkpoint_id is None:
            checkpoint_id = self._get(ctx, ["latest", ns])
            if checkpoint_id is None:
                return None
        entry = self._get(ctx, ["checkpoints", ns, checkpoint_id])
        if entry is None:
            return None
        writes = self._get(ctx, ["writes", ns, checkpoint_id])
        return self._tuple(
            ctx, thread_id, ns, checkpoint_id, entry, config if given else None, writes
        )

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first (by id) in one thread, or in every
        thread when ``config`` is ``None``; in one namespace when the
        config names one, else in all. ``filter`` matches metadata keys by
        equality; ``before`` keeps ids below its id."""
        configurable = (config or {}).get("configurable", {})
        if config is not None and "thread_id" in configurable:
            threads = [str(configurable["thread_id"])]
        else:
            threads = self._thread_ids()
        only_ns = configurable.get("checkpoint_ns") if "checkpoint_ns" in configurable else None
        only_id = configurable.get("checkpoint_id")
        below = get_checkpoint_id(before) if before is not None else None
        left = limit
        for thread_id in threads:
            ctx = self._thread(thread_id)
            view = self._get(ctx, ["checkpoints"]) or {}
            found = [
                (checkpoint_id, ns, entry)
                for ns, entries in view.items()
                if only_ns is None or ns == only_ns
                for checkpoint_id, entry in entries.items()
                if (only_id is None or checkpoint_id == only_id)
                and (below is None or checkpoint_id < below)
            ]
            found.sort(key=lambda item: item[0], reverse=True)
            for checkpoint_id, ns, entry in found:
                if left is not None and left <= 0:
                    return
                if filter:
                    metadata = self._decode(entry["metadata"])
                    if not all(metadata.get(k) == v for k, v in filter.items()):
                        continue
                writes = self._get(ctx, ["writes", ns, checkpoint_id])
                yield self._tuple(ctx, thread_id, ns, checkpoint_id, entry, None, writes)
                if left is not None:
                    left -= 1

    def _thread_ids(self) -> builtins.list[str]:
        threads = self._threads()
        try:
            return list(threads.view("threads"))
        except agentctx.NotFoundError:
            return []

    # ---- writing

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Appends the checkpoint, its metadata and the channel values
        ``new_versions`` names, in one commit."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = checkpoint["id"]
        body: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = body.pop("channel_values", {})
        blobs = {
            channel: {
                str(version): self._encode(values[channel]) if channel in values else ["empty"]
            }
            for channel, version in new_versions.items()
        }
        metadata = get_serializable_checkpoint_metadata(config, metadata)
        view: dict[str, Any] = {
            "checkpoints": {
                ns: {
                    checkpoint_id: {
                        "checkpoint": self._encode(body),
                        "metadata": self._encode(metadata),
                        "parent": configurable.get("checkpoint_id"),
                    }
                }
            }
        }
        if blobs:
            view["blobs"] = {ns: blobs}
        self._register(thread_id)
        with self._writer(thread_id):
            # As this handle last read or wrote it: the append catches up
            # with other processes itself, and reading first costs a step
            # a tenth of its time (D98: a thread is a context).
            ctx = self.context(thread_id)
            latest = self._get(ctx, ["latest", ns])
            if latest is None or checkpoint_id > latest:
                view["latest"] = {ns: checkpoint_id}
            ctx.append(_data(view))
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Appends a task's writes to a checkpoint: each at most once by
        (task, index) — checked against the thread as it is, with no other
        write of this process between — except the special channels' (an
        error, an interrupt, a resume), where the last one stands."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = configurable["checkpoint_id"]
        self._register(thread_id)
        with self._writer(thread_id):
            self._put_writes(thread_id, ns, checkpoint_id, writes, task_id, task_path)

    def _put_writes(
        self,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> None:
        ctx = self.context(thread_id)
        existing = self._get(ctx, ["writes", ns, checkpoint_id]) or {}
        first: dict[str, Any] = {}
        last: dict[str, Any] = {}
        for index, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, index)
            key = json.dumps([task_id, idx], ensure_ascii=False)
            record = {
                "task": task_id,
                "channel": channel,
                "value": self._encode(value),
                "path": task_path,
                "idx": idx,
            }
            if idx < 0:
                last[key] = record
            elif key not in existing:
                first[key] = record
        if first:
            ctx.append(_data({"writes": {ns: {checkpoint_id: first}}}))
        if last:
            ctx.append(_data({"writes": {ns: {checkpoint_id: last}}}))

    # ---- deleting

    def delete_thread(self, thread_id: str) -> None:
        """Erases the thread: it reads as empty; its log keeps what it held."""
        thread_id = str(thread_id)
        ctx = self._thread(thread_id)
        if self._get(ctx, []) is not None:
            ctx.append(_erase([]))
        threads = self._threads()
        try:
            threads.get(_reference([thread_id], "threads"))
            threads.append(_erase([thread_id], "threads"))
        except agentctx.NotFoundError:
            pass
        self._registered.discard(thread_id)

    def _erase_checkpoints(
        self, ctx: agentctx.Context, doomed: dict[str, set[str]], view: dict[str, Any]
    ) -> None:
        """Erases the checkpoints ``doomed`` names (by namespace) and their
        writes in one commit, moving ``latest`` to the newest left."""
        messages: builtins.list[Any] = []
        latest = self._get(ctx, ["latest"]) or {}
        for ns, ids in doomed.items():
            for checkpoint_id in sorted(ids):
                messages.append(_erase(["checkpoints", ns, checkpoint_id]))
                messages.append(_erase(["writes", ns, checkpoint_id]))
            if latest.get(ns) in ids:
                left = [c for c in view.get(ns, {}) if c not in ids]
                messages.append(
                    _data({"latest": {ns: max(left)}}) if left else _erase(["latest", ns])
                )
        if messages:
            ctx.append(messages)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Erases, in every thread, the checkpoints whose metadata's
        ``run_id`` is one of ``run_ids``, with their writes."""
        wanted = set(run_ids)
        if not wanted:
            return
        for thread_id in self._thread_ids():
            ctx = self._thread(thread_id)
            view = self._get(ctx, ["checkpoints"]) or {}
            doomed: dict[str, set[str]] = {}
            for ns, entries in view.items():
                for checkpoint_id, entry in entries.items():
                    if self._decode(entry["metadata"]).get("run_id") in wanted:
                        doomed.setdefault(ns, set()).add(checkpoint_id)
            self._erase_checkpoints(ctx, doomed, view)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: erases all but each namespace's newest
        checkpoint (its writes kept); ``delete``: erases the threads."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(
                f"unknown prune strategy {strategy!r}: expected 'keep_latest' or 'delete'"
            )
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            ctx = self._thread(str(thread_id))
            view = self._get(ctx, ["checkpoints"]) or {}
            doomed = {ns: set(entries) - {max(entries)} for ns, entries in view.items() if entries}
            self._erase_checkpoints(ctx, {ns: ids for ns, ids in doomed.items() if ids}, view)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copies the source thread's checkpoints, writes and values, ids
        unchanged, onto the target (in one commit)."""
        source = self._thread(str(source_thread_id))
        view = self._get(source, [])
        if view is None:
            return
        self._register(str(target_thread_id))
        self._thread(str(target_thread_id)).append(_data(view))

    # ---- versions

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Versions as LangGraph's own savers make them: a zero-padded
        counter (so text order is numeric order) and a random fraction."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(current.split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # ---- asyncio: the same, in a worker thread (agentctx releases the GIL)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)
