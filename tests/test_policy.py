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
from trust_support import (
    allowed_signers,
    keygen,
    no_policy_but_ours,
    sign_file,
    signed_repo,
)

from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.core.installed.lock import read_lock, tree_digest
from skill_magics.core.policy import Policy, PolicyError, current_policy, find_policy
from skill_magics.core.policy.load import describe_policy
from skill_magics.core.policy.rules import check_source
from skill_magics.core.sources.install import install_skills
from skill_magics.core.sources.update import sync_skills, update_skills, verify_signatures

pytestmark = [
    posix_only,
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen"),
]


@pytest.fixture
def team(isolated_env, monkeypatch):
    """A project folder (the cwd) with a local skill, keys, and no policy yet."""
    root = isolated_env
    no_policy_but_ours(root, monkeypatch)
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
    write_policy(team, '[run]\nmax_sandbox = "off"\n')  # fixed: NOT refused
    assert run_hello(manager).stdout.strip() == "hi"


def test_an_unknown_key_is_not_a_silent_weakening(team):
    path = write_policy(team, "[signatures]\nrequired = true\n")
    with pytest.raises(PolicyError, match=f"{path}.*line 2: unknown key 'required'"):
        run_hello(manager_for(team.local))
    write_policy(team, "[signatures]\nrequire = false\n")  # the key it knows: NOT refused
    assert run_hello(manager_for(team.local)).stdout.strip() == "hi"


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
    run = manager_for(team.into).execute_skill_script("greet", "scripts/hello.py", approver=None)
    assert "signed skill" in run.stdout  # still listed: NOT refused
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
    # NOT refused: a policy that says nothing of network lets the panel grant it
    write_policy(team, '[run]\nmax_sandbox = "read-only"\n')
    manager.grant_network("hello", by="approval panel (test)")
    assert manager._executor.network_for(plan.prepared) is True


def test_adding_an_mcp_server_the_sources_do_not_allow_starts_nothing(team):
    write_policy(team, '[sources]\nallow = ["mcp:team"]\n')
    manager = manager_for(team.local)
    started = team.root / "server-started"
    command = [sys.executable, "-c", f"open({str(started)!r}, 'w')"]
    with pytest.raises(
        PolicyError, match=r"\[sources\] allow in .*policy.toml.*mcp:other \(.*\) matches none"
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


def test_adding_a_folder_the_sources_do_not_allow_adds_nothing(team):
    other = team.root / "elsewhere"
    write_files(other / "stray", {"SKILL.md": skill_md("stray"), "scripts/s.py": "print(1)\n"})
    write_policy(team, f'[sources]\nallow = ["{team.local}/*"]\n')
    manager = manager_for(team.local)
    with pytest.raises(
        PolicyError, match=r"\[sources\] allow in .*policy.toml.*elsewhere/stray matches none"
    ):
        manager.add_dir(other)
    assert other not in manager.skill_dirs, "refused before anything was added"
    assert "stray" not in {m.name for m in manager.list_skills()}
    assert any(
        r.script == "(add folder)" and "[sources] allow" in r.reason for r in refusals(manager)
    )
    # What the rule must NOT refuse: a folder whose skills are all allowed (its own path does
    # not match, each skill's does), and a folder the pattern names itself.
    fresh = manager_for()
    fresh.skill_dirs = []
    assert fresh.add_dir(team.local) == team.local
    assert "hello" in {m.name for m in fresh.list_skills()}
    write_policy(team, f'[sources]\nallow = ["{other}"]\n')
    assert manager.add_dir(other) == other
    assert "stray" in {m.name for m in manager.list_skills()}


def test_skills_add_magic_refuses_a_folder_in_one_line(team, ipython_shell, capsys):
    other = team.root / "elsewhere"
    write_files(other / "stray", {"SKILL.md": skill_md("stray"), "scripts/s.py": "print(1)\n"})
    write_policy(team, f'[sources]\nallow = ["{team.local}/*"]\n')
    shell = ipython_shell(team.local)
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match=r"\[sources\] allow in .*policy.toml") as refused:
        shell.run_line_magic("skills", f"add {other}")
    assert "\n" not in str(refused.value) and "Added" not in capsys.readouterr().out


def test_openpgp_signers_are_named_by_fingerprint_in_the_policy(team, monkeypatch):
    """Real gpg keys: the publisher's keyring signs; the user's keyring holds their public
    keys, trusted by nobody; the policy's ``[signatures] openpgp`` is the trust."""
    from sources_support import make_repo
    from trust_support import gpg_copy_public, gpg_home, gpg_keygen, gpg_sign_repo, gpg_stop

    publisher, user = gpg_home(), gpg_home()
    try:
        carol = gpg_keygen(publisher, "Carol <carol@example.com>")
        dave = gpg_keygen(publisher, "Dave <dave@example.com>")
        for fpr in (carol, dave):
            gpg_copy_public(publisher, user, fpr)
        monkeypatch.setenv("GNUPGHOME", str(user))
        files = {"SKILL.md": skill_md("greet"), "scripts/hello.py": "print('hello')\n"}
        by_carol = make_repo(team.root / "carol" / "greet", files)
        gpg_sign_repo(by_carol, publisher, carol, tag="v1")
        by_dave = make_repo(team.root / "dave" / "greet", files)
        gpg_sign_repo(by_dave, publisher, dave, tag="v1")
        spaced = " ".join(carol[i : i + 4] for i in range(0, 40, 4))  # as gpg prints it
        write_policy(
            team,
            "[signatures]\nrequire = true\n"
            'allowed_signers = "allowed_signers"\n'
            f'openpgp = ["{spaced.lower()}"]\n',
        )
        # NOT refused: carol's key is listed (the user's keyring does not trust it; the policy does)
        install_skills(str(by_carol), ref="v1", into=team.into, approver=None)
        signature = read_lock(team.into).skills["greet"].signature
        assert signature is not None and signature.is_signed
        assert (signature.method, signature.key) == ("openpgp", carol)
        assert signature.principal == "Carol <carol@example.com>"
        assert signature.subject.startswith("tag v1")
        manager = manager_for(team.into)
        out = manager.execute_skill_script("greet", "scripts/hello.py", approver=None)
        assert out.stdout.strip() == "hello"  # the run check takes the recorded signer
        # refused: dave signed, validly, but the policy does not list his fingerprint
        shutil.rmtree(team.into)
        with pytest.raises(PolicyError, match=rf"\[signatures\] require in .*unknown key {dave}"):
            install_skills(str(by_dave), ref="v1", into=team.into, approver=None)
        assert not (team.into / "greet").exists()
        # without the policy's list, the same valid signature is an unknown signer
        write_policy(team, "")
        shutil.rmtree(team.into, ignore_errors=True)
        install_skills(str(by_dave), ref="v1", into=team.into, approver=None)
        unknown = read_lock(team.into).skills["greet"].signature
        assert unknown is not None and unknown.state.value == "unknown-signer"
        assert unknown.key == dave
    finally:
        gpg_stop(publisher, user)


def test_an_openpgp_fingerprint_that_is_not_one_breaks_the_policy(team):
    write_policy(team, '[signatures]\nopenpgp = ["carol@example.com"]\n')
    policy = current_policy()
    assert policy is not None and "line 2: [signatures] openpgp lists full key" in policy.broken


def test_a_run_of_an_openpgp_signer_the_policy_no_longer_lists_is_refused(team, monkeypatch):
    from sources_support import make_repo
    from trust_support import gpg_home, gpg_keygen, gpg_sign_repo, gpg_stop

    home = gpg_home()
    try:
        carol = gpg_keygen(home, "Carol <carol@example.com>")  # ultimately trusted: her own
        monkeypatch.setenv("GNUPGHOME", str(home))
        files = {"SKILL.md": skill_md("greet"), "scripts/hello.py": "print('hello')\n"}
        repo = make_repo(team.root / "greet", files)
        gpg_sign_repo(repo, home, carol)
        install_skills(str(repo), into=team.into, approver=None)
        manager = manager_for(team.into)
        write_policy(team, f'[signatures]\nrequire = true\nopenpgp = ["{carol}"]\n')
        run = manager.execute_skill_script("greet", "scripts/hello.py", approver=None)
        assert run.stdout.strip() == "hello"
        write_policy(team, '[signatures]\nrequire = true\nallowed_signers = "allowed_signers"\n')
        with pytest.raises(PolicyError, match=r"\[signatures\] openpgp.*list, which is empty"):
            manager.execute_skill_script("greet", "scripts/hello.py", approver=None)
    finally:
        gpg_stop(home)


def test_an_install_into_a_folder_of_other_sources_says_it_is_not_searched(team):
    """The installed skill passed [sources] allow; the folder it went into also holds a
    local skill the policy does not allow, so that folder is not added to the manager."""
    from sources_support import make_repo

    repo = make_repo(
        team.root / "greet", {"SKILL.md": skill_md("greet"), "scripts/g.py": "print(1)\n"}
    )
    write_policy(team, f'[sources]\nallow = ["{repo}"]\n')
    manager = manager_for()
    manager.skill_dirs = []
    with pytest.raises(PolicyError, match=r"local/hello matches none.*which is not searched"):
        install_skills(str(repo), into=team.local, approver=None, manager=manager)
    assert (team.local / "greet" / "SKILL.md").is_file()
    assert team.local not in manager.skill_dirs
    # NOT refused: a folder holding only what the policy allows is added
    other = team.root / "only-allowed"
    install_skills(str(repo), into=other, approver=None, manager=manager)
    assert "greet" in {m.name for m in manager.list_skills()}


def test_a_source_is_matched_as_the_lock_records_it_at_install_and_at_run(team):
    """The pattern a team writes for its repository's URL allows an install at any ref and
    every run of what it installed: the same text (the URL or path, as skills-lock.json
    records it, without @REF or a subfolder) is matched at install, sync, update and run."""
    repo = signed_repo(team.root / "src" / "greet", team.alice)
    write_policy(team, f'[sources]\nallow = ["{repo}"]\n')
    install_skills(str(repo), ref="v1", into=team.into, approver=None)  # NOT refused
    assert read_lock(team.into).skills["greet"].source == str(repo)
    run = manager_for(team.into).execute_skill_script("greet", "scripts/hello.py", approver=None)
    assert "signed skill" in run.stdout  # NOT refused
    update_skills(team.into, approver=None)  # NOT refused
    other = signed_repo(team.root / "other" / "greet", team.alice)
    with pytest.raises(PolicyError, match=r"\[sources\] allow in .*other/greet matches none"):
        install_skills(str(other), ref="v1", into=team.root / "x", approver=None)


def test_sync_and_update_check_the_locked_source_before_fetching_it(team):
    repo = signed_repo(team.root / "src" / "greet", team.alice)
    install_skills(str(repo), into=team.into, approver=None)
    shutil.rmtree(team.into / "greet")
    shutil.rmtree(repo)  # a fetch would fail: the policy must refuse before one is tried
    write_policy(team, '[sources]\nallow = ["https://github.com/acme/*"]\n')
    for action in (sync_skills, update_skills):
        with pytest.raises(PolicyError, match=r"\[sources\] allow in .*src/greet matches none"):
            action(team.into, approver=None)


def test_a_source_with_dot_segments_never_matches_a_pattern(team):
    """``file:///allowed/../elsewhere`` matches ``file:///allowed/*`` as text, but git (and
    curl, for https) fetch the resolved place: such a source is refused, whatever the
    pattern; the resolved form is matched as usual."""
    allowed = team.root / "allowed"
    allowed.mkdir()
    signed_repo(team.root / "evil" / "greet", team.mallory)
    write_policy(team, f'[sources]\nallow = ["file://{allowed}/*"]\n')
    sneaky = f"file://{allowed}/../evil/greet"
    with pytest.raises(PolicyError, match=r"\[sources\] allow in .*'\.\.'"):
        install_skills(sneaky, into=team.into, approver=None)
    assert not team.into.exists()
    for hostile in (
        "https://github.com/acme/x/../../evil/skills",
        "https://github.com/acme/%2e%2e/evil/skills",
        "https://github.com/acme/./../evil",
        "git@github.com:acme/../evil/skills",
    ):
        policy = Policy(
            "/p.toml", sources_allow=("https://github.com/acme/*", "git@github.com:acme/*")
        )
        with pytest.raises(PolicyError, match="'..'"):
            check_source(policy, hostile)
    # NOT refused: a name holding dots that is not a dot segment
    policy = Policy("/p.toml", sources_allow=("https://github.com/acme/*",))
    check_source(policy, "https://github.com/acme/skills..v2.git")
    check_source(policy, "https://github.com/acme/.dotfiles")
    ok = signed_repo(allowed / "greet", team.alice)
    install_skills(f"file://{ok}", into=team.into, approver=None)


def test_an_allowed_signers_file_others_can_write_is_not_trusted(team):
    """Whoever can write the allowed-signers file decides whose signature counts: a file
    others can write (or a link to one, or one in a folder others can write) refuses the
    install and every run, one line naming it; the same file kept private does not."""
    write_policy(team, REQUIRE)
    signers = team.project / ".skill-magics" / "allowed_signers"
    repo = signed_repo(team.root / "ok" / "greet", team.alice)
    signers.chmod(0o666)
    with pytest.raises(PolicyError, match=r"allowed_signers.*which others can write"):
        install_skills(str(repo), ref="v1", into=team.into, approver=None)
    assert not team.into.exists()
    signers.chmod(0o644)
    install_skills(str(repo), ref="v1", into=team.into, approver=None)  # NOT refused
    manager = manager_for(team.into)
    assert "signed" in manager.execute_skill_script("greet", "hello", approver=None).stdout
    signers.chmod(0o666)
    with pytest.raises(PolicyError, match=r"\[signatures\] allowed_signers in .*others can write"):
        manager.execute_skill_script("greet", "hello", approver=None)
    # a link to a file in a folder anyone may write into (no sticky bit)
    shared = team.root / "shared"
    shared.mkdir()
    (shared / "allowed_signers").write_text(signers.read_text())
    shared.chmod(0o777)
    signers.unlink()
    signers.symlink_to(shared / "allowed_signers")
    with pytest.raises(PolicyError, match=r"others can write"):
        manager.execute_skill_script("greet", "hello", approver=None)
    shared.chmod(0o755)
    assert "signed" in manager.execute_skill_script("greet", "hello", approver=None).stdout


def test_a_policy_link_in_a_folder_others_can_write_is_refused(team):
    """The link itself can be swapped by whoever writes its folder (for another file of
    root's, or removed): such a folder refuses the policy, as it does a plain file there."""
    target = team.root / "team-policy" / "policy.toml"
    target.parent.mkdir()
    target.write_text('[skills]\nblock = ["other"]\n')
    folder = team.project / ".skill-magics"
    (folder / "policy.toml").symlink_to(target)
    folder.chmod(0o777)
    try:
        with pytest.raises(PolicyError, match=r"\.skill-magics, which others can write"):
            run_hello(manager_for(team.local))
    finally:
        folder.chmod(0o755)
    assert run_hello(manager_for(team.local)).stdout.strip() == "hi"  # NOT refused


def test_no_level_weakens_another_every_policy_found_applies(team, monkeypatch, bwrap):
    """A team's policy at the repository's root, a permissive one nearer the notebook (a
    subfolder's, even an empty file a cloned folder brings), $SKILL_MAGICS_POLICY naming a
    permissive file, and the user's own stricter one: every rule of every file holds."""
    write_policy(team, '[skills]\nblock = ["hel*"]\n')  # the team's, at the root
    notebooks = team.project / "notebooks"
    (notebooks / ".skill-magics").mkdir(parents=True)
    (notebooks / ".skill-magics" / "policy.toml").write_text("")  # allows everything
    monkeypatch.chdir(notebooks)
    lax = team.root / "lax.toml"
    lax.write_text("")
    monkeypatch.setenv("SKILL_MAGICS_POLICY", str(lax))
    from skill_magics.core.policy import find_policies

    assert [how for _path, how in find_policies()] == [
        "$SKILL_MAGICS_POLICY",
        "the project",
        "the project",
    ]
    with pytest.raises(PolicyError, match=r"\[skills\] block in .*work/.skill-magics.*blocked"):
        run_hello(manager_for(team.local))
    with pytest.raises(PolicyError, match=r"\[skills\] block"):
        install_skills(str(team.local / "hello"), into=team.into, approver=None)
    # the user's own stricter policy holds in this project too
    write_policy(team, "")
    user = team.root / "config" / "skill-magics" / "policy.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[run]\nmax_sandbox = "read-only"\n')
    with pytest.raises(PolicyError, match=r"\[run\] max_sandbox in .*config/skill-magics"):
        run_hello(manager_for(team.local), sandbox="off")
    assert run_hello(manager_for(team.local), sandbox="read-only").stdout.strip() == "hi"
    text = describe_policy()
    assert text.startswith("4 policies in force, highest level first; each applies:")
    assert text.count("Policy in force:") == 4 and "max_sandbox" in text
    # a broken file at any level refuses everything
    (notebooks / ".skill-magics" / "policy.toml").write_text("[run\n")
    with pytest.raises(PolicyError, match=r"notebooks/.skill-magics/policy.toml does not parse"):
        run_hello(manager_for(team.local), sandbox="read-only")


def test_a_policy_in_force_at_launch_is_checked_though_the_plan_was_made_before(team, bwrap):
    """A plan made before a policy came into force (or changed while the approval panel
    waited) is checked again right before its process starts: refused, audited, nothing
    run; a plan the new policy allows still runs."""
    marker = team.local / "hello" / "scripts" / "hi.py"
    marker.write_text("import pathlib\npathlib.Path(__file__).with_name('ran').write_text('1')\n")
    manager = manager_for(team.local)
    blocked = manager.plan("hello", "scripts/hi.py")
    unsandboxed = manager.plan("hello", "scripts/hi.py", sandbox="off")
    write_policy(team, '[skills]\nblock = ["hello"]\n')
    with pytest.raises(PolicyError, match=r"\[skills\] block in .*'?hello'? is blocked"):
        manager.run_planned(blocked, None).script_result()
    assert not (marker.parent / "ran").exists()
    assert "[skills] block" in refusals(manager)[-1].reason
    write_policy(team, '[run]\nmax_sandbox = "read-only"\n')
    with pytest.raises(PolicyError, match=r"\[run\] max_sandbox in .*'off'"):
        manager.run_planned(unsandboxed, None).script_result()
    assert not (marker.parent / "ran").exists()
    write_policy(team, '[skills]\nblock = ["other"]\n')
    manager.run_planned(unsandboxed, None).script_result()  # NOT refused
    assert (marker.parent / "ran").exists()


def test_a_lock_naming_an_allowed_source_is_believed_once_this_machine_fetched_from_it(team):
    """skills-lock.json travels with a project and anyone can edit it: the source it names
    counts for [sources] allow only when this machine installed (or verified) those files
    from that source; a lock edited to name an allowed source for files from elsewhere is
    refused, and so is a cloned lock until %skills verify --signatures fetched again."""
    good = signed_repo(team.root / "acme" / "greet", team.alice)
    evil = signed_repo(team.root / "evil" / "pdf", team.mallory, name="pdf")
    install_skills(str(good), into=team.into, approver=None)
    install_skills(str(evil), into=team.into, approver=None)  # no policy yet
    lock_path = team.into / "skills-lock.json"
    lock = json.loads(lock_path.read_text())
    lock["skills"]["pdf"]["source"] = str(good)  # the files came from elsewhere
    lock_path.write_text(json.dumps(lock))
    write_policy(team, f'[sources]\nallow = ["{good}"]\n')
    manager = manager_for(team.into)
    with pytest.raises(PolicyError, match=r"\[sources\] allow in .*not fetched from it here"):
        manager.execute_skill_script("pdf", "scripts/hello.py", approver=None)
    run = manager.execute_skill_script("greet", "scripts/hello.py", approver=None)
    assert "signed skill" in run.stdout  # installed here from there: NOT refused
    # a clone of the project (nothing recorded on this machine): refused until verified
    shutil.rmtree(team.root / "trust")
    with pytest.raises(PolicyError, match=r"not fetched from it here.*verify --signatures"):
        manager.execute_skill_script("greet", "scripts/hello.py", approver=None)
    del lock["skills"]["pdf"]
    lock_path.write_text(json.dumps(lock))
    assert verify_signatures(team.into) == []
    run = manager.execute_skill_script("greet", "scripts/hello.py", approver=None)
    assert "signed skill" in run.stdout  # NOT refused
