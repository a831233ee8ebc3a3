"""Every variation point is a registered kind (docs/architecture.md, *Registered kinds*): each
table (a ``Registry`` in a package's ``__init__``) holds concrete classes implementing every
hook of its base, the way tests/test_import_graph.py holds every module to its rank; and a
kind defined here, in the test alone, appears wherever its table is read."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import skill_magics
from skill_magics.core.base.errors import SourceError
from skill_magics.core.base.registry import Registry
from skill_magics.core.providers import PROVIDERS, Provider
from skill_magics.core.providers.base import Reply
from skill_magics.core.run.gating.approval import SandboxInfo, no_weaker, no_weaker_within
from skill_magics.core.run.launching.launchers import Launch, Launcher, LaunchRequest
from skill_magics.core.run.launching.process import Child, spawn
from skill_magics.core.run.launching.sandbox_mounts import Bind
from skill_magics.core.run.launching.sandbox_profiles import PROFILES, SandboxProfile
from skill_magics.core.sources.kinds import SOURCE_KINDS, ForeignEntry, SourceKind
from skill_magics.core.sources.snapshot import FolderSnapshot
from skill_magics.core.sources.sourcespec import SourceSpec

CORE = Path(skill_magics.__file__).parent / "core"
# The tables there must be (the test finds every table; this keeps it from passing on none).
EXPECTED = {"sandbox mode", "model API", "source kind", "launcher"}


def _tables() -> dict[str, Registry[object]]:
    """Every Registry bound to a name in a package ``__init__`` of the core."""
    found: dict[str, Registry[object]] = {}
    for init in sorted(CORE.rglob("__init__.py")):
        parts = init.parent.relative_to(CORE.parent.parent).parts
        module = importlib.import_module(".".join(parts))
        for value in vars(module).values():
            if isinstance(value, Registry):
                found[value.what] = value
    return found


def _hooks(base: type) -> list[str]:
    return sorted(getattr(base, "__abstractmethods__", ()))


def test_every_table_is_found_and_declares_hooks() -> None:
    tables = _tables()
    assert set(tables) >= EXPECTED
    for what, table in tables.items():
        assert _hooks(table.base), f"the {what} base declares no abstract hooks"
        assert len(table) >= 1, what


@pytest.mark.parametrize(
    ("what", "name"),
    [(what, name) for what, table in _tables().items() for name in table.names()],
)
def test_every_registered_kind_implements_every_hook(what: str, name: str) -> None:
    table = _tables()[what]
    kind = table.get(name)
    cls = type(kind)
    assert not inspect.isabstract(cls), f"{what} {name}: {sorted(cls.__abstractmethods__)}"
    for hook in _hooks(table.base):
        mine = inspect.getattr_static(cls, hook)
        assert mine is not inspect.getattr_static(table.base, hook), f"{what} {name}: {hook}"
        assert not getattr(mine, "__isabstractmethod__", False), f"{what} {name}: {hook}"
    assert kind.name == name  # type: ignore[attr-defined]


def test_a_kind_missing_a_hook_is_refused_in_one_line() -> None:
    class Half(SandboxProfile):
        name = "half"
        rank = 1
        description = "half (no hooks)"

    with pytest.raises(TypeError, match="abstract .*here"):
        Half()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="concrete SandboxProfile subclass: str is not one"):
        PROFILES.register("half")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="named 'off' is registered already"):
        PROFILES.register(type(PROFILES.get("off"))())
    assert "half" not in PROFILES


# -- a sandbox profile defined in this test alone ------------------------------------------


class LockedDown(SandboxProfile):
    """More confined than read-only: not even the workspace is given."""

    name = "locked-down"
    rank = 3
    description = "locked-down (not even the workspace)"

    def here(self, why_not: Callable[[], str]) -> SandboxProfile | None:
        return None if why_not() else self

    def workspace_mounts(self, workspace: str, real: str) -> list[Bind]:
        return []


@contextmanager
def registered(profile: SandboxProfile) -> Iterator[SandboxProfile]:
    PROFILES.register(profile)
    try:
        yield profile
    finally:
        PROFILES.unregister(profile.name)


def test_a_new_profile_is_a_choice_of_the_magics_and_of_the_settings() -> None:
    from IPython.core.magic_arguments import parse_argstring

    from skill_magics.core.run.launching.sandbox import check_mode
    from skill_magics.core.run.planning.settings import RunSettings
    from skill_magics.notebook.magics.skillrun import SkillRunMagics
    from skill_magics.notebook.magics.skills import SkillMagics

    skillrun = SkillRunMagics.skillrun
    assert "locked-down" not in skillrun.parser.format_usage()
    with registered(LockedDown()):
        assert "locked-down" in skillrun.parser.format_usage()
        args = parse_argstring(skillrun, "pdf.extract --sandbox locked-down")
        assert args.sandbox == "locked-down"
        assert check_mode("Locked_Down") == "locked-down"
        assert RunSettings(sandbox="locked-down").sandbox == "locked-down"
        trait = SkillMagics.class_traits()["sandbox"]
        assert trait.validate(None, "LOCKED-DOWN") == "locked-down"
    with pytest.raises(ValueError, match="Unknown sandbox mode 'locked-down': use one of off, "):
        check_mode("locked-down")


def test_a_new_profile_is_ranked_by_the_team_policy_as_by_the_gate(tmp_path: Path) -> None:
    from skill_magics.core.policy.model import Policy, PolicyError
    from skill_magics.core.policy.rules import check_run_limits
    from skill_magics.core.run.launching.sandbox_profiles import ranks

    policy = Policy(path=str(tmp_path / "policy.toml"), max_sandbox="read-only")
    with registered(LockedDown()):
        # More confined than the most the policy allows: NOT refused.
        check_run_limits(policy, "hello", "locked-down", False, ranks())
        check_run_limits(policy, "hello", "read-only", False, ranks())
        with pytest.raises(PolicyError, match="max_sandbox"):
            check_run_limits(policy, "hello", "workspace-write", False, ranks())
        # A policy may name it; unregistered, the name refuses every run in one line.
        strict = dataclasses.replace(policy, max_sandbox="locked-down")
        check_run_limits(strict, "hello", "locked-down", False, ranks())
        with pytest.raises(PolicyError, match="max_sandbox"):
            check_run_limits(strict, "hello", "read-only", False, ranks())
    with pytest.raises(PolicyError, match="'locked-down' names no sandbox profile: use one of off"):
        check_run_limits(strict, "hello", "read-only", False, ranks())


def test_a_new_profile_is_ranked_by_the_gate() -> None:
    tmp = ("<private /tmp>",)
    strict, ro = SandboxInfo("locked-down", False, tmp), SandboxInfo("read-only", False, tmp)
    ww = SandboxInfo("workspace-write", False, ("/w", *tmp))
    with registered(LockedDown()):
        assert strict.isolated and strict.rank > ro.rank > ww.rank > 0
        # A Yes given under it covers no weaker profile, with the same writable paths even.
        assert not no_weaker(ro, strict) and not no_weaker_within(ro, strict)
        assert not no_weaker(None, strict) and not no_weaker(SandboxInfo("off"), strict)
        # A Yes given under a weaker profile covers a run under it.
        assert no_weaker(strict, ro) and no_weaker(strict, ww) and no_weaker(strict, None)
    # Unregistered, the name confines nothing: what was approved under it covers any run.
    assert not strict.isolated and no_weaker(None, strict)


def test_the_standard_profiles_keep_their_order_and_what_the_gate_compared() -> None:
    assert list(PROFILES.names()) == ["off", "read-only", "workspace-write", "auto"]
    tmp = ("<private /tmp>",)
    ro, ww = SandboxInfo("read-only", False, tmp), SandboxInfo("workspace-write", False, tmp)
    fell_back = SandboxInfo("off (not sandboxed: no bubblewrap)", True)
    assert no_weaker(ro, ww) and not no_weaker(ww, ro)
    assert not fell_back.isolated and no_weaker(None, fell_back) and not no_weaker(fell_back, ro)


# -- a model SDK defined in this test alone ------------------------------------------------


class GeminiLike(Provider):
    """A third SDK: its clients come from the package ``geminilike``."""

    name = "geminilike"
    package = "geminilike"
    label = "GeminiLike"
    key_var = "GEMINILIKE_API_KEY"

    def tool_definition(self, name: str, description: str, schema: dict[str, Any]) -> Any:
        return {"functionDeclaration": {"name": name, "parameters": schema}}

    def request(self, *, model, system, messages, tools, max_tokens) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        return {"model": model, "contents": messages, "tools": tools}

    def tool_messages(self, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"role": "function", "parts": blocks}]

    def endpoint(self, wire: Any) -> Any:
        return wire.generate

    def problem(self, response: Any) -> str:
        return "" if isinstance(response, dict) else "not a dict"

    def read(self, response: Any) -> Reply:
        return Reply(response["text"], (), "stop", 1, 1, {"role": "model"})


def test_a_new_provider_is_asked_by_the_lab_and_the_tools(tmp_path, make_skill) -> None:
    from skill_magics.core.lab.clients import provider_for
    from skill_magics.core.manager import SkillManager
    from skill_magics.core.prompt.tools import tool_definitions

    make_skill(tmp_path, "pdf", scripts={"scripts/extract.py": "print('x')\n"})
    manager = SkillManager([tmp_path])
    client_type = type("Client", (), {"__module__": "geminilike.client", "api_key": "k"})
    client_type.generate = lambda self, **kwargs: {"text": kwargs["model"]}  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="use api='anthropic' or api='openai'$"):
        tool_definitions(manager, api="geminilike")
    PROVIDERS.register(GeminiLike())
    try:
        shapes = tool_definitions(manager, api="geminilike")
        assert {s["functionDeclaration"]["name"] for s in shapes} >= {"pdf", "pdf__extract"}
        provider = provider_for(client_type())
        assert isinstance(provider, GeminiLike) and not provider.is_async
        kwargs = provider.request(model="m-1", system="", messages=[], tools=[], max_tokens=5)
        assert provider.send(kwargs).text == "m-1"  # the shared send, through its hooks
    finally:
        PROVIDERS.unregister("geminilike")
    with pytest.raises(TypeError, match="client is a geminilike.client.Client"):
        provider_for(client_type())


# -- a source kind defined in this test alone ----------------------------------------------


class ShelfSource(SourceKind):
    """``shelf://NAME``: a folder of skills on a shelf (a folder this test makes)."""

    name = "shelf"
    description = "a shelf://NAME"
    root = Path()

    def parse(self, text: str, ref: str | None, subfolder: str) -> SourceSpec | None:
        if not text.startswith("shelf://"):
            return None
        return SourceSpec(self.name, text, None, subfolder)

    def open(self, spec, *, cancel=None, wanted=None):  # type: ignore[no-untyped-def]
        # The shelf's folder, listed as a folder source's; the snapshot's spec is what the
        # lock records (its location parses back to this kind).
        snap = FolderSnapshot(
            dataclasses.replace(spec, location=str(self.root / spec.location[8:]))
        )
        snap.spec = spec
        return snap

    def reopen(self, spec, locked, *, cancel=None, pinned=False):  # type: ignore[no-untyped-def]
        return self.open(spec, cancel=cancel)

    def check_locked(self, locked):  # type: ignore[no-untyped-def]
        return locked

    def lock_fields(self, locked):  # type: ignore[no-untyped-def]
        return {"sourceType": "shelf"}

    def from_foreign(self, entry: ForeignEntry) -> tuple[str, str] | None:
        return None


def test_a_new_source_kind_installs_updates_and_is_read_back(tmp_path, make_skill) -> None:
    from skill_magics.core.base.errors import LockFileError
    from skill_magics.core.sources.install import install_skills
    from skill_magics.core.sources.kinds import described, read_lock
    from skill_magics.core.sources.spec import parse_source
    from skill_magics.core.sources.update import sync_skills
    from skill_magics.notebook.magics.skills import SkillMagics

    make_skill(tmp_path / "shelves" / "top", "pdf", scripts={"scripts/x.py": "print(1)\n"})
    into = tmp_path / "into"
    kind = ShelfSource()
    kind.root = tmp_path / "shelves"
    with pytest.raises(SourceError, match="uses the 'shelf' transport"):
        parse_source("shelf://top")  # no kind claims it
    SOURCE_KINDS.register(kind)
    try:
        assert parse_source("shelf://top").kind == "shelf"
        assert described().endswith("a folder or a shelf://NAME")
        report = install_skills("shelf://top", into=into, approver=None)
        assert report.names == ["pdf"]
        entry = json.loads((into / "skills-lock.json").read_text())["skills"]["pdf"]
        assert (entry["type"], entry["sourceType"]) == ("shelf", "shelf")
        assert read_lock(into).skills["pdf"].kind == "shelf"
        shutil.rmtree(into / "pdf")
        sync_skills(into, approver=None)  # reopened by its kind
        assert (into / "pdf" / "scripts" / "x.py").is_file()
    finally:
        SOURCE_KINDS.unregister("shelf")
    with pytest.raises(LockFileError, match="has type 'shelf'"):
        read_lock(into)
    # The %skills help names the kinds registered when the magics were made.
    assert "a folder" in (SkillMagics.skills.__doc__ or "")


# -- a launcher defined in this test alone -------------------------------------------------


class Niced(Launcher):
    """Asked before every other: an unsandboxed python run starts under ``nice -n 5``."""

    name = "niced"
    preference = 30
    record_name = "cold"

    def offer(self, request: LaunchRequest) -> Launch | str:
        prepared = request.prepared
        profile = prepared.sandbox_profile
        if (profile is not None and profile.active) or prepared.script_rel.suffix != ".py":
            return ""
        command = ["nice", "-n", "5", *prepared.command]
        return Launch(self, (command, prepared.cwd, request.env), note="niced")

    def start(self, launch: Launch, payload: bytes | None) -> Child:
        command, cwd, env = launch.how
        return spawn(command, payload, cwd=cwd, env=env)


NICENESS = "import os\nprint(os.nice(0))\n"


def test_a_new_launcher_is_chosen_by_preference_and_keeps_its_runs_contained(
    tmp_path, make_skill
) -> None:
    from manager_support import Runner, last

    from skill_magics.core.run.launching.launchers import LAUNCHERS, by_preference

    base, meta = make_skill(
        tmp_path,
        "nice",
        scripts={"scripts/n.py": NICENESS, "scripts/n.sh": "echo sh\n"},
        with_metadata=True,
    )
    runner = Runner(warm_start="off")
    plain = int(runner.execute("scripts/n.py", None, base, meta).stdout)
    LAUNCHERS.register(Niced())
    try:
        assert by_preference()[0].name == "niced"
        result = runner.execute("scripts/n.py", None, base, meta)
        assert result.success and int(result.stdout) == min(plain + 5, 19)
        record = last(runner)
        assert (record.start, record.start_note) == ("cold", "niced")
        # What it does not offer to start is the next launcher's: NOT refused.
        assert runner.execute("scripts/n.sh", None, base, meta).stdout == "sh\n"
    finally:
        LAUNCHERS.unregister("niced")
    assert int(runner.execute("scripts/n.py", None, base, meta).stdout) == plain
