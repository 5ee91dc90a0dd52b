"""An MCP server that never answers: it reads its stdin and says nothing."""

import sys

for _ in sys.stdin:
    pass
