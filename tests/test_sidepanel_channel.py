"""The Skills side panel's channel without a kernel (core/panel/channel.py): real unix
sockets in a real private folder; what it refuses, and what it must not refuse."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from skill_magics.core.base.errors import SidePanelError
from skill_magics.core.panel import channel


def test_no_connection_key_no_channel(tmp_path: Path) -> None:
    """An unsigned kernel (empty key) cannot tell its server from anyone: no channel."""
    with pytest.raises(SidePanelError, match="no connection key"):
        channel.serve(tmp_path / "kernel-x.json", b"", lambda op, args: None)


def test_a_socket_folder_open_to_others_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    (runtime / "skill-magics").mkdir(mode=0o755)
    (runtime / "skill-magics").chmod(0o755)
    with pytest.raises(SidePanelError, match="open to other users"):
        channel.runtime_dir()
    (runtime / "skill-magics").chmod(0o700)  # what it must not refuse: a private folder
    assert channel.runtime_dir() == runtime / "skill-magics"


def test_a_replayed_request_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket as socketlib

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    cf, key = tmp_path / "kernel-r.json", b"k" * 32
    server = channel.serve(cf, key, lambda op, args: {"op": op})
    try:
        assert channel.ask(cf, key, "state") == {"op": "state"}
        when = time.time()
        message = {"op": "state", "args": {}, "nonce": "n1", "time": when}
        message["sig"] = channel.sign(key, "state", {}, "n1", when)

        def send() -> dict:
            with (
                socketlib.socket(socketlib.AF_UNIX) as conn,
                channel.address(channel.socket_path(cf)) as where,
            ):
                conn.connect(where)
                conn.sendall(json.dumps(message).encode() + b"\n")
                return json.loads(conn.makefile().readline())

        assert send() == {"ok": True, "result": {"op": "state"}}
        assert send() == {"ok": False, "error": "a request seen before (replayed): refused"}
        old = when - 3600
        message.update(nonce="n2", time=old, sig=channel.sign(key, "state", {}, "n2", old))
        assert "another time" in send()["error"]
        assert oct(channel.socket_path(cf).stat().st_mode & 0o777) == "0o600"
    finally:
        server.close()
    assert not channel.socket_path(cf).exists(), "closing removes the socket"
