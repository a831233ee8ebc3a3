"""The team policy against every kind of run (docs/trust.md, *Where each rule is enforced*):
a single run, a ``--map`` batch (threads and a process pool), a warm start, ``%%skillpy``
(``run_python_in_skill``), ``%skill_context``'s scripts, a model's tool call (the lab's
loops), an MCP skill's script; each refused before any process starts when it would get
more than ``[run] max_sandbox`` / ``network`` allow, and each NOT refused when it asks for no
more. And at run time the signer is believed from the record: no ``git``, ``ssh-keygen`` or
``gpg`` starts. Real files, real processes, real keys.
"""

from __future__ import annotations

import os
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest
from manager_support import manager_for, posix_only, refusals
from sources_support import skill_md, write_files
from trust_support import allowed_signers, keygen, no_policy_but_ours, signed_repo

from skill_magics.core.base.errors import ApprovalDeclined
from skill_magics.core.policy import PolicyError
from skill_magics.core.sources.install import install_skills
from skill_magics.core.sources.update import verify_signatures

pytestmark = [
    posix_only,
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen"),
]

# Writes a marker beside the script's skill when it runs: a refusal must leave none.
MARKER = (
    "import os, pathlib\n"
    "try:\n"
    "    pathlib.Path(os.environ['SKILL_BASE_DIR'], 'ran').write_text('yes')\n"
    "except OSError:\n"
    "    pass  # sandboxed: the skill folder is read-only\n"
    "print('hi')\n"
)


@pytest.fixture
def team(isolated_env, monkeypatch):
    """A project folder (the cwd) with a local skill 'hello' and no policy yet."""
    root = isolated_env
    no_policy_but_ours(root, monkeypatch)
    project = root / "work"
    (project / ".skill-magics").mkdir(parents=True)
    local = project / "local"
    write_files(
        local / "hello",
        {
            "SKILL.md": skill_md("hello") + "\nStart with `python scripts/hi.py`.\n",
            "scripts/hi.py": MARKER,
        },
    )
    return SimpleNamespace(root=root, project=project, local=local, ran=local / "hello" / "ran")


def write_policy(team, text: str) -> Path:
    path = team.project / ".skill-magics" / "policy.toml"
    path.write_text(text)
    return path


CAP = '[run]\nmax_sandbox = "read-only"\nnetwork = false\n'


def test_a_batch_is_capped_on_threads_and_in_a_process_pool(team, bwrap):
    write_policy(team, CAP)
    manager = manager_for(team.local)
    for pool in (None, "process"):
        with ProcessPoolExecutor(1) if pool else _nothing() as chosen:
            with pytest.raises(PolicyError, match=r"\[run\] max_sandbox in .*sandbox 'off'"):
                manager.map(
                    "hello", "scripts/hi.py", [{}, {}], approver=None, sandbox="off", pool=chosen
                )
            assert not team.ran.exists(), "refused before any process"
            # NOT refused: asking for no more than the policy allows
            res = manager.map(
                "hello", "scripts/hi.py", [{}, {}], approver=None, sandbox="read-only", pool=chosen
            )
            assert res.counts() == {"completed": 2}, res.text()


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _in(folder: str) -> None:
    os.chdir(folder)


def test_a_pool_worker_enforces_the_callers_policy_not_its_own_folders(team, bwrap):
    """A worker elsewhere (a Dask worker's folder, here a pool whose workers start in a
    folder with no policy) gets no more than the policy in force where the batch was
    launched, even when the policy came into force after the batch was planned."""
    elsewhere = team.root / "elsewhere"
    elsewhere.mkdir()
    manager = manager_for(team.local)
    plan = manager.plan_map("hello", "scripts/hi.py", [{}, {}], sandbox="off")
    write_policy(team, CAP)  # in force at launch
    from skill_magics.core.run.batch.runner import BatchOptions

    with ProcessPoolExecutor(1, initializer=_in, initargs=(str(elsewhere),)) as pool:
        result = manager.run_planned(plan, None, batch=BatchOptions(pool=pool)).value
    assert result.counts() == {"refused": 2}, result.text()
    assert all("[run] max_sandbox" in item.message for item in result)
    assert not team.ran.exists(), "refused before any process"


def test_a_pool_batch_of_a_signed_allowed_skill_is_not_refused(team):
    """The shipped copy is the approved bytes of an installed, signed skill: its source and
    signer are the installed skill's (checked where the batch was planned), not a local
    folder's."""
    repo = _signed_by_alice(team)
    write_policy(
        team,
        f'[sources]\nallow = ["{repo}"]\n[signatures]\nrequire = true\n'
        'allowed_signers = "allowed_signers"\n',
    )
    into = team.project / ".agents" / "skills"
    install_skills(str(repo), ref="v1", into=into, approver=None)
    manager = manager_for(into)
    assert manager.map("greet", "scripts/hello.py", [{}], approver=None).counts() == {
        "completed": 1
    }
    with ProcessPoolExecutor(1) as pool:
        res = manager.map("greet", "scripts/hello.py", [{}, {}], approver=None, pool=pool)
    assert res.counts() == {"completed": 2}, res.text()
    # and what it must refuse still is refused, where the batch is planned: a local skill
    write_files(team.local / "plain", {"SKILL.md": skill_md("plain"), "scripts/p.py": "print(1)\n"})
    with (
        ProcessPoolExecutor(1) as pool,
        pytest.raises(PolicyError, match=r"allow in .*local/plain matches none"),
    ):
        manager_for(team.local).map("plain", "scripts/p.py", [{}], approver=None, pool=pool)


def test_a_warm_start_is_capped_and_a_capped_warm_run_starts_warm(team, bwrap):
    from skill_magics.core.run.launching import warm

    write_policy(team, CAP)
    manager = manager_for(team.local, warm_start="on")
    try:
        before = len(warm.servers())
        with pytest.raises(PolicyError, match=r"\[run\] max_sandbox"):
            manager.execute_skill_script(
                "hello", "scripts/hi.py", approver=None, sandbox="off", warm=True
            )
        assert len(warm.servers()) == before and not team.ran.exists(), "no server, no run"
        run = manager.execute_skill_script(
            "hello", "scripts/hi.py", approver=None, sandbox="read-only", warm=True
        )
        assert run.stdout.strip() == "hi" and run.start == "warm", run.start_note
    finally:
        warm.stop_servers()


def test_skillpy_code_is_capped(team, bwrap):
    import subprocess

    from skill_magics.core.run.env.skillpy import run_python_in_skill

    venv = team.local / "hello" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    write_policy(team, CAP)
    code = "import pathlib; pathlib.Path('ran').write_text('x'); print('py')"
    out = run_python_in_skill(manager_for(team.local, sandbox="off"), "hello", code, approver=None)
    assert "Refused by the policy ([run] max_sandbox in" in out["error"]
    assert not team.ran.exists()
    # NOT refused: the same code sandboxed (the skill folder is read-only there: no marker)
    ok = run_python_in_skill(
        manager_for(team.local, sandbox="read-only"), "hello", "print('py')", approver=None
    )
    assert ok.get("stdout", "").strip() == "py", ok


def test_skill_context_scripts_are_capped(team, bwrap):
    from skill_magics.core.prompt.context import build_skill_context

    write_policy(team, CAP)
    asks = manager_for(team.local, sandbox="read-only", sandbox_network=("*",))
    refused = build_skill_context(asks, "hello", approver=lambda r: "yes_once")
    print(refused)
    assert "Refused by the policy ([run] network in" in refused and "asks for network" in refused
    assert not team.ran.exists()
    plain = manager_for(team.local, sandbox="read-only")
    text = build_skill_context(plain, "hello", approver=lambda r: "yes_once")
    assert "hi" in text  # NOT refused: the script ran sandboxed, without network


def test_a_models_tool_call_is_capped(team, bwrap):
    from skill_magics.core.prompt.tools import handle_tool_call, tool_definitions

    write_policy(team, CAP)
    manager = manager_for(team.local, sandbox="off", approver=lambda r: "yes_once")
    names = [t["name"] for t in tool_definitions(manager)]
    print(names)
    (tool,) = [n for n in names if n.startswith("hello") and "hi" in n]
    block = handle_tool_call(manager, tool, {}, "t1")
    assert block["is_error"] and "[run] max_sandbox in" in str(block["content"])
    assert not team.ran.exists()
    assert any("max_sandbox" in (r.reason or "") for r in refusals(manager))
    capped = manager_for(team.local, sandbox="read-only", approver=lambda r: "yes_once")
    block = handle_tool_call(capped, tool, {}, "t2")
    assert not block.get("is_error") and "hi" in str(block["content"])  # NOT refused


@pytest.mark.mcp
@pytest.mark.timeout(120)
def test_an_mcp_skills_script_is_capped_and_matched_by_its_label(team, monkeypatch, bwrap):
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(team.root / "cache"))
    served = team.root / "served"
    write_files(
        served / "hello-mcp",
        {"SKILL.md": skill_md("hello-mcp"), "scripts/hello.py": "print('hello mcp')\n"},
    )
    manager = manager_for(team.local)
    manager.add_mcp_server(
        "team", command=[sys.executable, "-m", "skill_magics.mcp", "serve", str(served)]
    )
    try:
        write_policy(team, '[sources]\nallow = ["mcp:team"]\n' + CAP)

        def run(**kwargs):
            return manager.execute_skill_script(
                "team/hello-mcp", "scripts/hello.py", approver=None, **kwargs
            )

        with pytest.raises(PolicyError, match=r"\[run\] max_sandbox in .*'off'"):
            run(sandbox="off")
        write_policy(team, '[sources]\nallow = ["mcp:team"]\n[run]\nnetwork = false\n')
        with pytest.raises(PolicyError, match=r"\[run\] network in .*unsandboxed"):
            run(sandbox="off")
        write_policy(team, '[sources]\nallow = ["mcp:team"]\n' + CAP)
        manager.configure(sandbox_network=("team/hello-mcp",))
        with pytest.raises(PolicyError, match=r"\[run\] network in .*asks for network"):
            run(sandbox="read-only")
        manager.configure(sandbox_network=())
        assert run(sandbox="read-only").stdout.strip() == "hello mcp"  # NOT refused
        write_policy(team, '[sources]\nallow = ["mcp:other"]\n')
        with pytest.raises(PolicyError, match=r"\[sources\] allow in .*mcp:team .*matches none"):
            run(sandbox="read-only")
        # [skills] block names a skill whatever its source: an MCP skill by its own name
        # too, not only as LABEL/NAME
        for blocked in ("hello-mcp", "hello-*", "team/*"):
            write_policy(team, f'[skills]\nblock = ["{blocked}"]\n')
            with pytest.raises(PolicyError, match=r"\[skills\] block in .*is blocked"):
                run(sandbox="read-only")
        write_policy(team, '[skills]\nblock = ["other/*", "mcp"]\n')
        assert run(sandbox="read-only").stdout.strip() == "hello mcp"  # NOT refused
        # [sources] allow matches a server by its command line (or URL) too, not only by
        # the label a cell gives it: at add and at every run
        serve = f"{sys.executable} -m skill_magics.mcp serve"
        write_policy(team, f'[sources]\nallow = ["{serve} {served}"]\n')
        assert run(sandbox="read-only").stdout.strip() == "hello mcp"  # NOT refused
        elsewhere = team.root / "elsewhere"
        elsewhere.mkdir()
        with pytest.raises(PolicyError, match=r"\[sources\] allow in .*mcp:other \(.*elsewhere"):
            manager.add_mcp_server("other", command=[*serve.split(), str(elsewhere)])
        write_policy(team, f'[sources]\nallow = ["{serve} {elsewhere}"]\n')
        with pytest.raises(PolicyError, match=r"mcp:team \(.*served\) matches none"):
            run(sandbox="read-only")
    finally:
        manager.remove_mcp_server("team")


def test_a_run_spawns_no_git_ssh_keygen_or_gpg(team):
    """The verified signer is found by digest at run time: an audit hook sees every process
    this one starts, and none is git, ssh-keygen or gpg."""
    repo = _signed_by_alice(team)
    write_policy(
        team,
        f'[sources]\nallow = ["{repo}"]\n[signatures]\nrequire = true\n'
        'allowed_signers = "allowed_signers"\n[skills]\nblock = ["sha256:' + "0" * 64 + '"]\n',
    )
    into = team.project / ".agents" / "skills"
    install_skills(str(repo), ref="v1", into=into, approver=None)
    helpers = {"git", "ssh-keygen", "gpg", "gpgv"}
    started: list[set[str]] = []  # the program names in each command this process starts
    watching = [True]

    def hook(event: str, args: tuple) -> None:
        if watching and event == "subprocess.Popen":  # git and ssh-keygen under the tree guard
            argv = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
            started.append({os.path.basename(os.fsdecode(w)) for w in argv})

    sys.addaudithook(hook)
    try:
        manager = manager_for(into)
        for _ in range(3):
            run = manager.execute_skill_script("greet", "scripts/hello.py", approver=None)
            assert "signed skill" in run.stdout
        at_run = list(started)
        # What the hook would see: verifying the signatures again starts git.
        assert verify_signatures(into) == []
    finally:
        watching.clear()
    assert len(at_run) >= 3, "the hook saw the runs' own processes"
    assert not [names for names in at_run if names & helpers], at_run
    assert any("git" in names for names in started[len(at_run) :])


def test_an_environment_is_not_built_for_a_skill_the_policy_refuses(team, monkeypatch):
    """A managed environment installs what the skill's requirements name (their code runs
    at install): a skill the policy refuses (here: unsigned under require) gets none,
    refused before anyone is asked, audited; a policy that allows it does not refuse."""
    from skill_magics.core.base import envdirs

    monkeypatch.setenv(envdirs.ENV_DIR_VAR, str(team.root / "envs"))
    needs = '# /// script\n# dependencies = ["surely-not-installed-pkg-41"]\n# ///\nprint(1)\n'
    (team.local / "hello" / "scripts" / "needs.py").write_text(needs)
    write_policy(team, "[signatures]\nrequire = true\n")
    manager = manager_for(team.local)
    asked = []
    with pytest.raises(PolicyError, match=r"\[signatures\] require in .*unsigned \(local\)"):
        manager.prepare_env("hello", approver=lambda r: asked.append(r) or "no")
    assert asked == [] and not (team.root / "envs").exists()
    assert refusals(manager)[-1].script == "<install>"
    write_policy(team, f'[sources]\nallow = ["{team.local}/*"]\n')
    with pytest.raises(ApprovalDeclined):  # asked, and declined: NOT refused by the policy
        manager.prepare_env("hello", approver=lambda r: asked.append(r) or "no")
    assert len(asked) == 1 and asked[0].install is not None


def test_a_cell_asking_for_network_is_refused_in_one_line_naming_the_fix(
    team, ipython_shell, bwrap
):
    write_policy(team, "[run]\nnetwork = false\n")
    shell = ipython_shell(team.local, auto_approve=True)
    shell.run_cell("%config SkillMagics.sandbox = 'read-only'")
    shell.run_cell("%config SkillMagics.sandbox_network = ['hello']")
    outcome = shell.run_cell("%%skillrun hello.hi\n")
    text = str(outcome.error_in_exec)
    assert "\n" not in text and not team.ran.exists()
    assert "Refused by the policy ([run] network in " in text and "policy.toml" in text
    assert text.endswith("take it out of sandbox_network and grant none")
    shell.run_cell("%config SkillMagics.sandbox_network = []")
    assert shell.run_cell("%%skillrun hello.hi\n").error_in_exec is None  # NOT refused
    shell.run_cell("%config SkillMagics.sandbox = 'off'")
    text = str(shell.run_cell("%%skillrun hello.hi\n").error_in_exec)
    assert text.endswith("run it sandboxed (--sandbox read-only)") and not team.ran.exists()


def _signed_by_alice(team) -> Path:
    """A repository of skill 'greet' whose tag alice signed; alice in the project's
    allowed_signers (the policy names the file)."""
    alice = keygen(team.root / "keys", "alice")
    allowed_signers(
        team.project / ".skill-magics" / "allowed_signers", ("alice@example.com", alice)
    )
    return signed_repo(team.root / "ok" / "greet", alice)
