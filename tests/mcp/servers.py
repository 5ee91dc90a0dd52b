"""The test tool server (tool_server.py) run over Streamable HTTP, for the
tests that reach one by URL."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def tool_server_over_http() -> Iterator[str]:
    """Starts the tool server on a free port of 127.0.0.1; yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("tool_server.py"))],
        env={**os.environ, "MCP_HTTP_PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            with socket.socket() as attempt:
                if attempt.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.kill()
        server.wait(timeout=10)
