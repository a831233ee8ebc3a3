"""The warm server's wire: every message tag, in one table read by both ends (server.py and
forked.py in this process; zygote.py and child.py in the server, which load this file by path
as they load each other, so it imports the standard library only). What each message carries:
zygote.py's docstring.

Example:
    >>> LOAD + b'["pandas"]', STATUS + INT.pack(-9) == b"S\\xf7\\xff\\xff\\xff"
    (b'L["pandas"]', True)
"""

import struct

# The control socket (this process <-> the server), one message per packet.
HELLO = b"H"  # server -> client, once it started: what it is (JSON)
LOAD = b"L"  # client -> server: import these (a JSON list); the server answers LOAD + a report
RUN = b"R"  # client -> server: a run (its five descriptors); on a run's socket: reap it now
QUIT = b"Q"  # client -> server: stop (EOF too)
# A run's socket (this process <-> the run's child, and the server about it).
PID = b"P"  # child -> client, first: its pid comes with the message's credentials
FAILED = b"F"  # child or server -> client: it could not start (JSON [errno, message, where])
STATUS = b"S"  # server -> client: the child's exit status (INT; -N for signal N)
# The guard's socket (the server -> its guard, skm-warm-guard).
HOLD = b"+"  # hold this run's pidfd (INT: its pid)
LET_GO = b"-"  # the run was reaped: let its pidfd go (INT: its pid)

INT = struct.Struct("i")  # the number that follows STATUS, HOLD and LET_GO

__all__ = ["FAILED", "HELLO", "HOLD", "INT", "LET_GO", "LOAD", "PID", "QUIT", "RUN", "STATUS"]
