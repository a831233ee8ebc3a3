"""``python -m skill_magics.mcp serve [DIR...]``: serve skill folders over MCP (SEP-2640).

The implementation is :mod:`skill_magics.core.mcp`; this package is only its command line.
"""
