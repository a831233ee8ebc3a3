"""A run forked by a warm server, as this process drives it (a process.Child): it announces
itself on the run's socket (its pid comes with the credentials), and its exit comes as a
message there; a run whose server died meanwhile is reaped here when it was re-parented here.
The messages: wire.py."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import time
from typing import Any, Protocol

from skill_magics.core.run.launching.process import Child, Pipe, SpawnError
from skill_magics.core.run.launching.warm import wire

_CREDS = struct.Struct("3i")  # struct ucred: pid, uid, gid
ORPHAN_WAIT_S = 1.0  # a run whose server died: how long its main process is waited for


class Server(Protocol):
    """What a run asks of its server (server.WarmServer, which makes WarmChild: so named
    here, not imported)."""

    def ended(self, wait: float) -> str:
        """How the server's process ended ("signal 9"), waiting up to ``wait`` seconds."""
        ...

    def finished(self) -> None:
        """A run of it is over (it may import, retire or stop now)."""
        ...


class WarmChild(Child):
    """A run forked by a warm server: its exit comes as a message on the run's socket."""

    def __init__(self, server: Server, sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.pid = 0
        self.stdin: Pipe | None = None
        self.returncode: int | None = None
        self.failure: SpawnError | None = None  # it could not start (cwd missing)
        self.lost = False  # the server went away: the status is unknown
        self.pidfd: int | None = None  # the main process, held from its announcement
        self._done = False

    def wait_started(self, timeout: float) -> None:
        data, pid = recv_creds(self.sock, timeout)
        if data[:1] == wire.PID and pid:
            self.pid = pid
            # The server reaps it only once this client answers (``R``) or goes away, so
            # the pid is still this child's now: the pidfd pins it for the kill.
            try:
                self.pidfd = os.pidfd_open(pid)
            except OSError:  # old kernel: the pid is pinned until ``R`` anyway
                self.pidfd = None
            return
        if data[:1] == wire.FAILED:
            errno_, message, where = json.loads(data[1:])
            raise OSError(errno_, f"the warm server could not fork: {message} ({where})")
        raise OSError("the warm server did not start the run")

    # -- Child -------------------------------------------------------------------------------

    def exit_fd(self) -> int | None:
        return self.sock.fileno()

    def on_exit_fd(self) -> bool:
        try:
            data = self.sock.recv(4096, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        return self._message(data)

    def _message(self, data: bytes) -> bool:
        kind = data[:1]
        if kind == wire.STATUS:
            self.returncode = wire.INT.unpack(data[1 : 1 + wire.INT.size])[0]
            return True
        if kind == wire.FAILED:
            try:
                errno_, message, where = json.loads(data[1:])
            except ValueError:
                errno_, message, where = 5, "could not start", ""
            self.failure = SpawnError(errno_, message, where)
            return False
        if not data:  # EOF without a status: the server is gone (reap says how)
            self.lost = True
            self.returncode = -signal.SIGKILL
            return True
        return False

    def poll_exit(self) -> bool:
        return self.returncode is not None or self.on_exit_fd()

    def kill(self, sig: int) -> None:
        if self.reaped or not self.pid:
            return
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, sig)
            elif not self.lost:  # unreaped until ``R``: the pid is the run's
                os.kill(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def has_exited(self) -> bool:
        # The server sends the status once waitid(WNOWAIT) saw the exit; a lost server says
        # nothing about the child.
        return self.returncode is not None and not self.lost

    def reap(self, exited: bool = False) -> int:
        deadline = time.monotonic() + 10
        while self.returncode is None and time.monotonic() < deadline:
            try:
                data, _pid = recv_creds(self.sock, max(deadline - time.monotonic(), 0.001))
            except (TimeoutError, OSError):
                break
            self._message(data)
        try:
            self.sock.send(wire.RUN)  # the group is dead: the server may reap the leader now
        except OSError:
            pass
        if self.lost or self.returncode is None:
            self.lost = True
            self._orphaned()
        self.reaped = True
        self._finish()
        if self.returncode is None:  # pragma: no cover - the server stopped answering
            self.returncode = -signal.SIGKILL
        return self.returncode

    def _orphaned(self) -> None:
        """The server went away while this ran: say how it ended, and reap the main process
        if it came here (this process is a child subreaper during unsandboxed runs, so the
        server's children are re-parented to it; the kill that ends the run was sent)."""
        self.server_stopped = self.server.ended(ORPHAN_WAIT_S)
        fd = self.pidfd
        if fd is None:
            return
        deadline = time.monotonic() + ORPHAN_WAIT_S
        while True:
            try:
                info = os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOHANG)
            except (ChildProcessError, OSError):  # not ours: its new parent reaps it
                return
            if info is not None:
                self.returncode = os.waitstatus_to_exitcode(_status_of(info))
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            select.select([fd], [], [], min(left, 0.05))

    def abandon(self) -> None:
        """Give up on a run that never started here: the server ends it when the socket
        closes."""
        self._finish()

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            self.sock.close()
            if self.pidfd is not None:
                os.close(self.pidfd)
                self.pidfd = None
            self.server.finished()

    def close(self) -> None:
        self._finish()


def _status_of(info: Any) -> int:
    """A wait status (as waitpid gives it) from waitid's result."""
    if info.si_code == os.CLD_EXITED:
        return (info.si_status & 0xFF) << 8
    return info.si_status & 0x7F  # killed (or dumped core) by this signal


def recv_creds(sock: socket.socket, timeout: float | None) -> tuple[bytes, int]:
    """One message and the sender's pid (as this process's PID namespace numbers it)."""
    if timeout is not None:
        end = time.monotonic() + timeout
        poller = select.poll()  # not select(): descriptors past 1024 are common in a kernel
        poller.register(sock.fileno(), select.POLLIN)
        # In slices: a stop on another thread closes the socket (fileno -1), which a poll
        # begun before does not notice when the process is still there (stuck importing).
        while not poller.poll(min(max(end - time.monotonic(), 0.0), 1.0) * 1000):
            if sock.fileno() < 0:
                raise OSError("the warm server was stopped")
            if time.monotonic() >= end:
                raise TimeoutError(f"no answer from the warm server within {timeout:g} s")
        if sock.fileno() < 0:
            raise OSError("the warm server was stopped")
    data, ancdata, _flags, _addr = sock.recvmsg(1 << 20, socket.CMSG_SPACE(_CREDS.size))
    pid = 0
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = _CREDS.unpack(payload[: _CREDS.size])[0]
    return data, pid


__all__ = ["ORPHAN_WAIT_S", "Server", "WarmChild", "recv_creds"]
