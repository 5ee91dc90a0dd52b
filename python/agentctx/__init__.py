"""agentctx: a structured, append-only working memory for LLM agents.

A context is an ordered log of messages; data messages fold into views,
read by reference (``"†state.user.name"``) and written only by appending,
so every read is the fold of the log and the log is a complete audit
trail.

>>> import agentctx
>>> ctx = agentctx.Context()
>>> ctx.append({"type": "state", "data": {"user": {"name": "Ada"}}})
1
>>> ctx.get("†state.user.name")
'Ada'
>>> ctx.apply({"_tool": "greet", "_outputPath": "†state.greeting"}, "Hello, Ada")[0]["data"]
{'greeting': 'Hello, Ada'}
>>> ctx.view("state")
{'user': {'name': 'Ada'}, 'greeting': 'Hello, Ada'}
"""

from agentctx._agentctx import (
    Context,
    Error,
    InDoubtError,
    NotFoundError,
    Pool,
    RefusedError,
    StoreError,
    TamperedError,
    open,
    run,
)
from agentctx._async import AsyncContext, open_async

__all__ = [
    "AsyncContext",
    "Context",
    "Error",
    "InDoubtError",
    "NotFoundError",
    "Pool",
    "RefusedError",
    "StoreError",
    "TamperedError",
    "open",
    "open_async",
    "run",
]
