"""FastMCP's own skills server: ``SkillsDirectoryProvider`` over ROOT, stdio or HTTP.

python tests/mcp_servers/fastmcp_skills.py ROOT            # stdio
python tests/mcp_servers/fastmcp_skills.py ROOT --http PORT
"""

from __future__ import annotations

import sys

from fastmcp import FastMCP
from fastmcp.skills.provider import SkillsDirectoryProvider


def main() -> None:
    root = sys.argv[1]
    server = FastMCP("fastmcp-skills", providers=[SkillsDirectoryProvider(root, reload=True)])
    if len(sys.argv) > 3 and sys.argv[2] == "--http":
        server.run(transport="http", host="127.0.0.1", port=int(sys.argv[3]), show_banner=False)
    else:
        server.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
