"""What a sandboxed run can reach (core/run/launching/sandbox_mounts.py), with real bubblewrap.

A run is given only what it needs, so unix sockets outside its folders, Jupyter's connection
files and credentials are out of reach; a workspace that would hand over $HOME or a socket
place is refused; the workspace's .git and venvs stay read-only. And what must keep working
does: the skill's venv, its managed (PEP 723) environment, node and bash scripts, the bundled
examples, reading the skill and the workspace.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import venv
from pathlib import Path

import pytest

from skill_magics.core.base import envdirs
from skill_magics.core.base.errors import SandboxUnavailableError
from skill_magics.core.base.status import AuditOutcome
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.launching import sandbox as sandboxing
from skill_magics.core.run.launching import sandbox_mounts

MODES = ["read-only", "workspace-write"]
ENTRY = 'if __name__ == "__main__":\n    main()\n'


class _UnixServer:
    """A unix socket server answering "pong": a filesystem path, or "@name" (abstract)."""

    def __init__(self, where: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if where.startswith("@"):
            self.sock.bind("\0" + where[1:])
        else:
            Path(where).parent.mkdir(parents=True, exist_ok=True)
            self.sock.bind(where)
        self.sock.listen()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong")

    def close(self) -> None:
        self.sock.close()


CONNECT_UNIX = (
    """\
import socket, sys

def main():
    for where in sys.argv[1:]:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        try:
            s.connect("\\0" + where[1:] if where.startswith("@") else where)
            print("got", where, s.recv(10).decode())
        except OSError as exc:
            print("refused", where, type(exc).__name__)
        finally:
            s.close()

"""
    + ENTRY
)


@pytest.mark.parametrize("network", [False, True], ids=["offline", "network-granted"])
@pytest.mark.parametrize("mode", MODES)
def test_unix_sockets_outside_the_workspace_are_unreachable(box, mode: str, network: bool):
    agent_dir = Path(tempfile.mkdtemp(prefix="ssh-"))  # where ssh-agent puts its socket
    places = {
        "elsewhere": str(box.elsewhere / "agent.sock"),  # a temp folder outside the workspace
        "home": str(box.home / ".1password" / "agent.sock"),  # under $HOME, on no deny list
        "tmp": str(agent_dir / "agent.1"),  # the host's own /tmp
        "workspace": str(box.ws / "app.sock"),  # inside the workspace: given, so reachable
        "abstract": f"@skill-magics-test-{os.getpid()}-{time.monotonic_ns()}",
    }
    servers = [_UnixServer(where) for where in places.values()]
    try:
        box.skill("probe", {"scripts/connect.py": CONNECT_UNIX})
        manager = box.manager(sandbox=mode, sandbox_network=["probe"] if network else [])
        res = manager.execute_skill_script("probe", "connect", argv=list(places.values()))
        assert res.exit_code == 0, res.stderr
        assert res.sandbox["network"] is network
        for name in ("elsewhere", "home", "tmp"):
            assert f"refused {places[name]}" in res.stdout, (name, res.stdout)
        assert f"got {places['workspace']} pong" in res.stdout
        # Abstract sockets belong to the network namespace: the host's are out of reach
        # unless the skill is granted the network (docs/sandbox.md).
        abstract = "got" if network else "refused"
        assert f"{abstract} {places['abstract']}" in res.stdout
        # Control: unsandboxed, the same script reaches every one of them.
        free = manager.execute_skill_script(
            "probe", "connect", argv=list(places.values()), sandbox="off"
        )
        assert free.stdout.count(" pong") == len(places), free.stdout
    finally:
        for server in servers:
            server.close()
        shutil.rmtree(agent_dir, ignore_errors=True)


READ_FILES = """\
#!/bin/bash
for f in "$@"; do
  if [ -d "$f" ]; then echo "LIST $f: $(ls -A "$f" 2>&1 | tr '\\n' ' ')"
  else cat "$f" 2>/dev/null && echo "READ $f" || echo "UNREADABLE $f"; fi
done
exit 0
"""


def _connection_file(folder: Path, name: str, key: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"key": key, "transport": "tcp", "shell_port": 1}))
    return path


@pytest.mark.parametrize("mode", MODES)
def test_jupyter_runtime_folders_are_never_readable_even_with_network(
    box, mode: str, monkeypatch: pytest.MonkeyPatch
):
    # The worst case: JUPYTER_RUNTIME_DIR inside the workspace, which the run is given.
    inside = _connection_file(box.ws / ".runtime", "kernel-1.json", "SIGNKEYINSIDE")
    default = _connection_file(
        box.home / ".local/share/jupyter/runtime", "kernel-2.json", "SIGNKEYDEFAULT"
    )
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(inside.parent))
    (box.ws / "notes.txt").write_text("WORKSPACEFILE\n")  # the rest of the workspace: readable
    box.skill("probe", {"scripts/read.sh": READ_FILES})
    manager = box.manager(sandbox=mode, sandbox_network=["probe"])
    argv = [str(inside), str(default), str(inside.parent), str(box.ws / "notes.txt")]
    res = manager.execute_skill_script("probe", "read", argv=argv)
    assert res.exit_code == 0 and res.sandbox["network"] is True, res.stderr
    assert "SIGNKEY" not in res.stdout
    assert f"UNREADABLE {inside}" in res.stdout and f"UNREADABLE {default}" in res.stdout
    assert f"LIST {inside.parent}:  " in res.stdout or f"LIST {inside.parent}: \n" in res.stdout
    assert "WORKSPACEFILE" in res.stdout
    free = manager.execute_skill_script("probe", "read", argv=argv, sandbox="off")
    assert "SIGNKEYINSIDE" in free.stdout and "SIGNKEYDEFAULT" in free.stdout


@pytest.mark.parametrize("mode", MODES)
def test_the_kernels_own_connection_file_is_hidden_wherever_it_is(
    box, mode: str, monkeypatch: pytest.MonkeyPatch
):
    """A kernel started with ``-f some/where.json`` outside any runtime folder: the file named
    on its command line is hidden; its neighbours are not."""
    conn = _connection_file(box.ws / "conf", "where.json", "SIGNKEYARGV")
    (box.ws / "conf" / "other.json").write_text('{"x": "NEIGHBOUR"}')
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(box.elsewhere))
    monkeypatch.setattr(sys, "argv", [sys.argv[0], "-f", str(conn)])
    box.skill("probe", {"scripts/read.sh": READ_FILES})
    manager = box.manager(sandbox=mode, sandbox_network=["probe"])
    res = manager.execute_skill_script(
        "probe", "read", argv=[str(conn), str(box.ws / "conf" / "other.json")]
    )
    assert "SIGNKEYARGV" not in res.stdout and f"UNREADABLE {conn}" in res.stdout
    assert "NEIGHBOUR" in res.stdout


READ_CONNECTION = (
    """\
import json, sys

def main():
    try:
        with open(sys.argv[1]) as fh:
            print("READ key", json.load(fh)["key"])
    except OSError as exc:
        print("unreadable", type(exc).__name__)

"""
    + ENTRY
)


@pytest.mark.parametrize("where", ["runtime-folder-in-workspace", "jupyter-client-default"])
def test_a_real_kernels_connection_file_is_unreadable_from_its_sandboxed_runs(
    tmp_path: Path, make_skill, bwrap: str, where: str
):
    """A real kernel (jupyter_client) whose connection file lies in a Jupyter runtime folder
    inside its own workspace, or where a bare KernelManager puts it (a tmpXXXX.json in
    $TMPDIR): no sandboxed run reads it, network granted or not, so none can sign a message
    to the kernel; an unsandboxed one can (the control)."""
    from kernel_fixtures import start_kernel

    work = tmp_path / "work"
    runtime = work / ".runtime"
    runtime.mkdir(parents=True)
    conn = runtime / "kernel-test.json" if where.startswith("runtime") else None
    make_skill(tmp_path / "skills", "probe", scripts={"scripts/read.py": READ_CONNECTION})
    code = f"""
import os
from ipykernel.kernelapp import IPKernelApp
from skill_magics.core.manager import SkillManager
m = SkillManager([{str(tmp_path / "skills")!r}], sandbox_network=["probe"])
cf = IPKernelApp.instance().abs_connection_file
print("FILE", cf)
for mode in ("read-only", "workspace-write", "off"):
    r = m.execute_skill_script("probe", "read", argv=[cf], sandbox=mode)
    print(mode, "->", r.stdout.strip(), r.stderr.strip()[-200:])
# The kernel's own file stays hidden when Jupyter's runtime folder is said to be elsewhere.
os.environ["JUPYTER_RUNTIME_DIR"] = {str(tmp_path / "elsewhere")!r}
r = m.execute_skill_script("probe", "read", argv=[cf], sandbox="workspace-write")
print("moved", "->", r.stdout.strip())
"""
    env = {"JUPYTER_RUNTIME_DIR": str(runtime)}
    with start_kernel(cwd=work, env=env, connection_file=conn) as k:
        key = k.km.session.key.decode()
        r = k.execute(code, timeout=120)
    assert r.ok, r.error_text
    out = r.stdout
    assert f"FILE {conn}" in out if conn else "FILE /" in out, out
    for mode in ("read-only", "workspace-write", "moved"):
        assert f"{mode} -> unreadable" in out, out
    assert f"off -> READ key {key}" in out  # unsandboxed: the key (the control)
    assert out.count(key) == 1


NEW_CREDENTIALS = {
    ".config/gh/hosts.yml": "GHTOKEN",
    ".pypirc": "PYPITOKEN",
    ".npmrc": "NPMTOKEN",
    ".cache/huggingface/token": "HFTOKEN",
}


@pytest.mark.parametrize("mode", MODES)
def test_gh_pypi_npm_and_hugging_face_tokens_are_unreadable(box, mode: str):
    for rel, token in NEW_CREDENTIALS.items():
        path = box.home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"secret = {token}\n")
    assert set(sandboxing.deny_paths()) >= {str(box.home / rel) for rel in NEW_CREDENTIALS}
    box.skill("c", {"scripts/c.sh": READ_FILES})
    argv = [str(box.home / rel) for rel in NEW_CREDENTIALS]
    res = box.manager(sandbox=mode).execute_skill_script("c", "c", argv=argv)
    assert res.exit_code == 0, res.stderr
    for token in NEW_CREDENTIALS.values():
        assert token not in res.stdout
    free = box.manager(sandbox="off").execute_skill_script("c", "c", argv=argv)
    assert all(token in free.stdout for token in NEW_CREDENTIALS.values())


@pytest.mark.parametrize("mode", MODES)
def test_deny_list_hides_credentials_inside_the_folders_a_run_is_given(
    box, mode: str, monkeypatch: pytest.MonkeyPatch
):
    """~/.cargo is given when ~/.cargo/bin is on PATH (its tools must run), but not its
    token; a ``sandbox_deny_read`` path inside the workspace is hidden, its neighbours not."""
    cargo = box.home / ".cargo"
    (cargo / "bin").mkdir(parents=True)
    (cargo / "bin" / "hello-cargo").write_text("#!/bin/sh\necho hello from cargo\n")
    (cargo / "bin" / "hello-cargo").chmod(0o755)
    (cargo / "credentials.toml").write_text('[registry]\ntoken = "CARGOTOKEN"\n')
    monkeypatch.setenv("PATH", f"{cargo / 'bin'}:{os.environ['PATH']}")
    private = box.ws / "private"
    private.mkdir()
    (private / "secret.txt").write_text("WSSECRET\n")
    (box.ws / "public.txt").write_text("WSPUBLIC\n")
    box.skill("c", {"scripts/c.sh": "hello-cargo\n" + READ_FILES.split("\n", 1)[1]})
    manager = box.manager(sandbox=mode, sandbox_deny_read=[str(private)])
    argv = [
        str(cargo / "credentials.toml"),
        str(private / "secret.txt"),
        str(box.ws / "public.txt"),
    ]
    res = manager.execute_skill_script("c", "c", argv=argv)
    assert "hello from cargo" in res.stdout, res.stderr
    assert "CARGOTOKEN" not in res.stdout and "WSSECRET" not in res.stdout
    assert "WSPUBLIC" in res.stdout


@pytest.mark.parametrize("mode", MODES)
def test_a_deny_path_given_as_one_string_is_one_path(box, mode: str):
    """``sandbox_deny_read="<ws>/my secrets, 2026"`` (a string: Python keyword settings) is one
    path, spaces and comma included: it was split like a list of names (into "<ws>/my",
    "secrets" and "2026"), and the folder itself stayed readable."""
    private = box.ws / "my secrets, 2026"
    private.mkdir()
    (private / "secret.txt").write_text("WSSECRET\n")
    (box.ws / "public.txt").write_text("WSPUBLIC\n")
    box.skill("c", {"scripts/c.sh": READ_FILES})
    manager = box.manager(sandbox=mode, sandbox_deny_read=str(private))
    argv = [str(private / "secret.txt"), str(box.ws / "public.txt")]
    res = manager.execute_skill_script("c", "c", argv=argv)
    assert "WSSECRET" not in res.stdout and "WSPUBLIC" in res.stdout, res.stdout + res.stderr
    assert manager.settings.sandbox_deny_read == (str(private),)


WRITE_MARKER = '#!/bin/bash\necho ran > "$1/ran.txt"\necho ran\n'


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", ["home", "holds-home", "tmp"])
def test_a_workspace_that_is_or_holds_home_or_tmp_is_refused(
    box, mode: str, where: str, monkeypatch: pytest.MonkeyPatch
):
    if where == "tmp":  # a $HOME outside /tmp, so /tmp is refused as a socket place
        monkeypatch.setenv("HOME", "/nonexistent-home-for-test")
    target = {"home": box.home, "holds-home": box.root, "tmp": Path("/tmp")}[where]
    monkeypatch.chdir(target)
    box.skill("w", {"scripts/w.sh": WRITE_MARKER})
    manager = box.manager(sandbox=mode)
    with pytest.raises(SandboxUnavailableError) as err:
        manager.execute_skill_script("w", "w", argv=[str(box.elsewhere)])
    message = str(err.value)
    assert "\n" not in message and f"Sandbox '{mode}' refused" in message
    subfolder = "/tmp/work" if where == "tmp" else str(box.home / "work")
    assert f"a subfolder such as {subfolder} " in message, message
    assert not (box.elsewhere / "ran.txt").exists()  # nothing started
    last = manager.audit.records()[-1]
    assert last.outcome == AuditOutcome.REFUSED and "refused" in (last.reason or "")


@pytest.mark.parametrize("mode", MODES)
def test_a_project_folder_in_home_is_not_refused(box, mode: str, monkeypatch):
    project = box.home / "projects" / "report"
    project.mkdir(parents=True)
    (project / "data.csv").write_text("a,b\n1,2\n")
    monkeypatch.chdir(project)
    box.skill("w", {"scripts/w.sh": 'cat data.csv\necho out > out.txt && echo "WROTE"\nexit 0\n'})
    res = box.manager(sandbox=mode).execute_skill_script("w", "w")
    assert res.exit_code == 0, res.stderr
    assert "a,b" in res.stdout
    assert ("WROTE" in res.stdout) is (mode == "workspace-write")
    assert (project / "out.txt").exists() is (mode == "workspace-write")


TAMPER = """\
#!/bin/bash
SITE="$1"  # the .venv's site-packages
try() { if ( eval "$1" ) 2>/dev/null; then echo "CHANGED: $1"; else echo "kept: $1"; fi; }
try 'echo evil > .git/hooks/pre-commit'
try 'echo "[core] hooksPath = /x" >> .git/config'
try 'echo "import os" > "$SITE/evil.pth"'
try 'echo evil >> .venv/bin/activate'
try 'echo evil > venv/bin/evil'
try 'mkdir -p src && echo ok > src/ok.txt'
try 'echo ok > data-venv/notes.txt'
exit 0
"""


def test_git_and_virtual_environments_in_the_workspace_stay_read_only(box):
    """Code that runs later, outside the sandbox (git hooks and config, a venv's scripts and
    .pth files), stays read-only in workspace-write; the rest of the workspace is writable."""
    subprocess.run(["git", "init", "-q", str(box.ws)], check=True)
    config_before = (box.ws / ".git" / "config").read_text()
    for name in (".venv", "venv"):
        venv.create(box.ws / name, with_pip=False, symlinks=True)
    activate = (box.ws / ".venv" / "bin" / "activate").read_text()
    (box.ws / "data-venv").mkdir()  # an ordinary folder: writable
    box.skill("t", {"scripts/t.sh": TAMPER})
    site = next((box.ws / ".venv").glob("lib/python*/site-packages"))
    res = box.manager(sandbox="workspace-write").execute_skill_script("t", "t", argv=[str(site)])
    assert res.exit_code == 0, res.stderr
    changed = [line for line in res.stdout.splitlines() if line.startswith("CHANGED")]
    assert changed == [
        "CHANGED: mkdir -p src && echo ok > src/ok.txt",
        "CHANGED: echo ok > data-venv/notes.txt",
    ], res.stdout
    assert not (box.ws / ".git" / "hooks" / "pre-commit").exists()
    assert (box.ws / ".git" / "config").read_text() == config_before
    assert (box.ws / ".venv" / "bin" / "activate").read_text() == activate
    assert not list((box.ws / ".venv").glob("lib/python*/site-packages/evil.pth"))
    assert not (box.ws / "venv" / "bin" / "evil").exists()
    assert (box.ws / "src" / "ok.txt").read_text() == "ok\n"
    # Unsandboxed, the same script changes all of them: the refusals are the sandbox's.
    free = box.manager(sandbox="off").execute_skill_script("t", "t", argv=[str(site)])
    assert free.stdout.count("CHANGED") == 7, free.stdout


# -- what must keep working --------------------------------------------------------------------

PROBE_PY = (
    """\
import sys

import probe_mod

def main():
    print("module", probe_mod.VALUE, "prefix", sys.prefix)

"""
    + ENTRY
)


def _add_module(env: Path) -> None:
    site = next(env.glob("lib/python*/site-packages"))
    (site / "probe_mod.py").write_text("VALUE = 'from-the-env'\n")


@pytest.mark.parametrize("mode", MODES)
def test_a_skill_venv_python_runs_inside(box, mode: str):
    skill = box.skill("v", {"scripts/p.py": PROBE_PY})
    venv.create(skill / "venv", with_pip=False, symlinks=True)
    _add_module(skill / "venv")
    res = box.manager(sandbox=mode).execute_skill_script("v", "p")
    assert res.exit_code == 0, res.stderr
    assert f"module from-the-env prefix {skill / 'venv'}" in res.stdout


PEP723 = (
    """\
# /// script
# requires-python = ">=3.10"
# dependencies = ["probe-mod"]
# ///
import sys

import probe_mod
import psutil  # the kernel's, seen through the managed env's .pth

def main():
    print("module", probe_mod.VALUE, "psutil", bool(psutil.pid_exists(1)), "prefix", sys.prefix)

"""
    + ENTRY
)


@pytest.mark.parametrize("mode", MODES)
def test_a_managed_environment_runs_a_pep723_script_inside(
    box, mode: str, monkeypatch: pytest.MonkeyPatch
):
    """The managed env in its default place (under ~/.cache, behind the `current` link)
    with a .pth naming the kernel's site-packages, as envbuild makes it."""
    monkeypatch.delenv(envdirs.ENV_DIR_VAR, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    skill = box.skill("m", {"scripts/p.py": PEP723})
    home = envdirs.skill_env_home(skill)
    assert str(home).startswith(str(box.home / ".cache"))
    env = home / "env-test"
    venv.create(env, with_pip=False, symlinks=True)
    _add_module(env)
    site = next(env.glob("lib/python*/site-packages"))
    kernel_sites = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    (site / "_kernel.pth").write_text("\n".join(kernel_sites) + "\n")
    (home / envdirs.CURRENT).symlink_to(env.name)
    res = box.manager(sandbox=mode).execute_skill_script("m", "p")
    assert res.exit_code == 0, res.stderr
    assert "module from-the-env psutil True" in res.stdout
    assert str(home / envdirs.CURRENT) in res.stdout


NODE_SCRIPT = """\
const fs = require("fs");
const path = require("path");
let input = "";
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => {
  const args = JSON.parse(input || "{}");
  const asset = fs.readFileSync(path.join(process.env.SKILL_BASE_DIR, "assets/a.txt"), "utf8");
  const data = fs.readFileSync(path.join(process.env.SKILL_WORKSPACE, "in.txt"), "utf8");
  console.log(`node ${args.n} ${asset.trim()} ${data.trim()}`);
});
"""
BASH_SCRIPT = """\
#!/bin/bash
read -r line
echo "bash $line $(cat "$SKILL_BASE_DIR/assets/a.txt") $(cat "$SKILL_WORKSPACE/in.txt")"
"""


@pytest.mark.parametrize("mode", MODES)
def test_node_and_bash_scripts_read_the_skill_and_the_workspace(box, mode: str):
    assert shutil.which("node"), "node is needed for this test (apt-get install nodejs)"
    skill = box.skill("nb", {"scripts/n.js": NODE_SCRIPT, "scripts/b.sh": BASH_SCRIPT})
    (skill / "assets").mkdir()
    (skill / "assets" / "a.txt").write_text("ASSET\n")
    (box.ws / "in.txt").write_text("WSDATA\n")
    manager = box.manager(sandbox=mode)
    node = manager.execute_skill_script("nb", "n", {"n": 3})
    assert node.stdout == "node 3 ASSET WSDATA\n", node.stderr
    bash = manager.execute_skill_script("nb", "b", {"n": 3})
    assert bash.stdout == 'bash {"n": 3} ASSET WSDATA\n', bash.stderr


@pytest.mark.parametrize("mode", MODES)
def test_the_bundled_examples_run_sandboxed(mode: str, examples_dir: Path, box):
    (box.ws / "cities.csv").write_text("city,temp\nOslo,4\nLima,19\n")
    manager = SkillManager([examples_dir], sandbox=mode)
    csv = manager.execute_skill_script("csv-profiler", "profile", {"csv": "a,b\n1,2\n3,4\n"})
    assert csv.exit_code == 0 and json.loads(csv.stdout)["rows"] == 2, csv.stderr
    conv = manager.execute_skill_script(
        "unit-converter", "convert", {"value": 1, "from": "km", "to": "m"}
    )
    assert conv.exit_code == 0 and "1000" in conv.stdout, conv.stderr
    words = manager.execute_skill_script(
        "text-tools", "wordcount", argv=["--file", str(box.ws / "cities.csv")]
    )
    assert words.exit_code == 0 and words.stdout.strip(), words.stderr


def test_system_folders_and_tmp_are_never_given_whole() -> None:
    """The rule behind the refusals, on the real paths of this machine."""
    home = os.path.realpath(os.path.expanduser("~"))
    for folder in ("/", home, "/tmp", "/run", "/var", os.path.dirname(home)):
        assert sandbox_mounts.private_place(folder), folder
    for folder in (os.path.join(home, "project"), "/tmp/x/project", "/opt/app"):
        assert sandbox_mounts.private_place(folder) == "", folder


@pytest.mark.parametrize("mode", MODES)
def test_sandbox_read_gives_a_data_folder_and_never_home(box, mode: str):
    data = box.elsewhere / "datasets"
    data.mkdir()
    (data / "t.csv").write_text("DATAFOLDER\n")
    box.skill("r", {"scripts/r.sh": READ_FILES})
    box.skill("w", {"scripts/w.sh": 'echo x > "$1/new.txt" 2>/dev/null || echo RO\n'})
    argv = [str(data / "t.csv")]
    plain = box.manager(sandbox=mode).execute_skill_script("r", "r", argv=argv)
    assert "DATAFOLDER" not in plain.stdout  # not given: not there
    given = box.manager(sandbox=mode, sandbox_read=[str(data)])
    res = given.execute_skill_script("r", "r", argv=argv + [str(box.home / ".ssh/id_rsa")])
    assert "DATAFOLDER" in res.stdout and "PRIVATE KEY" not in res.stdout
    if mode == "workspace-write":  # given read-only, even in workspace-write
        assert "RO" in given.execute_skill_script("w", "w", argv=[str(data)]).stdout
        assert not (data / "new.txt").exists()
    with pytest.raises(SandboxUnavailableError, match="sandbox_read names your home folder"):
        box.manager(sandbox=mode, sandbox_read=["~"]).execute_skill_script("r", "r", argv=argv)


@pytest.mark.parametrize("mode", MODES)
def test_a_workspace_under_var_tmp_works(box, mode: str, monkeypatch: pytest.MonkeyPatch):
    """/var/tmp is the private /tmp inside, unless a given folder lies there."""
    ws = Path(tempfile.mkdtemp(prefix="skill-magics-test-", dir="/var/tmp"))
    try:
        (ws / "in.txt").write_text("VARTMP\n")
        monkeypatch.chdir(ws)
        box.skill("v", {"scripts/v.sh": "cat in.txt\necho x > out.txt 2>/dev/null && echo W\n"})
        res = box.manager(sandbox=mode).execute_skill_script("v", "v")
        assert res.exit_code in (0, 1) and "VARTMP" in res.stdout, res.stderr
        assert ("W" in res.stdout.split()) is (mode == "workspace-write")
    finally:
        shutil.rmtree(ws, ignore_errors=True)
