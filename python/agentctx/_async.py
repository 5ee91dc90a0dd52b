"""agentctx for asyncio: a context whose writes and whole-log reads are
awaited, each run in a worker thread (``asyncio.to_thread``) while
agentctx works without the GIL, so the event loop goes on."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Union

from agentctx._agentctx import Context, open, run

if TYPE_CHECKING:
    from agentctx._agentctx import JSON, Activity


class AsyncContext:
    """A :class:`Context` for ``async`` code.

    Writes, ``messages``, ``render``, ``at`` and ``verify`` are awaited;
    ``get``, ``view``, ``resolve``, ``instances``, ``len()`` and ``head``
    read what the context holds in memory and return at once.

    >>> import asyncio, agentctx
    >>> async def main() -> object:
    ...     ctx = agentctx.AsyncContext()
    ...     await ctx.append({"type": "state", "data": {"n": 1}})
    ...     await ctx.apply({"_tool": "t", "_outputPath": "†state.n"}, 2)
    ...     return ctx.get("†state.n")
    >>> asyncio.run(main())
    2
    """

    def __init__(self, context: Context | None = None) -> None:
        self.sync = context if context is not None else Context()
        """The same context, for calls from synchronous code."""

    def __len__(self) -> int:
        return len(self.sync)

    def __repr__(self) -> str:
        return f"<agentctx.AsyncContext of {self.sync!r}>"

    @property
    def head(self) -> str:
        """The chain's head, as hex."""
        return self.sync.head

    def get(self, expression: str, instance: str | None = None) -> Any:
        """The value an expression names (``||`` and ``&&`` included)."""
        return self.sync.get(expression, instance)

    def view(self, kind: str, instance: str | None = None) -> Any:
        """The folded view of ``kind``."""
        return self.sync.view(kind, instance)

    def resolve(self, call: JSON) -> dict[str, Any]:
        """``call`` with its references replaced by their values."""
        return self.sync.resolve(call)

    def instances(self) -> list[str]:
        """The instances, in the order they first appear."""
        return self.sync.instances()

    async def append(self, messages: JSON, *, key: str | None = None) -> int:
        """Appends a message or a list of them, all or none (once per ``key``)."""
        return await asyncio.to_thread(self.sync.append, messages, key=key)

    async def apply(
        self, call: JSON, result: JSON, *, key: str | None = None
    ) -> list[dict[str, Any]]:
        """Writes ``result`` where ``call``'s ``_outputPath`` says (once per ``key``)."""
        return await asyncio.to_thread(self.sync.apply, call, result, key=key)

    async def apply_all(
        self, results: Sequence[tuple[JSON, JSON]], *, key: str | None = None
    ) -> list[dict[str, Any]]:
        """Writes several results in one commit, all or none (once per ``key``)."""
        return await asyncio.to_thread(self.sync.apply_all, results, key=key)

    async def messages(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """The messages from ``start`` up to ``stop``, in their normal form."""
        return await asyncio.to_thread(self.sync.messages, start, stop)

    async def render(
        self,
        provider: Literal["openai", "anthropic", "plain", "text"] = "openai",
        mode: Literal["merged", "append"] = "merged",
    ) -> Any:
        """What the model sees, as the provider's payload."""
        return await asyncio.to_thread(self.sync.render, provider, mode)

    async def at(self, k: int) -> AsyncContext:
        """The context after its first ``k`` messages, as a copy in memory."""
        return AsyncContext(await asyncio.to_thread(self.sync.at, k))

    async def verify(self, expect: str | None = None) -> dict[str, Any]:
        """Checks the stored log's chain; raises ``TamperedError`` on a finding."""
        return await asyncio.to_thread(self.sync.verify, expect)

    async def run(
        self,
        plan: Sequence[JSON],
        activities: Mapping[str, Activity],
        *,
        parallel: int | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """:func:`agentctx.run` on this context, awaited."""
        return await asyncio.to_thread(
            run, self.sync, plan, activities, parallel=parallel, key=key
        )


async def open_async(
    path: Union[str, os.PathLike[str]], *, create: bool = False
) -> AsyncContext:
    """:func:`agentctx.open`, awaited: the context as an :class:`AsyncContext`."""
    return AsyncContext(await asyncio.to_thread(open, path, create=create))
