"""The team policy (core/policy): found in order, read strictly, enforced at install and in the
run checks before any process, each refusal one line naming the rule and the file, audited;
and what it must NOT refuse. Real keys, real git, real archives, real runs.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from manager_support import manager_for, outcomes, posix_only, refusals
from sources_support import package_skill, skill_md, write_files
from trust_support import allowed_signers, keygen, sign_file, signed_repo

from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.core.installed.lock import read_lock, tree_digest
from skill_magics.core.policy import PolicyError, current_policy, find_policy
from skill_magics.core.policy.load import describe_policy
from skill_magics.core.sources.install import install_skills

pytestmark = [
    posix_only,
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen"),
]


@pytest.fixture
def team(isolated_env, monkeypatch):
    """A project folder (the cwd) with a local skill, keys, and no policy yet."""
    root = isolated_env
    monkeypatch.setenv("SKILL_MAGICS_TRUST_DIR", str(root / "trust"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "config"))
    monkeypatch.delenv("SKILL_MAGICS_POLICY", raising=False)
    monkeypatch.delenv("SKILL_MAGICS_ALLOWED_SIGNERS", raising=False)
    alice = keygen(root / "keys", "alice")
    mallory = keygen(root / "keys", "mallory")
    project = root / "work"
    (project / ".skill-magics").mkdir(parents=True)
    allowed_signers(project / ".skill-magics" / "allowed_signers", ("alice@example.com", alice))
    local = project / "local"
    write_files(
        local / "hello",
        {"SKILL.md": skill_md("hello"), "scripts/hi.py": "print('hi')\n"},
    )
    return SimpleNamespace(
        root=root,
        alice=alice,
        mallory=mallory,
        project=project,
        local=local,
        into=project / ".agents" / "skills",
    )


def write_policy(team, text: str) -> Path:
    path = team.project / ".skill-magics" / "policy.toml"
    path.write_text(text)
    return path


def run_hello(manager, **kwargs):
    return manager.execute_skill_script("hello", "scripts/hi.py", approver=None, **kwargs)


def test_no_policy_refuses_nothing(team):
    assert find_policy() is None and "No policy in force" in describe_policy()
    assert run_hello(manager_for(team.local)).stdout.strip() == "hi"


def test_the_order_env_then_project_then_user_config(team, monkeypatch):
    user = team.root / "config" / "skill-magics" / "policy.toml"
    user.parent.mkdir(parents=True)
    user.write_text("")
    assert find_policy() == user
    project = write_policy(team, "")
    sub = team.project / "notebooks" / "deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)  # a notebook in a subfolder: the nearest parent's policy
    assert find_policy() == project
    named = team.root / "named.toml"
    named.write_text("[run]\nnetwork = false\n")
    monkeypatch.setenv("SKILL_MAGICS_POLICY", str(named))
    assert find_policy() == named and current_policy().network is False
    assert f"Policy in force: {named} (from $SKILL_MAGICS_POLICY)" in describe_policy()
    assert "network = false" in describe_policy()


def test_an_unparseable_policy_refuses_everything_in_one_line_naming_file_and_line(team):
    path = write_policy(team, "[run]\nnetwork = false\nmax_sandbox = read-only\n")
    manager = manager_for(team.local)
    with pytest.raises(PolicyError) as exc:
        run_hello(manager)
    text = str(exc.value)
    assert "\n" not in text and str(path) in text and "line 3" in text
    assert outcomes(manager) == ["refused"]
    with pytest.raises(PolicyError, match="does not parse"):
        install_skills(str(team.local / "hello"), into=team.into, approver=None)


def test_an_unknown_key_is_not_a_silent_weakening(team):
    path = write_policy(team, "[signatures]\nrequired = true\n")
    with pytest.raises(PolicyError, match=f"{path}.*line 2: unknown key 'required'"):
        run_hello(manager_for(team.local))


def test_a_symlinked_policy_others_can_write_is_refused_a_private_one_is_not(team):
    target = team.root / "shared" / "policy.toml"
    target.parent.mkdir()
    target.write_text("")
    link = team.project / ".skill-magics" / "policy.toml"
    link.symlink_to(target)
    target.chmod(0o666)
    with pytest.raises(PolicyError, match="symlink to .*which others can write"):
        run_hello(manager_for(team.local))
    target.chmod(0o644)  # only its owner writes it: must NOT be refused
    assert run_hello(manager_for(team.local)).stdout.strip() == "hi"


def test_max_sandbox_refuses_an_unsandboxed_run_before_any_process(team, bwrap):
    write_policy(team, '[run]\nmax_sandbox = "read-only"\n')
    manager = manager_for(team.local)
    with pytest.raises(PolicyError, match=r"\[run\] max_sandbox in .*policy.toml.*sandbox 'off'"):
        run_hello(manager, sandbox="off")
    (record,) = refusals(manager)
    assert "max_sandbox" in record.reason
    with pytest.raises(PolicyError, match="'workspace-write'"):
        run_hello(manager, sandbox="workspace-write")
    assert run_hello(manager, sandbox="read-only").stdout.strip() == "hi"  # NOT refused


def test_no_network_whatever_a_cell_asks(team, bwrap):
    write_policy(team, "[run]\nnetwork = false\n")
    manager = manager_for(team.local, sandbox_network=("*",))  # a setting asks for network
    with pytest.raises(PolicyError, match=r"\[run\] network in .*asks for network"):
        run_hello(manager, sandbox="read-only")
    assert outcomes(manager)[-1] == "refused" and "completed" not in outcomes(manager)
    with pytest.raises(PolicyError, match="unsandboxed"):
        run_hello(manager_for(team.local), sandbox="off")
    plain = manager_for(team.local)
    assert run_hello(plain, sandbox="read-only").stdout.strip() == "hi"  # NOT refused


def test_blocked_names_and_digests_never_run(team):
    files, _ = __import__(
        "skill_magics.core.installed.lock", fromlist=["folder_files"]
    ).folder_files(team.local / "hello")
    digest = "sha256:" + tree_digest(list(files.values()))
    write_policy(team, f'[skills]\nblock = ["{digest}"]\n')
    with pytest.raises(PolicyError, match=r"\[skills\] block.*has digest"):
        run_hello(manager_for(team.local))
    write_policy(team, '[skills]\nblock = ["hel*"]\n')
    with pytest.raises(PolicyError, match=r"\[skills\] block.*'?hello'? is blocked"):
        run_hello(manager_for(team.local))
    write_policy(team, '[skills]\nblock = ["other", "sha256:' + "0" * 64 + '"]\n')
    assert run_hello(manager_for(team.local)).stdout.strip() == "hi"  # NOT refused


def test_sources_allow_at_install_and_at_run(team):
    write_policy(team, '[sources]\nallow = ["https://github.com/acme/*"]\n')
    with pytest.raises(PolicyError, match=r"\[sources\] allow.*matches none of"):
        install_skills(str(team.local / "hello"), into=team.into, approver=None)
    assert not team.into.exists()
    with pytest.raises(PolicyError, match=r"\[sources\] allow"):
        run_hello(manager_for(team.local))  # a local folder is a source too
    write_policy(team, f'[sources]\nallow = ["{team.local}/*"]\n')
    assert run_hello(manager_for(team.local)).stdout.strip() == "hi"  # NOT refused


REQUIRE = '[signatures]\nrequire = true\nallowed_signers = "allowed_signers"\n'


def test_require_refuses_unsigned_and_unknown_signers_and_accepts_alice(team):
    write_policy(team, REQUIRE)
    with pytest.raises(PolicyError, match=r"\[signatures\] require.*unsigned \(local\)"):
        install_skills(str(team.local / "hello"), into=team.into, approver=None)
    with pytest.raises(PolicyError, match=r"unsigned \(local\)"):
        run_hello(manager_for(team.local))
    bad = signed_repo(team.root / "src" / "greet", team.mallory)
    with pytest.raises(PolicyError, match="signed by unknown key|unknown key"):
        install_skills(str(bad), ref="v1", into=team.into, approver=None)
    good = signed_repo(team.root / "ok" / "greet", team.alice)
    install_skills(str(good), ref="v1", into=team.into, approver=None)  # NOT refused
    manager = manager_for(team.into)
    result = manager.execute_skill_script("greet", "scripts/hello.py", approver=None)
    assert "signed skill" in result.stdout


def test_a_signer_no_longer_in_allowed_signers_is_refused_at_run(team):
    write_policy(team, REQUIRE)
    install_skills(
        str(signed_repo(team.root / "ok" / "greet", team.alice)),
        ref="v1",
        into=team.into,
        approver=None,
    )
    allowed_signers(team.project / ".skill-magics" / "allowed_signers", ("bob", team.mallory))
    with pytest.raises(PolicyError, match=r"\[signatures\] allowed_signers.*alice@example.com"):
        manager_for(team.into).execute_skill_script("greet", "scripts/hello.py", approver=None)


def test_a_lock_edited_to_name_alice_does_not_pass_require(team):
    archive_src = team.root / "src" / "greet"
    write_files(archive_src, {"SKILL.md": skill_md("greet"), "scripts/hello.py": "print(1)\n"})
    (team.root / "dist").mkdir()
    archive = package_skill(archive_src, team.root / "dist" / "greet.skill")
    sign_file(team.mallory, archive)
    install_skills(str(archive), into=team.into, approver=None)  # no policy yet
    lock_path = team.into / "skills-lock.json"
    lock = json.loads(lock_path.read_text())
    alice_key = read_lock(team.into).skills["greet"].signature
    assert alice_key is not None and not alice_key.is_signed
    from trust_support import fingerprint

    lock["skills"]["greet"]["signature"] = {
        "state": "signed",
        "method": "ssh",
        "principal": "alice@example.com",
        "key": fingerprint(team.alice),
        "subject": "archive",
    }
    lock_path.write_text(json.dumps(lock))
    write_policy(team, REQUIRE)
    with pytest.raises(PolicyError, match="another signer"):
        manager_for(team.into).execute_skill_script("greet", "scripts/hello.py", approver=None)


def test_policy_error_is_a_skill_magics_error():
    assert issubclass(PolicyError, SkillMagicsError) and issubclass(PolicyError, PermissionError)


def test_skills_policy_shows_the_file_in_force_and_its_content(team, ipython_shell, capsys):
    shell = ipython_shell(team.local)
    shell.run_line_magic("skills", "policy")
    assert "No policy in force" in capsys.readouterr().out
    path = write_policy(team, "[run]\nnetwork = false\n")
    shell.run_line_magic("skills", "policy")
    out = capsys.readouterr().out
    assert f"Policy in force: {path} (from the project)" in out and "network = false" in out


def test_a_network_grant_on_the_panel_cannot_get_past_no_network(team, bwrap):
    manager = manager_for(team.local)
    plan = manager.plan("hello", "scripts/hi.py", sandbox="read-only")  # made before the policy
    write_policy(team, "[run]\nnetwork = false\n")
    with pytest.raises(PolicyError, match=r"\[run\] network"):
        manager.grant_network("hello", by="approval panel (test)")
    assert refusals(manager)[-1].reason.startswith("network grant: Refused by the policy")
    # and a grant given before the policy counts for nothing once it is in force
    manager._grants.grant("hello")
    assert manager._executor.network_for(plan.prepared) is False


def test_adding_an_mcp_server_the_sources_do_not_allow_starts_nothing(team):
    write_policy(team, '[sources]\nallow = ["mcp:team"]\n')
    manager = manager_for(team.local)
    started = team.root / "server-started"
    command = [sys.executable, "-c", f"open({str(started)!r}, 'w')"]
    with pytest.raises(
        PolicyError, match=r"\[sources\] allow in .*policy.toml.*mcp:other matches none"
    ):
        manager.add_mcp_server("other", command=command, connect_timeout=5)
    assert not started.exists(), "refused before the server's process started"
    assert any("[sources] allow" in r.reason for r in refusals(manager))
    # An allowed label is NOT refused by the policy: the server starts (and, as it speaks
    # no MCP, fails to connect for that reason).
    with pytest.raises(SkillMagicsError) as failed:
        manager.add_mcp_server("team", command=command, connect_timeout=5)
    assert not isinstance(failed.value, PolicyError)
    assert started.exists()
