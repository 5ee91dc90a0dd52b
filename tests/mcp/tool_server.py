"""An MCP server of tools for the tests of `--mcp` (the official SDK's
MCPServer, over stdio). `python tool_server.py [PREFIX]` names its tools
PREFIX + name, so two servers can be made to clash or not; with
`MCP_HTTP_PORT` set it serves Streamable HTTP on 127.0.0.1 instead."""

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

prefix = sys.argv[1] if len(sys.argv) > 1 else ""
server = MCPServer("test-tools")


@server.tool(name=prefix + "add")
def add(a: int, b: int) -> dict[str, int]:
    """Adds two integers."""
    return {"sum": a + b}


@server.tool(name=prefix + "shout")
def shout(text: str) -> str:
    """Upper-cases text."""
    return text.upper()


@server.tool(name=prefix + "boom")
def boom() -> str:
    """Always fails."""
    raise ValueError("kaboom")


@server.tool(name=prefix + "nap")
def nap(seconds: float) -> str:
    """Sleeps, then answers."""
    time.sleep(seconds)
    return "rested"


@server.tool(name=prefix + "die")
def die() -> str:
    """Ends the server's process mid-call."""
    os._exit(3)


@server.tool(name=prefix + "flood")
def flood(megabytes: int) -> str:
    """Answers with that many megabytes of text."""
    return "x" * (megabytes << 20)


if __name__ == "__main__":
    port = os.environ.get("MCP_HTTP_PORT")
    if port:
        server.run("streamable-http", host="127.0.0.1", port=int(port))
    else:
        server.run("stdio")
