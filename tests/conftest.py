"""Shared fixtures: real skill directories on disk, and the bundled example skills.

``make_skill`` writes a complete skill (SKILL.md, scripts, any other files) so tests exercise
real files, never mocks::

    def test_something(make_skill, tmp_path):
        skill_dir = make_skill(tmp_path, "pdf-tools", scripts={"scripts/extract.py": "print(1)"})
        manager = SkillManager([tmp_path])

``examples_dir`` is the path of ``skill_magics/examples/skills`` (csv-profiler, text-tools,
unit-converter, demo-behaviours); ``example_manager`` is a SkillManager over it with no
approver (the test is the caller who decided).
"""

from __future__ import annotations

import os
import signal
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

try:  # (the PyYAML floor's venv runs a few modules without it)
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover
    _hypothesis_settings = None
else:
    # No per-example deadline: a deadline is a timed test (200 ms an example), and a busy
    # 2-core CI machine stretched one example of test_context_xml to 361 ms; timing lives in
    # bench/. Everything else is Hypothesis's default.
    _hypothesis_settings.register_profile("skill-magics", deadline=None)
    _hypothesis_settings.load_profile("skill-magics")

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "skill_magics" / "examples" / "skills"
# The conformance corpus holds skills (one ships its own test_skill.py), not our tests.
collect_ignore_glob = ["conformance/*"]
# SKILL_MAGICS_TEST_SHARD=K/N: one of N balanced parts of the run (tests/sharding.py)
pytest_plugins = ["sharding"]


def pytest_configure(config: pytest.Config) -> None:
    """Run as from an interactive shell, however the suite was started.

    ``make test &`` and ``nohup`` start pytest with SIGINT ignored; every process the tests
    start (terminal IPython, kernels, scripts) would inherit that, and Ctrl-C, Interrupt and
    Stop would reach none of them (issue 44). A Python handler is reset to the default at
    exec, an ignored signal is not: so put Python's own handler back.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# Test modules whose subject is the same under every Python and every ipykernel of the
# matrices: an outside program (a terminal, a wheel build, npm's skills CLI, the demo venv, a
# matrix script) or the docs. The main venv runs them; the other Python's run and the kernel
# matrix leave them out (`-m "not main_only"` in the Makefile and scripts/kernel-matrix.sh), so
# CI spends its minutes where a version can make a difference (issue 39: CI under 15 minutes).
MAIN_ONLY = {
    "test_terminal_ipython": "IPython's terminal over a pty: one IPython for every Python",
    "test_doc_examples": "the docs' examples: text, not version-dependent code",
    "test_ship_shared_root": "the shipped files of the wheel",
    "test_ship_integrity": "the shipped files of the wheel",
    "test_packaging": "a wheel build",
    "test_demo": "make demo's venv",
    "test_sources_foreign": "npm's skills CLI against our locks",
    "test_python_matrix": "the matrix script itself",
    "test_colab_pins": "the pins file",
    # Kernel tests whose way of waiting for a click another module proves on each ipykernel
    # (test_vscode_kernel, test_kernel_magics: install, env, run, batch, context, skillpy):
    "test_newcomer_kernel": "messages a newcomer reads, the same under every ipykernel",
    "test_mcp_serve": "a server process the kernel starts, the same under every ipykernel",
    "test_warm_magics": "warm servers; the matrix proves the click path through other modules",
    "test_env_kernel": "an env build (test_vscode_kernel clicks the env path on each ipykernel)",
    "test_sources_kernel": "an install (test_vscode_kernel clicks it on each ipykernel)",
    # Our logic over an outside program or library whose behaviour is its own, not the
    # interpreter's: a second Python would prove the same again. The other Python keeps what
    # the interpreter decides (processes, signals, fork and warm start, venvs, archives,
    # parsing, IPython in process, the source's ast), and test_import_graph imports every
    # module there.
    "test_trust": "git verify-tag / verify-commit, ssh-keygen and gpg",
    "test_sigstore": "the sigstore package's verifier",
    "test_sources_git": "git",
    "test_sources_lock": "git repositories and the lock's JSON",
    "test_sources_magics": "installs from git through the magics",
    "test_sources_wellknown": "an HTTP index served locally",
    "test_policy": "ssh-keygen, gpg and git under a policy file",
    "test_trace": "the OpenTelemetry SDK and its OTLP exporter",
    "test_usage": "pandas over the audit log",
    "test_batch_dask": "a Dask cluster",
    "test_langchain": "langchain-core's tools",
    "test_lab_agent": "the model SDKs against a local server",
    "test_lab_attacks": "the model SDKs against a hostile local server",
    "test_lab_evals": "the model SDKs against a local server",
    "test_lab_triggers": "the model SDKs against a local server",
    "test_lab_magics": "the model SDKs against a local server",
    "test_sharding": "the suite's own shards (pytest)",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test of a MAIN_ONLY module ``main_only`` (before ``-m`` deselects)."""
    for item in items:
        if item.module is not None and item.module.__name__.rpartition(".")[2] in MAIN_ONLY:
            item.add_marker(pytest.mark.main_only)


def write_skill(
    root: Path,
    name: str,
    frontmatter: Mapping[str, Any] | str | None = None,
    scripts: Mapping[str, str | bytes] | None = None,
    *,
    body: str = "",
    files: Mapping[str, str | bytes] | None = None,
    dirname: str | None = None,
    executable: bool = True,
    with_metadata: bool = False,
) -> Any:
    """Create ``root/<dirname or name>/`` holding SKILL.md plus ``scripts`` and ``files``.

    - ``frontmatter``: None -> ``{name, description}``; a dict -> dumped as YAML; a str ->
      written verbatim between the ``---`` lines (for malformed-YAML cases).
    - ``scripts`` / ``files``: relative path -> text or bytes. Text is dedented, so triple-quoted
      blocks can be indented in the test. Scripts get the executable bit (``executable``).
    - ``body``: markdown after the frontmatter, dedented (default: a one-line heading).
    - ``with_metadata``: also return the SkillMetadata parsed from the SKILL.md written, for
      tests that drive the ScriptExecutor directly (it takes the metadata, not a manager).

    Returns the skill directory, or ``(skill_dir, metadata)`` with ``with_metadata``.
    """
    skill_dir = Path(root) / (dirname or name)
    skill_dir.mkdir(parents=True, exist_ok=True)
    if frontmatter is None:
        frontmatter = {"name": name, "description": f"Test skill {name}: does one thing."}
    if isinstance(frontmatter, str):
        fm_text = frontmatter if frontmatter.endswith("\n") else frontmatter + "\n"
    else:
        fm_text = yaml.safe_dump(dict(frontmatter), sort_keys=False, allow_unicode=True)
    text = f"---\n{fm_text}---\n" + (textwrap.dedent(body) if body else f"# {name}\n")
    (skill_dir / "SKILL.md").write_text(text, encoding="utf-8")
    for rel, content in (scripts or {}).items():
        path = _write(skill_dir, rel, content)
        if executable:
            path.chmod(0o755)
    for rel, content in (files or {}).items():
        _write(skill_dir, rel, content)
    if with_metadata:
        from skill_magics.core.catalog.frontmatter import load_skill_metadata

        return skill_dir, load_skill_metadata(skill_dir / "SKILL.md")
    return skill_dir


def _write(base: Path, rel: str, content: str | bytes) -> Path:
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def make_skill() -> Callable[..., Any]:
    """The :func:`write_skill` factory (session-scoped: it holds no state, so module-scoped
    fixtures and hypothesis tests can use it too).

    ``make_skill(tmp_path, "name", frontmatter=..., scripts={...}, body=..., files={...})``
    """
    return write_skill


@pytest.fixture
def examples_dir() -> Path:
    """Directory holding the bundled example skills."""
    return EXAMPLES_DIR


@pytest.fixture
def example_manager(examples_dir: Path):
    """A SkillManager over the bundled examples only (no approver: nothing is asked)."""
    from skill_magics.core.manager import SkillManager

    return SkillManager([examples_dir])


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """cwd and HOME in an empty temp dir and no SKILL_MAGICS_PATH, so default dirs are known."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", os.fspath(home))
    monkeypatch.delenv("SKILL_MAGICS_PATH", raising=False)
    monkeypatch.chdir(work)
    return tmp_path


@pytest.fixture
def ipython_shell(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The one IPython shell with skill_magics loaded, as a factory:
    ``ipython_shell(skills_dir, approval_ui="widgets", auto_approve=False)`` loads the
    extension (``%load_ext``) over that skills folder and returns the shell (its
    ``skills_root`` is the folder). ``$SKILL_MAGICS_PATH`` is cleared;
    ``$SKILL_MAGICS_AUTO_APPROVE`` is cleared, or ``*`` with ``auto_approve=True`` (nobody
    can click in a test shell). Afterwards the extension is unloaded and the configuration
    and the names the test put in the namespace are gone."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    before = set(ip.user_ns)
    loaded: list[bool] = []

    def load(skills: Path, *, approval_ui: str | None = None, auto_approve: bool = False) -> Any:
        monkeypatch.delenv("SKILL_MAGICS_PATH", raising=False)
        if auto_approve:
            monkeypatch.setenv("SKILL_MAGICS_AUTO_APPROVE", "*")
        else:
            monkeypatch.delenv("SKILL_MAGICS_AUTO_APPROVE", raising=False)
        ip.config.pop("SkillMagics", None)  # %config of earlier tests lives on the config
        ip.run_line_magic("load_ext", "skill_magics")
        loaded.append(True)
        ip.run_cell(f"%config SkillMagics.skill_dirs = [{str(skills)!r}]")
        if approval_ui is not None:
            ip.run_cell(f"%config SkillMagics.approval_ui = {approval_ui!r}")
        ip.skills_root = skills
        return ip

    yield load
    if loaded:
        ip.run_line_magic("unload_ext", "skill_magics")
    ip.config.pop("SkillMagics", None)
    for name in set(ip.user_ns) - before:
        if not name.startswith("_"):
            ip.user_ns.pop(name, None)


@pytest.fixture
def executor():
    """A manager_support.Runner: the checks and the one call site of a real SkillManager,
    for tests that name script files directly (manager_support.last reads its newest audit
    record)."""
    from manager_support import Runner

    return Runner()


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    """A folder holding scripts/a.py and scripts/b.sh (no SKILL.md): what the ApprovalStore
    tests hash (manager_support.request_for builds the request for it)."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts/a.py").write_text("print('a')\n")
    (tmp_path / "scripts/b.sh").write_text("echo b\n")
    return tmp_path


@pytest.fixture(scope="session", autouse=True)
def repo_root_stays_clean() -> Any:
    """Runs start in the caller's folder by default (run/planning/workdir.py), which for pytest is
    the repository: a test script that writes a relative path would litter it and make a
    "did it run?" check look in the wrong folder. Fail the session if any test left a file."""
    root = Path(__file__).resolve().parent.parent
    before = set(os.listdir(root))
    yield
    new = sorted(n for n in set(os.listdir(root)) - before if not n.startswith("."))
    new = [n for n in new if n not in ("build", "dist") and not n.endswith(".egg-info")]
    assert not new, (
        f"tests left {new} in {root}: write into $SKILL_BASE_DIR or tmp_path, or pass cwd='skill'"
    )


@pytest.fixture
def server():
    """A local HTTP server speaking the Anthropic and OpenAI wire formats with replies the
    test scripts (tests/model_server.py): a fixture, never a model."""
    from model_server import ScriptedServer

    with ScriptedServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def bwrap() -> str:
    """A bubblewrap proven to sandbox a run here (else skip, or fail under make test)."""
    from sandbox_support import require_bwrap

    return require_bwrap()


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_skill, bwrap: str) -> Any:
    """For sandbox tests: a workspace as the cwd, a fake HOME with planted credentials, and
    a skills folder (tests/sandbox_support.py: make_box)."""
    from sandbox_support import make_box

    return make_box(tmp_path, monkeypatch, make_skill)
