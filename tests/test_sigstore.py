"""Sigstore bundles beside archives (core/trust/sigstore.py), verified for real and offline by
the ``sigstore`` package against a private sigstore instance the test makes
(tests/sigstore_support.py: real CA, SCT, transparency-log and checkpoint signatures), and
held to the team policy's ``[signatures] sigstore`` identities; what must NOT be refused.

No network: every test runs with an unreachable proxy set, so a lookup would fail.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from manager_support import manager_for
from sigstore_support import Instance
from sources_support import package_skill, skill_md, write_files

from skill_magics.core.installed.lock import read_lock
from skill_magics.core.installed.signature import SignatureState
from skill_magics.core.policy import PolicyError, current_policy
from skill_magics.core.sources.install import install_skills
from skill_magics.core.trust.sigstore import verify_bundle

ALICE = "alice@example.com"
ISSUER = "https://issuer.skill-magics.test"
LISTED = f"{ALICE} {ISSUER}"


@pytest.fixture
def site(isolated_env, monkeypatch):
    """A project with an archive signed through a private sigstore instance; no policy yet."""
    root = isolated_env
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing answers there: no network
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(root / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "config"))
    monkeypatch.setenv("SKILL_MAGICS_TRUST_DIR", str(root / "trust"))
    monkeypatch.delenv("SKILL_MAGICS_POLICY", raising=False)
    monkeypatch.delenv("SKILL_MAGICS_ALLOWED_SIGNERS", raising=False)
    instance = Instance.new()
    project = root / "work"
    (project / ".skill-magics").mkdir(parents=True)
    instance.trusted_root(project / ".skill-magics" / "trusted_root.json")
    skill = root / "src" / "greet"
    write_files(skill, {"SKILL.md": skill_md("greet"), "scripts/hi.py": "print('hi')\n"})
    (root / "dist").mkdir()
    archive = package_skill(skill, root / "dist" / "greet.skill")
    bundle = instance.sign_file(archive, ALICE, ISSUER)
    return SimpleNamespace(
        root=root,
        instance=instance,
        project=project,
        root_file=project / ".skill-magics" / "trusted_root.json",
        archive=archive,
        bundle=bundle,
        into=project / ".agents" / "skills",
    )


def write_policy(site, body: str) -> Path:
    path = site.project / ".skill-magics" / "policy.toml"
    path.write_text(body)
    return path


def verify(site, identities=(LISTED,), artifact=None, bundle=None, root=None):
    return verify_bundle(
        artifact or site.archive,
        bundle or site.bundle,
        list(identities),
        str(root or site.root_file),
        "archive",
    )


def test_a_bundle_is_verified_offline_and_its_identity_decided(site):
    signed = verify(site)
    assert signed.state is SignatureState.SIGNED and signed.method == "sigstore"
    assert signed.principal == f"{ALICE} ({ISSUER})" and len(signed.key) == 64
    # Valid, but by an identity (or issuer) nobody listed: an unknown signer, never signed
    for listed in ((), (f"bob@example.com {ISSUER}",), (f"{ALICE} https://other.test",)):
        unknown = verify(site, listed)
        assert unknown.state is SignatureState.UNKNOWN and unknown.key == signed.key


def test_hostile_bundles_are_bad(site):
    # other bytes than were signed
    other = site.root / "other.skill"
    other.write_bytes(site.archive.read_bytes() + b"\0")
    assert verify(site, artifact=other).state is SignatureState.BAD
    # a bundle from another sigstore instance, whose authority the root does not name
    stranger = Instance.new("Someone Else's CA")
    foreign = site.root / "foreign.sigstore.json"
    foreign.write_text(stranger.sign(site.archive.read_bytes(), ALICE, ISSUER))
    bad = verify(site, bundle=foreign)
    assert bad.state is SignatureState.BAD and "does not verify" in bad.note
    # a log entry whose signed timestamp was altered
    data = json.loads(site.bundle.read_text())
    entry = data["verificationMaterial"]["tlogEntries"][0]
    entry["integratedTime"] = str(int(entry["integratedTime"]) + 60)
    altered = site.root / "altered.sigstore.json"
    altered.write_text(json.dumps(data))
    assert verify(site, bundle=altered).state is SignatureState.BAD
    # not a bundle at all
    junk = site.root / "junk.sigstore.json"
    junk.write_text("{}")
    assert verify(site, bundle=junk).state is SignatureState.BAD


def test_the_public_good_root_is_used_offline(site):
    """No trusted root named: sigstore's own (as the package ships it), no refresh, no
    network; our instance's bundle does not chain to it."""
    result = verify_bundle(site.archive, site.bundle, [LISTED], None, "archive")
    assert result.state is SignatureState.BAD and "does not verify" in result.note


def test_without_the_package_a_bundle_is_left_unverified(site, monkeypatch):
    for name in [m for m in sys.modules if m == "sigstore" or m.startswith("sigstore.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sigstore", None)  # what an uninstalled package gives
    result = verify(site)
    assert result.state is SignatureState.UNSIGNED
    assert "not verified" in result.note and "skill-magics[sigstore]" in result.note


def test_an_archive_installs_and_runs_under_a_policy_naming_its_identity(site):
    write_policy(
        site,
        "[signatures]\nrequire = true\n"
        f'sigstore = ["{LISTED}"]\nsigstore_trusted_root = "trusted_root.json"\n',
    )
    install_skills(str(site.archive), into=site.into, approver=None)
    locked = read_lock(site.into).skills["greet"].signature
    assert locked is not None and locked.is_signed and locked.method == "sigstore"
    assert locked.subject.startswith("archive sha256:")
    manager = manager_for(site.into)
    assert manager.execute_skill_script("greet", "hi", approver=None).stdout.strip() == "hi"
    # the team stops listing alice: her skill no longer runs, one line naming the rule
    write_policy(
        site,
        "[signatures]\nrequire = true\n"
        f'sigstore = ["bob@example.com {ISSUER}"]\nsigstore_trusted_root = "trusted_root.json"\n',
    )
    with pytest.raises(PolicyError, match=r"\[signatures\] sigstore in .*alice@example.com"):
        manager.execute_skill_script("greet", "hi", approver=None)


def test_an_archive_whose_identity_the_policy_does_not_name_is_refused_at_install(site):
    write_policy(
        site,
        "[signatures]\nrequire = true\n"
        f'sigstore = ["bob@example.com {ISSUER}"]\nsigstore_trusted_root = "trusted_root.json"\n',
    )
    with pytest.raises(PolicyError, match=r"\[signatures\] require in .*unknown key"):
        install_skills(str(site.archive), into=site.into, approver=None)
    assert not (site.into / "greet").exists()


def test_a_bad_bundle_refuses_the_install_with_or_without_a_policy(site):
    from skill_magics.core.base.errors import SourceError

    stranger = Instance.new("Someone Else's CA")
    site.bundle.write_text(stranger.sign(site.archive.read_bytes(), ALICE, ISSUER))
    write_policy(site, '[signatures]\nsigstore_trusted_root = "trusted_root.json"\n')
    with pytest.raises(SourceError, match="BAD signature"):
        install_skills(str(site.archive), into=site.into, approver=None)
    assert not (site.into / "greet").exists()


def test_a_sigstore_identity_that_is_not_one_breaks_the_policy(site):
    write_policy(site, f'[signatures]\nsigstore = ["{ALICE}"]\n')
    policy = current_policy()
    assert policy is not None and "line 2: [signatures] sigstore:" in policy.broken


def test_a_trusted_root_others_can_write_is_not_trusted(site):
    """Whoever writes the trusted root decides which authority counts: one others can write
    refuses the install in one line; kept private, it does not."""
    write_policy(
        site,
        "[signatures]\nrequire = true\n"
        f'sigstore = ["{LISTED}"]\nsigstore_trusted_root = "trusted_root.json"\n',
    )
    site.root_file.chmod(0o666)
    with pytest.raises(PolicyError, match=r"trusted_root.json, which others can write"):
        install_skills(str(site.archive), into=site.into, approver=None)
    assert not (site.into / "greet").exists()
    site.root_file.chmod(0o644)
    install_skills(str(site.archive), into=site.into, approver=None)  # NOT refused
