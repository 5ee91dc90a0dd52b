"""Types of the native module (``agentctx._agentctx``)."""

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, Union

# What may be written: read-only container types, so a `dict[str, str]` is
# JSON as much as a `dict[str, JSON]` is (containers are invariant).
JSON = Union[None, bool, int, float, str, Sequence["JSON"], Mapping[str, "JSON"]]

class Error(Exception):
    """What agentctx refused or could not do."""

class RefusedError(Error):
    """A write a rule refused; nothing was written."""

class NotFoundError(Error):
    """No such context, or nothing an expression names."""

class StoreError(Error):
    """The file or database failed."""

class InDoubtError(StoreError):
    """A commit whose outcome is unknown: send it again with its key."""

    key: str | None

class TamperedError(StoreError):
    """The log does not chain: it was edited, cut or reordered."""

    report: dict[str, Any]

class Context:
    """A context: an ordered, append-only log of messages and its views."""

    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    @property
    def head(self) -> str:
        """The chain's head, as hex."""
    def get(self, expression: str, instance: str | None = None) -> Any:
        """The value an expression names (``||`` and ``&&`` included)."""
    def resolve(self, call: JSON) -> dict[str, Any]:
        """``call`` with its references replaced by their values."""
    def view(self, kind: str, instance: str | None = None) -> Any:
        """The folded view of ``kind``."""
    def instances(self) -> list[str]:
        """The instances, in the order they first appear."""
    def refresh(self) -> None:
        """Reads what others appended since this handle last read or wrote."""
    def append(self, messages: JSON, *, key: str | None = None) -> int:
        """Appends a message or a list of them, all or none (once per ``key``)."""
    def apply(self, call: JSON, result: JSON, *, key: str | None = None) -> list[dict[str, Any]]:
        """Writes ``result`` where ``call``'s ``_outputPath`` says (once per ``key``)."""
    def apply_all(
        self, results: Sequence[tuple[JSON, JSON]], *, key: str | None = None
    ) -> list[dict[str, Any]]:
        """Writes several results in one commit, all or none (once per ``key``)."""
    def at(self, k: int) -> Context:
        """The context after its first ``k`` messages, as a copy in memory."""
    def verify(self, expect: str | None = None) -> dict[str, Any]:
        """Checks the stored log's chain; raises ``TamperedError`` on a finding."""
    def messages(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """The messages from ``start`` up to ``stop``, in their normal form."""
    def render(
        self,
        provider: Literal["openai", "anthropic", "plain", "text"] = "openai",
        mode: Literal["merged", "append"] = "merged",
    ) -> Any:
        """What the model sees, as the provider's payload."""

def open(path: Union[str, os.PathLike[str]], *, create: bool = False) -> Context:
    """Opens the context in a file, or at a ``postgres://…?context=NAME`` URL."""

class Pool:
    """At most ``size`` connections to the PostgreSQL database at ``url``,
    shared by every context opened from it; a context holds one only during
    a call. The URL's ``context`` parameter, if any, is not used."""

    def __init__(self, url: str, size: int = 10, wait: float = 30.0) -> None: ...
    def open(self, name: str, *, create: bool = False) -> Context:
        """Opens the context ``name`` on the pool's connections."""
    @property
    def size(self) -> int:
        """The most connections the pool opens."""
    @property
    def connections(self) -> int:
        """The connections open now (idle, or in use during a call)."""
    @property
    def idle(self) -> int:
        """The open connections no context holds now."""

Activity = Callable[[dict[str, Any]], Union[JSON, Awaitable[JSON]]]

def run(
    ctx: Context,
    plan: Sequence[JSON],
    activities: Mapping[str, Activity],
    *,
    parallel: int | None = None,
    key: str | None = None,
) -> dict[str, Any]:
    """Runs ``plan`` on ``ctx`` with Python callables as activities."""
