"""Not an MCP server: answers every line on stdin with garbage (stdlib only, starts fast)."""

import sys

for _line in sys.stdin:
    sys.stdout.write("this is not JSON-RPC {{{\n")
    sys.stdout.write('{"jsonrpc": "2.0", "id": "nope", "result": 12}\n')
    sys.stdout.flush()
