"""The Skills side panel's channel: a kernel serves, the Jupyter server that owns it asks.

A kernel's main thread is blocked while a cell waits for a click, so the side panel cannot
reach it through the kernel's own messages (docs/architecture.md, *Waiting for a click*).
The kernel serves this channel on a thread of its own instead: a unix socket

- in a private per-user folder (:func:`runtime_dir`: ``$XDG_RUNTIME_DIR/skill-magics`` or
  ``<tmp>/skill-magics-<uid>``), created 0700 and refused when it is anyone else's, a link,
  or open to others; the socket itself is 0600;
- named from the kernel's connection file (:func:`socket_path`), which the Jupyter server
  knows for each kernel id it started;
- answering only requests signed (HMAC-SHA256) with the kernel's connection key, the secret
  of its connection file: whoever holds it can already run code in that kernel, so the
  channel trusts exactly whom the kernel's ZeroMQ channels trust, and no one else. A request
  carries a nonce and a time; a nonce seen before, or a time more than :data:`MAX_SKEW_S`
  away, is refused (a captured request cannot be played again). On Linux the peer's uid
  (``SO_PEERCRED``) must be ours too.

One connection carries one request and one answer, each a line of JSON (at most
:data:`MAX_BYTES`). What a request may do is the handler's business (core/panel/board.py);
this module knows nothing of skills. docs/security.md, *The Skills side panel*, describes
the trust boundary.

Example (both sides in one process)::

    server = serve(connection_file, key, lambda op, args: {"echo": args})
    ask(connection_file, key, "state", {})   # -> {"echo": {}}
    server.close()
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import socket
import stat
import struct
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from skill_magics.core.base.errors import SidePanelError, SkillMagicsError

MAX_BYTES = 4 * 2**20  # one request or answer; a state with long script previews fits
MAX_SKEW_S = 120.0  # a request's time may differ this much from the kernel's clock
NONCES_KEPT = 4096  # nonces remembered against replays (older ones are past MAX_SKEW_S)
ASK_TIMEOUT_S = 10.0  # how long the server waits for a kernel's answer
FOLDER = "skill-magics"

Handler = Callable[[str, dict[str, Any]], Any]


def runtime_dir() -> Path:
    """The private folder the kernels' sockets live in (created 0700, checked every time)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    base = Path(xdg) / FOLDER if xdg and os.path.isdir(xdg) else None
    if base is None:
        base = Path(tempfile.gettempdir()) / f"{FOLDER}-{os.getuid()}"
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SidePanelError(f"cannot create the side panel's folder {base}: {exc}") from None
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise SidePanelError(
            f"{base} is not a folder of this user: the side panel stays off; remove it "
            "(it may be someone else's trap) and restart the kernel"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise SidePanelError(
            f"{base} is open to other users: the side panel stays off; chmod 700 it and "
            "restart the kernel"
        )
    return base


def socket_path(connection_file: str | os.PathLike[str]) -> Path:
    """Where the kernel of ``connection_file`` serves (a digest of its real path: short
    enough for a unix socket's 108 bytes, and nothing of the name is trusted)."""
    real = os.path.realpath(os.fspath(connection_file))
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return runtime_dir() / f"{digest}.sock"


def _payload(op: str, args: dict[str, Any], nonce: str, when: float) -> bytes:
    return json.dumps(
        {"op": op, "args": args, "nonce": nonce, "time": when},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    ).encode()


def sign(key: bytes, op: str, args: dict[str, Any], nonce: str, when: float) -> str:
    """The request's signature: HMAC-SHA256 of its canonical JSON with the kernel's key."""
    return hmac.new(key, _payload(op, args, nonce, when), hashlib.sha256).hexdigest()


def _read_line(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
        if size > MAX_BYTES:
            raise SidePanelError(f"a message over {MAX_BYTES} bytes: refused")
    return b"".join(chunks)


@contextmanager
def address(path: Path) -> Iterator[str]:
    """An address for ``path`` that fits a unix socket's 108 bytes: the path itself, or
    (a long TMPDIR) the same file reached through an open descriptor of its folder (Linux)."""
    if len(os.fsencode(path)) < 100:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def _peer_uid(conn: socket.socket) -> int | None:
    """The connecting process's uid (Linux ``SO_PEERCRED``); None where unknown."""
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        return None
    raw = conn.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
    return struct.unpack("3i", raw)[1]


class ChannelServer:
    """The kernel's side: a daemon thread accepting signed requests on the socket."""

    def __init__(self, path: Path, key: bytes, handler: Handler) -> None:
        self.path = path
        self._key = key
        self._handler = handler
        self._nonces: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _remove_stale(path)
        with address(path) as where:
            self._sock.bind(where)
        os.chmod(path, 0o600)
        self._sock.listen(16)
        self._closed = False
        self.requests = 0  # answered (for tests and benches)
        self.thread = threading.Thread(target=self._serve, name="skm-side-panel", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            # One thread per request: an install may take a while; state stays quick.
            threading.Thread(
                target=self._answer, args=(conn,), name="skm-side-panel-req", daemon=True
            ).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(ASK_TIMEOUT_S)
            try:
                reply: dict[str, Any] = {"ok": True, "result": self._dispatch(conn)}
            except SkillMagicsError as exc:
                reply = {"ok": False, "error": str(exc)}
            except Exception as exc:  # noqa: BLE001 - one line back, the kernel goes on
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            try:
                conn.sendall(json.dumps(reply, default=str).encode() + b"\n")
            except OSError:
                pass

    def _dispatch(self, conn: socket.socket) -> Any:
        uid = _peer_uid(conn)
        if uid is not None and uid != os.getuid():
            raise SidePanelError("a request from another user: refused")
        try:
            message = json.loads(_read_line(conn))
            op, args = str(message["op"]), dict(message["args"])
            nonce, when, sig = str(message["nonce"]), float(message["time"]), str(message["sig"])
        except (ValueError, KeyError, TypeError):
            raise SidePanelError("not a side panel request: refused") from None
        if not hmac.compare_digest(sig, sign(self._key, op, args, nonce, when)):
            raise SidePanelError("a request not signed with this kernel's key: refused")
        now = time.time()
        if abs(now - when) > MAX_SKEW_S:
            raise SidePanelError("a request from another time (replayed?): refused")
        with self._lock:
            if nonce in self._nonces:
                raise SidePanelError("a request seen before (replayed): refused")
            self._nonces[nonce] = now
            while len(self._nonces) > NONCES_KEPT:
                self._nonces.popitem(last=False)
        result = self._handler(op, args)
        self.requests += 1
        return result

    def close(self) -> None:
        """Stop serving and remove the socket (a restarted kernel binds it again)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        self._sock.close()
        _remove_stale(self.path)


def _remove_stale(path: Path) -> None:
    """Remove a socket left by a kernel that died (only a socket of ours, never a file)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid():
        os.unlink(path)
    else:
        raise SidePanelError(f"{path} is not a socket of this user: remove it")


def serve(connection_file: str | os.PathLike[str], key: bytes, handler: Handler) -> ChannelServer:
    """Serve ``handler(op, args) -> JSON-able`` for the kernel of ``connection_file``.

    ``key`` is the kernel's connection key; an empty one (an unsigned kernel) is refused:
    nothing could tell the server that owns the kernel from anyone else.
    """
    if not key:
        raise SidePanelError(
            "this kernel has no connection key (an unsigned kernel): the side panel stays off"
        )
    return ChannelServer(socket_path(connection_file), bytes(key), handler)


def ask(
    connection_file: str | os.PathLike[str],
    key: bytes,
    op: str,
    args: dict[str, Any] | None = None,
    *,
    timeout: float = ASK_TIMEOUT_S,
) -> Any:
    """One signed request to the kernel of ``connection_file``; its result, or
    SidePanelError with the kernel's one-line reason."""
    args = dict(args or {})
    nonce, when = secrets.token_hex(16), time.time()
    message = {"op": op, "args": args, "nonce": nonce, "time": when}
    message["sig"] = sign(bytes(key), op, args, nonce, when)
    path = socket_path(connection_file)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            with address(path) as where:
                conn.connect(where)
        except (FileNotFoundError, ConnectionRefusedError):
            raise SidePanelError(
                "the kernel does not serve the side panel: run %load_ext skill_magics in it"
            ) from None
        except OSError as exc:
            raise SidePanelError(f"the kernel's side panel channel failed: {exc}") from None
        try:
            conn.sendall(json.dumps(message).encode() + b"\n")
            raw = _read_line(conn)
        except TimeoutError:
            raise SidePanelError(f"the kernel did not answer within {timeout:g} s") from None
        except OSError as exc:
            raise SidePanelError(f"the kernel's side panel channel failed: {exc}") from None
    try:
        reply = json.loads(raw)
    except ValueError:
        raise SidePanelError("the kernel's answer was not JSON") from None
    if not reply.get("ok"):
        raise SidePanelError(str(reply.get("error") or "the kernel refused the request"))
    return reply.get("result")


def connection_key(connection_file: str | os.PathLike[str]) -> bytes:
    """The key of a connection file (what the Jupyter server holds for its kernels)."""
    try:
        with open(connection_file, encoding="utf-8") as fh:
            return str(json.load(fh).get("key", "")).encode()
    except (OSError, ValueError) as exc:
        raise SidePanelError(f"cannot read the connection file {connection_file}: {exc}") from None


__all__ = [
    "ChannelServer",
    "address",
    "Handler",
    "ask",
    "connection_key",
    "runtime_dir",
    "serve",
    "sign",
    "socket_path",
]
