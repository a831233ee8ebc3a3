"""Not an MCP server: reads stdin and never answers (a server that hangs at the handshake)."""

import sys

for _line in sys.stdin:
    pass
