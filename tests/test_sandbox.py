"""Sandboxed runs with real bubblewrap and real processes (run/launching/sandbox.py + executor).

These tests need a working ``bwrap`` (tests/sandbox_support.py: without one they fail when
``SKILL_MAGICS_SANDBOX_REQUIRED=1``, as in ``make test`` and CI, else skip loudly).
"""

from __future__ import annotations

import json
import os
import socket
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest
from manager_support import run_plan

from skill_magics.core.base.errors import SandboxUnavailableError
from skill_magics.core.base.status import AuditOutcome
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.launching import sandbox as sandboxing

WRITER = """\
    #!/bin/bash
    # $1: a folder to write into
    echo data > "$1/out.txt" && echo "wrote $1"
    """


def test_workspace_write_can_write_the_workspace_and_its_tmp(box) -> None:
    marker = f"private-tmp-{os.getpid()}-{time.monotonic_ns()}"
    box.skill("w", {"scripts/w.sh": WRITER + f'echo x > "$TMPDIR/{marker}" && echo tmp-ok\n'})
    res = box.manager().execute_skill_script("w", "w", argv=[str(box.ws)])
    assert res.exit_code == 0, res.stderr
    assert (box.ws / "out.txt").read_text() == "data\n"
    assert res.sandbox is not None
    assert res.sandbox["mode"] == "workspace-write"
    assert res.sandbox["network"] is False
    assert res.sandbox["writable"] == [str(box.ws.resolve()), sandboxing.PRIVATE_TMP]
    assert "tmp-ok" in res.stdout
    # The private /tmp (a tmpfs) went with the run: nothing of it reached the host's.
    assert not (Path("/tmp") / marker).exists()
    assert not (Path(os.environ.get("TMPDIR", "/tmp")) / marker).exists()


def test_workspace_write_cannot_write_anywhere_else(box) -> None:
    planted = Path("/tmp") / f"planted-{os.getpid()}-{time.monotonic_ns()}"
    planted.write_text("the host's /tmp\n")
    script = """\
        #!/bin/bash
        for d in "$@"; do echo x > "$d/escaped.txt" 2>/dev/null && echo "WROTE $d"; done
        echo x > "$TMPDIR/t" && echo "tmp ok"
        test "$TMPDIR" = /tmp && test ! -e "/tmp/$PLANTED" && echo "tmp private"
        mkdir -p "$XDG_CACHE_HOME/tool" && echo "cache ok"
        echo x > "$SKILL_BASE_DIR/out-in-skill.txt" 2>/dev/null && echo "WROTE skill"
        exit 0
        """
    skill = box.skill("w", {"scripts/w.sh": script.replace("$PLANTED", planted.name)})
    targets = [box.elsewhere, box.home, skill, skill / "scripts", Path("/etc"), Path("/usr")]
    res = box.manager().execute_skill_script(
        "w", "w", argv=[*(str(t) for t in targets), str(box.root)]
    )
    planted.unlink()
    assert res.exit_code == 0, res.stderr
    assert "WROTE" not in res.stdout.replace(f"WROTE {box.root}\n", "")
    assert "tmp ok" in res.stdout and "cache ok" in res.stdout and "tmp private" in res.stdout
    # box.root lies in /tmp: inside, it is a folder of the run's private /tmp (scratch space
    # gone with the run), so a write there may succeed but never reaches the host.
    for target in [*targets, box.root]:
        assert not (target / "escaped.txt").exists()
    assert not (skill / "out-in-skill.txt").exists()
    # The same script without the sandbox does write: the refusals above are the sandbox's.
    res = box.manager(sandbox="off").execute_skill_script("w", "w", argv=[str(box.elsewhere)])
    assert f"WROTE {box.elsewhere}" in res.stdout


def test_skill_inside_the_workspace_stays_read_only(box, make_skill) -> None:
    inner = make_skill(
        box.ws / "skills",
        "inner",
        scripts={"scripts/s.sh": 'echo x > "$SKILL_BASE_DIR/s.txt" || echo RO\n'},
    )
    res = SkillManager([box.ws / "skills"], sandbox="workspace-write").execute_skill_script(
        "inner", "s"
    )
    assert "RO" in res.stdout
    assert not (inner / "s.txt").exists()


def test_read_only_mode_writes_only_its_tmp(box) -> None:
    box.skill("w", {"scripts/w.sh": WRITER + 'echo y > "$TMPDIR/ok" && echo tmp-ok\n'})
    res = box.manager(sandbox="read-only").execute_skill_script("w", "w", argv=[str(box.ws)])
    assert not (box.ws / "out.txt").exists()
    assert "tmp-ok" in res.stdout
    assert res.sandbox["mode"] == "read-only"
    assert len(res.sandbox["writable"]) == 1


CAT = """\
    #!/bin/bash
    for f in "$@"; do cat "$f" 2>/dev/null && echo "READ $f"; done
    exit 0
    """


def test_credentials_under_home_are_unreadable(box) -> None:
    extra = box.root / "private.txt"
    extra.write_text("CUSTOMSECRET\n")
    box.skill("c", {"scripts/c.sh": CAT})
    files = [
        box.home / ".ssh" / "id_rsa",
        box.home / ".aws" / "credentials",
        box.home / ".netrc",
        extra,
    ]
    argv = [str(f) for f in files]
    manager = box.manager(sandbox_deny_read=[str(extra)])
    res = manager.execute_skill_script("c", "c", argv=argv)
    assert res.exit_code == 0, res.stderr
    for secret in ("FAKE PRIVATE KEY", "FAKEAWS", "FAKENETRC", "CUSTOMSECRET", "READ"):
        assert secret not in res.stdout
    # Control: unsandboxed, the same script reads them all.
    open_res = box.manager(sandbox="off").execute_skill_script("c", "c", argv=argv)
    assert "FAKE PRIVATE KEY" in open_res.stdout and "CUSTOMSECRET" in open_res.stdout


def test_deny_list_follows_home_and_hides_a_symlinked_credential_folder(box) -> None:
    real = box.root / "keys"
    real.mkdir()
    (real / "id_ed25519").write_text("LINKEDKEY\n")
    (box.home / ".ssh" / "id_rsa").unlink()
    (box.home / ".ssh").rmdir()
    (box.home / ".ssh").symlink_to(real)
    box.skill("c", {"scripts/c.sh": CAT})
    res = box.manager().execute_skill_script(
        "c", "c", argv=[str(box.home / ".ssh" / "id_ed25519"), str(real / "id_ed25519")]
    )
    assert "LINKEDKEY" not in res.stdout


class _Server:
    """A TCP server on 127.0.0.1 answering "pong" (the host's loopback)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong")

    def close(self) -> None:
        # Wake the accept first: a socket closed under a blocked accept() stays listening
        # until the accept returns (a later test in this process once read "pong" from a
        # port it did not open).
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)


CONNECT = """\
    import socket, sys
    try:
        with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3) as s:
            print("got", s.recv(10).decode())
    except OSError as exc:
        print("refused", type(exc).__name__)
    """


def test_no_network_unless_granted_for_that_skill(box) -> None:
    server = _Server()
    try:
        box.skill("offline", {"scripts/c.py": CONNECT})
        box.skill("online", {"scripts/c.py": CONNECT})
        manager = box.manager(sandbox_network=["online"])
        port = [str(server.port)]
        denied = manager.execute_skill_script("offline", "c", argv=port)
        assert "refused" in denied.stdout and "pong" not in denied.stdout
        assert denied.sandbox["network"] is False
        granted = manager.execute_skill_script("online", "c", argv=port)
        assert "got pong" in granted.stdout, granted.stderr
        assert granted.sandbox["network"] is True
        # A grant given later (what the approval panel does) counts for the next run.
        manager.grant_network("offline", by="test")
        assert "got pong" in manager.execute_skill_script("offline", "c", argv=port).stdout
    finally:
        server.close()
    grants = [r for r in manager.audit.records() if r.outcome == AuditOutcome.NETWORK_GRANTED]
    assert [(r.skill, "by test" in (r.reason or "")) for r in grants] == [
        ("online", False),
        ("offline", True),
    ]


def _alive_with(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if marker in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


def _wait_gone(marker: str, seconds: float = 3.0) -> list[psutil.Process]:
    deadline = time.monotonic() + seconds
    while (alive := _alive_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def test_timeout_kills_a_background_child_inside_the_sandbox(box) -> None:
    marker = f"sandbox-bg-{os.getpid()}-{time.monotonic_ns()}"
    script = f"""\
        #!/bin/bash
        bash -c 'exec -a {marker} sleep 300' &
        echo started
        sleep 300
        """
    box.skill("t", {"scripts/t.sh": script})
    started = time.monotonic()
    res = box.manager().execute_skill_script("t", "t", timeout=1)
    assert res.timed_out and res.exit_code == 124
    assert time.monotonic() - started < 10
    assert "started" in res.stdout
    assert _wait_gone(marker) == []


def test_nothing_started_inside_outlives_a_finished_run(box) -> None:
    marker = f"sandbox-left-{os.getpid()}-{time.monotonic_ns()}"
    script = f"""\
        #!/bin/bash
        setsid bash -c 'exec -a {marker} sleep 300' </dev/null >/dev/null 2>&1 &
        echo done
        """
    box.skill("l", {"scripts/l.sh": script})
    res = box.manager().execute_skill_script("l", "l")
    assert res.exit_code == 0 and "done" in res.stdout
    assert _wait_gone(marker) == []


def test_exit_codes_signals_output_caps_and_stop_are_unchanged(box) -> None:
    box.skill(
        "s",
        {
            "scripts/exit3.sh": "exit 3\n",
            "scripts/kill9.sh": "kill -KILL $$\n",
            "scripts/segv.py": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
            "scripts/big.sh": "head -c 100000 /dev/zero | tr '\\0' x\n",
            "scripts/slow.sh": "echo begin\nsleep 300\n",
        },
    )
    manager = box.manager(max_output_size=1000)
    assert manager.execute_skill_script("s", "exit3").exit_code == 3
    killed = manager.execute_skill_script("s", "kill9")
    assert (killed.exit_code, killed.signal) == (-9, "SIGKILL")
    segv = manager.execute_skill_script("s", "segv")
    assert (segv.exit_code, segv.signal) == (-11, "SIGSEGV")
    big = manager.execute_skill_script("s", "big")
    assert big.stdout_truncated and len(big.stdout) == 1000 and big.stdout_bytes == 100000
    # Stop (the cancel event) ends the run the way it does without the sandbox.
    plan = manager.plan("s", "slow")
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    stopped = run_plan(manager, plan, cancel=cancel)
    assert (stopped.exit_code, stopped.signal) == (-15, "SIGTERM")
    assert "begin" in stopped.stdout


def test_keyboard_interrupt_kills_the_sandboxed_group(box) -> None:
    import signal as sig

    marker = f"sandbox-int-{os.getpid()}-{time.monotonic_ns()}"
    box.skill("i", {"scripts/i.sh": f"exec -a {marker} sleep 300\n"})
    manager = box.manager()
    plan = manager.plan("i", "i")
    # A background job of a non-interactive shell inherits SIGINT ignored: install Python's.
    old = sig.signal(sig.SIGINT, sig.default_int_handler)
    try:
        threading.Timer(0.5, os.kill, (os.getpid(), sig.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            run_plan(manager, plan)
    finally:
        sig.signal(sig.SIGINT, old)
    assert _wait_gone(marker) == []
    last = manager.audit.records()[-1]
    assert last.outcome == AuditOutcome.INTERRUPTED and last.sandbox is not None


def test_audit_records_the_sandbox_profile(box, tmp_path: Path) -> None:
    box.skill("w", {"scripts/w.sh": "echo hi\n"})
    log = tmp_path / "audit.jsonl"
    manager = box.manager(audit_log=log)
    manager.execute_skill_script("w", "w")
    line = json.loads(log.read_text().splitlines()[-1])
    assert line["outcome"] == "completed"
    assert line["sandbox"]["mode"] == "workspace-write"
    assert line["sandbox"]["network"] is False
    assert line["sandbox"]["writable"][0] == str(box.ws.resolve())


def test_approval_request_shows_the_profile(box) -> None:
    box.skill("w", {"scripts/w.sh": "echo hi\n"})
    plan = box.manager(sandbox_network="w").plan("w", "w")
    info = plan.request.sandbox
    assert info is not None and info.mode == "workspace-write" and info.network is True
    assert info.writable == (str(box.ws.resolve()), sandboxing.PRIVATE_TMP)
    assert box.manager(sandbox="off").plan("w", "w").request.sandbox is None


def test_session_approval_covers_only_runs_confined_no_less(box) -> None:
    """A "Yes in session" given for a sandboxed run does not carry over to the same skill
    run with the sandbox off, or with network it did not have; stricter runs need no ask."""
    from manager_support import RecordingApprover

    from skill_magics.core.base.errors import ApprovalDeclined
    from skill_magics.core.run.gating.approval import Decision

    box.skill("w", {"scripts/w.sh": "echo hi\n"})
    manager = box.manager(sandbox="workspace-write")
    approver = RecordingApprover(Decision.YES_IN_SESSION)
    assert manager.execute_skill_script("w", "w", approver=approver).exit_code == 0
    assert len(approver.requests) == 1
    for mode in ("workspace-write", "read-only"):  # as strict or stricter: not asked again
        assert manager.execute_skill_script("w", "w", approver=approver, sandbox=mode).success
    assert len(approver.requests) == 1
    approver.decision = Decision.NO
    with pytest.raises(ApprovalDeclined):
        manager.execute_skill_script("w", "w", approver=approver, sandbox="off")
    assert len(approver.requests) == 2
    manager.grant_network("w")
    with pytest.raises(ApprovalDeclined):
        manager.execute_skill_script("w", "w", approver=approver)
    assert len(approver.requests) == 3  # network it was not approved with: asked again


def test_per_run_mode_overrides_the_manager_setting(box) -> None:
    box.skill("w", {"scripts/w.sh": WRITER})
    manager = box.manager(sandbox="off")
    res = manager.execute_skill_script("w", "w", argv=[str(box.elsewhere)], sandbox="read-only")
    assert not (box.elsewhere / "out.txt").exists() and res.sandbox["mode"] == "read-only"


FAKE_BWRAP = """\
#!/bin/sh
echo "bwrap: No permissions to create new namespace, likely because the kernel does not" >&2
exit 1
"""


@pytest.mark.parametrize("kind", ["missing", "not-permitted"])
def test_explicit_mode_refuses_and_auto_runs_unsandboxed_with_a_note(
    box, monkeypatch: pytest.MonkeyPatch, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    if kind == "missing":
        monkeypatch.setenv(sandboxing.BWRAP_ENV_VAR, str(box.root / "no-such-bwrap"))
    else:
        fake = box.root / f"fake-bwrap-{time.monotonic_ns()}"  # a fresh path: a fresh probe
        fake.write_text(FAKE_BWRAP)
        fake.chmod(0o755)
        monkeypatch.setenv(sandboxing.BWRAP_ENV_VAR, str(fake))
    box.skill("w", {"scripts/w.sh": WRITER})
    manager = box.manager()
    with pytest.raises(SandboxUnavailableError) as err:
        manager.execute_skill_script("w", "w", argv=[str(box.elsewhere)])
    message = str(err.value)
    assert "\n" not in message and "refused" in message
    assert ("not installed" in message or "not an executable" in message) or (
        "namespaces" in message
    )
    assert not (box.elsewhere / "out.txt").exists()  # nothing started
    assert manager.audit.records()[-1].outcome == AuditOutcome.REFUSED
    # auto: runs, unsandboxed, and says so (in the result, the audit and the log).
    with caplog.at_level("WARNING", logger="skill_magics.checks"):
        res = manager.execute_skill_script("w", "w", argv=[str(box.elsewhere)], sandbox="auto")
    assert (box.elsewhere / "out.txt").exists()
    assert res.sandbox["mode"] == "off" and res.sandbox["note"].startswith("not sandboxed: ")
    assert manager.audit.records()[-1].sandbox["note"] == res.sandbox["note"]


def test_mode_names_are_checked(box, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sandboxing.check_mode("Workspace_Write") == "workspace-write"
    with pytest.raises(ValueError, match="use one of off, read-only, workspace-write, auto"):
        SkillManager([box.skills], sandbox="strict")
    monkeypatch.setenv(sandboxing.ENV_VAR, "read-only")
    assert SkillManager([box.skills]).settings.sandbox == "read-only"
    monkeypatch.setenv(sandboxing.ENV_VAR, "nope")
    with pytest.raises(ValueError, match="SKILL_MAGICS_SANDBOX"):
        SkillManager([box.skills])


def test_workspace_write_refuses_the_root_as_workspace(box, monkeypatch) -> None:
    box.skill("w", {"scripts/w.sh": "echo hi\n"})
    monkeypatch.chdir("/")
    with pytest.raises(SandboxUnavailableError, match="workspace is the root folder /"):
        box.manager().execute_skill_script("w", "w")


def test_python_skill_caches_work_inside(box) -> None:
    script = textwrap.dedent(
        """\
        import os, pathlib
        cache = pathlib.Path(os.environ["XDG_CACHE_HOME"]) / "tool"
        cache.mkdir(parents=True)
        (cache / "x").write_text("1")
        print("cache", os.environ["MPLCONFIGDIR"].startswith(os.environ["TMPDIR"]))
        """
    )
    box.skill("p", {"scripts/p.py": script})
    res = box.manager().execute_skill_script("p", "p")
    assert res.exit_code == 0, res.stderr
    assert "cache True" in res.stdout
