"""Transports to an MCP server."""
from dataclasses import dataclass


@dataclass
class Connection:
    transport: str
    command: str = ""

    def describe(self):
        return f"{self.transport}:{self.command}"


def create_connection(transport, command=""):
    return Connection(transport, command)
