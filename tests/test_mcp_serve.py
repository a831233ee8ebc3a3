"""Serving skills from the notebook (issue 32 Deliver 3): ``%skills serve mcp`` starts
``python -m skill_magics.mcp serve --http`` as a background process of the kernel
(core/mcp/serving.py), with real processes: FastMCP's skills client (not ours) lists and reads
what it serves over HTTP, a port in use is one line, ``--stop`` ends it, and a kernel killed
with SIGKILL takes its server with it (the lifeline pipe).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from skill_magics.core.base.errors import McpError
from skill_magics.core.mcp import serving

pytestmark = [pytest.mark.mcp, pytest.mark.timeout(180)]


def write_skills(root: Path) -> Path:
    for name, script in (("alpha-one", "print('a')\n"), ("beta-two", "print('b')\n")):
        skill = root / name
        (skill / "scripts").mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: The {name} skill. Use it in tests.\n---\n# {name}\n"
        )
        (skill / "scripts" / "run.py").write_text(script)
    return root


def gone(pid: int, within: float = 10.0) -> bool:
    """True when no process ``pid`` exists (a zombie of ours counts as gone once reaped)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if _zombie(pid):
            return True
        time.sleep(0.1)
    return False


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def fastmcp_reads(url: str) -> dict[str, dict[str, bytes]]:
    """Every skill FastMCP's skills client lists at ``url``, each read whole (it checks every
    digest and size itself)."""
    from fastmcp import Client
    from fastmcp.skills.client import SkillsClientExtension

    async def run() -> dict[str, dict[str, bytes]]:
        async with Client(url, extensions=[SkillsClientExtension()]) as client:
            out = {}
            for entry in await client.list_skills():
                skill = await client.read_skill(entry.uri)
                out[entry.frontmatter.name] = dict(skill.files)
            return out

    return asyncio.run(run())


def test_serve_magic_starts_lists_and_stops(
    ipython_shell: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skills = write_skills(tmp_path / "skills")
    shell = ipython_shell(skills)  # type: ignore[operator]
    assert shell.run_cell("%skills serve").error_in_exec is None
    assert "This kernel serves no skills" in capsys.readouterr().out
    # No folder given: the configured ones.
    assert shell.run_cell("%skills serve mcp").error_in_exec is None
    out = capsys.readouterr().out
    (info,) = serving.running()
    try:
        assert info.dirs == (skills,) and info.skills == ("alpha-one", "beta-two")
        assert f"Serving 2 skills (alpha-one, beta-two) at {info.url}, read-only" in out
        assert f"claude mcp add --transport http my-skills {info.url}" in out
        assert f'"servers": {{"my-skills": {{"type": "http", "url": "{info.url}"}}}}' in out
        assert f'[mcp_servers.my-skills]\n    url = "{info.url}"' in out
        assert f"%skills serve --stop {info.port}" in out
        # A client we did not write lists and reads them over HTTP, digests checked.
        got = fastmcp_reads(info.url)
        assert set(got) == {"alpha-one", "beta-two"}
        assert got["beta-two"]["scripts/run.py"] == b"print('b')\n"
        assert shell.run_cell("%skills serve").error_in_exec is None
        assert f"{info.url} · pid {info.pid} · serving {skills}" in capsys.readouterr().out
    finally:
        assert shell.run_cell(f"%skills serve --stop {info.port}").error_in_exec is None
    assert "Stopped 1 skills server" in capsys.readouterr().out
    assert gone(info.pid) and serving.running() == []
    # The port is free again (the kernel kept no copy of the socket).
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", info.port))
    # Unloading the extension stops what it serves, as it stops the warm servers.
    from skill_magics.notebook import extension

    assert shell.run_cell(f"%skills serve mcp --http {info.port}").error_in_exec is None
    (again,) = serving.running()
    assert again.port == info.port  # the port given is the port served
    extension.unload(shell)
    assert gone(again.pid) and serving.running() == []
    extension.load(shell)


def test_serve_magic_errors_are_one_line_and_leave_nothing_running(
    ipython_shell: object, tmp_path: Path
) -> None:
    skills = write_skills(tmp_path / "skills")
    shell = ipython_shell(skills)  # type: ignore[operator]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for line, expect in (
            (
                f"%skills serve mcp --http {port}",
                f"Port {port} on 127.0.0.1 is in use by another program: give another port "
                "(%skills serve mcp --http PORT), or leave --http out for a free one",
            ),
            (f"%skills serve mcp {tmp_path / 'nope'}", "is not a folder: give folders of skills"),
            ("%skills serve mcp --http 70000", "Port 70000 is not a TCP port"),
            ("%skills serve web", "say what to serve: mcp"),
            ("%skills serve --http 1", "say what to serve: mcp"),
            ("%skills serve --stop x", "--stop takes only a port"),
            ("%skills serve --stop 1 2", "--stop takes only a port"),
            ("%skills serve --stop 1", "This kernel serves nothing on port 1"),
        ):
            error = shell.run_cell(line).error_in_exec
            assert error is not None and expect in str(error), (line, error)
            assert "\n" not in str(error)
            assert serving.running() == []
    # No configured folder exists: nothing to serve, said so.
    shell.run_cell(f"%config SkillMagics.skill_dirs = [{str(tmp_path / 'none')!r}]")
    error = shell.run_cell("%skills serve mcp").error_in_exec
    assert error is not None and "No skill folder to serve: give folders (%skills serve" in str(
        error
    )


def test_a_planted_module_and_the_kernels_secrets_stay_out_of_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script run from the notebook's folder can write files there: ``mcp.py`` there must
    not stand in for the SDK in the server we start (``python -m`` would import it)."""
    skills = write_skills(tmp_path / "skills")
    work = tmp_path / "work"
    work.mkdir()
    marker = tmp_path / "planted-ran"
    (work / "mcp.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.chdir(work)
    monkeypatch.setenv("SKILL_MAGICS_TEST_KERNEL_SECRET", "s3cret")
    info = serving.serve([skills])
    try:
        assert info.skills == ("alpha-one", "beta-two")
        assert not marker.exists()
        # Nor does it get the kernel's secrets: only what a server of files needs.
        names = {
            item.split(b"=", 1)[0].decode()
            for item in Path(f"/proc/{info.pid}/environ").read_bytes().split(b"\0")
            if item
        }
        assert "SKILL_MAGICS_TEST_KERNEL_SECRET" not in names and "PATH" in names
    finally:
        serving.stop()


def test_the_same_port_twice_and_a_server_that_dies(tmp_path: Path) -> None:
    skills = write_skills(tmp_path / "skills")
    info = serving.serve([skills])
    try:
        with pytest.raises(McpError, match=rf"already serves skills on port {info.port}"):
            serving.serve([skills], port=info.port)
        # What must NOT be refused: a second server on another port.
        other = serving.serve([skills / "alpha-one"])  # a skill folder itself is a root too
        assert other.port != info.port and other.skills == ("alpha-one",)
        os.kill(other.pid, signal.SIGKILL)  # it dies on its own: listed as exited
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            states = {i.port: i.state for i in serving.running()}
            if states[other.port] is serving.ServeState.EXITED:
                break
            time.sleep(0.1)
        running, exited = serving.ServeState.RUNNING, serving.ServeState.EXITED
        assert states == {info.port: running, other.port: exited}
        dead = next(i for i in serving.running() if i.port == other.port)
        assert "exited (code -9)" in dead.line()
        # Its port can be served again: the new server replaces the exited one's entry.
        again = serving.serve([skills], port=other.port)
        assert again.pid != other.pid
        assert {i.port: i.state for i in serving.running()} == {
            info.port: running,
            other.port: running,
        }
        with pytest.raises(McpError, match="not a TCP port"):
            serving.serve([skills], port=80.5)  # type: ignore[arg-type]
    finally:
        assert serving.stop() == 2
    assert gone(info.pid) and serving.running() == []


@pytest.mark.kernel
def test_a_killed_kernel_takes_its_server_with_it(tmp_path: Path) -> None:
    """SIGKILL: no atexit runs in the kernel; the server sees its lifeline close and exits."""
    from kernel_fixtures import start_kernel

    skills = write_skills(tmp_path / "skills")
    with start_kernel() as k:
        r = k.execute("%load_ext skill_magics", allow_stdin=False)
        assert r.ok, r.error_text
        r = k.execute(f"%skills serve mcp {skills}", allow_stdin=False)
        assert r.ok, r.error_text
        r = k.execute(
            "import os; from skill_magics.core.mcp import serving; "
            "print(serving.running()[0].pid, serving.running()[0].port, os.getpid())",
            allow_stdin=False,
        )
        assert r.ok, r.error_text
        pid, port, kernel_pid = (int(x) for x in r.stdout.split())
        assert fastmcp_reads(f"http://127.0.0.1:{port}/mcp").keys() == {"alpha-one", "beta-two"}
        os.kill(kernel_pid, signal.SIGKILL)
        assert gone(pid), "the skills server outlived its kernel"


def test_an_ipv6_host_is_written_in_brackets() -> None:
    info = serving.ServedInfo("::1", 8765, (), 1, serving.ServeState.RUNNING, ())
    assert info.url == "http://[::1]:8765/mcp"
    assert serving.ServedInfo("127.0.0.1", 1, (), 1, serving.ServeState.RUNNING, ()).url == (
        "http://127.0.0.1:1/mcp"
    )


def test_a_web_page_cannot_reach_the_server_through_dns_rebinding(tmp_path: Path) -> None:
    """The server listens on 127.0.0.1 without a token: a page in the person's browser whose
    host name is rebound to 127.0.0.1 sends its own Host and Origin, which are refused, so no
    web page reads the skills; what must NOT be refused: a local client's own requests."""
    import http.client
    import json as _json

    skills = write_skills(tmp_path / "skills")
    info = serving.serve([skills])
    body = _json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    )

    def post(headers: dict[str, str]) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", info.port, timeout=10)
        try:
            conn.request(
                "POST",
                "/mcp",
                body,
                {
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    **headers,
                },
            )
            return conn.getresponse().status
        finally:
            conn.close()

    try:
        assert post({"Host": "attacker.example:80"}) in (400, 403, 421)
        assert post({"Origin": "http://attacker.example"}) in (400, 403)
        assert post({}) == 200  # the local client: Host 127.0.0.1:PORT, no foreign Origin
    finally:
        serving.stop()
