"""Signatures, verified never assumed (core/trust): real ssh-keygen keys, real git signed tags
and commits in local repositories, real signed archives; what is recorded in the lock and the
private record, and the hostile cases (an unknown key, a signature over other bytes, another
namespace, a tag re-pointed after signing, a lock edited to name another signer).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from manager_support import manager_for, posix_only
from sources_support import commit_all, git, package_skill, skill_md, write_files
from trust_support import (
    allowed_signers,
    fingerprint,
    gpg_home,
    gpg_keygen,
    gpg_stop,
    keygen,
    sign_file,
    signed_repo,
    use_key,
)

from skill_magics.core.base.errors import SourceError
from skill_magics.core.installed.lock import read_lock
from skill_magics.core.installed.signature import Signature, SignatureState
from skill_magics.core.sources.install import install_skills
from skill_magics.core.sources.update import sync_skills, update_skills
from skill_magics.core.sources.verify import verify_skills
from skill_magics.core.trust import record
from skill_magics.core.trust.installed import origin_of
from skill_magics.core.trust.signers import load_signers

pytestmark = [
    posix_only,
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen"),
]


@pytest.fixture
def keys(isolated_env, monkeypatch):
    """alice (allowed) and mallory (not), the allowed-signers file, a private trust record
    folder, and no policy."""
    root = isolated_env
    monkeypatch.setenv("SKILL_MAGICS_TRUST_DIR", str(root / "trust"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "config"))
    monkeypatch.delenv("SKILL_MAGICS_POLICY", raising=False)
    alice = keygen(root / "keys", "alice")
    mallory = keygen(root / "keys", "mallory")
    allowed = allowed_signers(root / "allowed_signers", ("alice@example.com", alice))
    monkeypatch.setenv("SKILL_MAGICS_ALLOWED_SIGNERS", str(allowed))
    return SimpleNamespace(
        root=root, alice=alice, mallory=mallory, allowed=allowed, into=root / "work" / "skills"
    )


def locked_signature(keys, folder: str = "greet") -> Signature:
    signature = read_lock(keys.into).skills[folder].signature
    assert signature is not None
    return signature


def test_allowed_signers_fingerprints_are_ssh_keygens(keys):
    (signer,) = load_signers(keys.allowed)
    assert signer.principals == ("alice@example.com",)
    assert signer.fingerprint == fingerprint(keys.alice)


def test_a_signed_tag_is_verified_recorded_in_the_lock_and_the_private_record(keys):
    repo = signed_repo(keys.root / "greet", keys.alice)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    sig = locked_signature(keys)
    commit = git(repo, "rev-parse", "v1^{commit}")
    assert sig.state is SignatureState.SIGNED
    assert (sig.method, sig.principal, sig.key) == (
        "ssh",
        "alice@example.com",
        fingerprint(keys.alice),
    )
    assert sig.subject == f"tag v1 (commit {commit[:12]})"
    raw = json.loads((keys.into / "skills-lock.json").read_text())["skills"]["greet"]
    assert raw["signature"]["principal"] == "alice@example.com"
    # a run believes the private record, found by the installed tree's digest
    origin = origin_of(keys.into / "greet", "greet")
    assert origin.signature == sig and origin.tree == read_lock(keys.into).skills["greet"].tree
    assert "signed by alice@example.com" in origin.signature.describe()


def test_a_signed_commit_on_a_branch_is_verified(keys):
    repo = signed_repo(keys.root / "greet", keys.alice, tag="")
    install_skills(str(repo), into=keys.into, approver=None)
    sig = locked_signature(keys)
    assert sig.is_signed and sig.subject.startswith("commit ")


def test_a_key_not_in_the_allowed_signers_is_unknown_and_not_refused_without_a_policy(keys):
    repo = signed_repo(keys.root / "greet", keys.mallory)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)  # must NOT refuse
    sig = locked_signature(keys)
    assert sig.state is SignatureState.UNKNOWN and sig.key == fingerprint(keys.mallory)
    assert not origin_of(keys.into / "greet", "greet").signature.is_signed


def test_an_unsigned_commit_and_a_local_folder_are_unsigned(keys):
    repo = signed_repo(keys.root / "greet", keys.alice, tag="")
    write_files(repo, {"scripts/more.py": "print(2)\n"})
    commit_all(repo, "unsigned change")
    install_skills(str(repo), into=keys.into, approver=None)
    assert locked_signature(keys).state is SignatureState.UNSIGNED
    local = keys.root / "local" / "mine"
    write_files(local, {"SKILL.md": skill_md("mine")})
    assert origin_of(local, "mine").signature.describe() == "unsigned (local)"
    assert origin_of(local, "srv/mine").signature.describe() == "unsigned (MCP server srv)"


def test_a_tag_repointed_at_another_signed_tag_is_bad_and_refused(keys):
    repo = signed_repo(keys.root / "greet", keys.alice)
    # v2 made to point at v1's signed tag object: the signature is alice's, the name is not
    tag_object = git(repo, "rev-parse", "v1")
    git(repo, "update-ref", "refs/tags/v2", tag_object)
    with pytest.raises(SourceError, match="BAD signature.*named 'v1', fetched as 'v2'"):
        install_skills(str(repo), ref="v2", into=keys.into, approver=None)
    assert not keys.into.exists() or not (keys.into / "greet").exists()


def test_a_tag_force_moved_to_another_signer_is_a_change_update_shows(keys):
    repo = signed_repo(keys.root / "greet", keys.alice)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    # the same bytes, re-committed and re-tagged by mallory: another signer is never silent
    use_key(repo, keys.mallory)
    git(repo, "commit", "-q", "--allow-empty", "-S", "-m", "same files, another signer")
    git(repo, "tag", "-f", "-s", "-m", "v1 again", "v1")
    seen = []
    report = update_skills(keys.into, approver=lambda r: seen.append(r) or "yes_once")
    (request,) = seen
    (change, *_rest) = request.skill_install.changes
    assert change.startswith("signer: signed by alice@example.com") and "unknown key" in change
    assert "unknown key" in request.skill_install.signature
    assert report.skills[0].status == "updated"
    assert locked_signature(keys).state is SignatureState.UNKNOWN
    # sync of a lock naming alice against a source now signed by mallory refuses
    lock = json.loads((keys.into / "skills-lock.json").read_text())
    assert lock["skills"]["greet"]["signature"]["state"] == "unknown-signer"


def test_sync_refuses_a_source_whose_signer_changed(keys):
    repo = signed_repo(keys.root / "greet", keys.alice)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    shutil.rmtree(keys.into / "greet")
    use_key(repo, keys.mallory)
    git(repo, "commit", "-q", "--allow-empty", "-S", "-m", "same files, another signer")
    git(repo, "tag", "-f", "-s", "-m", "v1 again", "v1")
    lock_path = keys.into / "skills-lock.json"
    lock = json.loads(lock_path.read_text())
    lock["skills"]["greet"]["commit"] = None  # sync fetches the ref, now re-signed
    lock_path.write_text(json.dumps(lock))
    with pytest.raises(Exception, match="signer: signed by alice"):
        sync_skills(keys.into, approver=None)


def test_a_lock_edited_to_name_another_signer_is_not_believed(keys):
    repo = signed_repo(keys.root / "greet", keys.mallory)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    lock_path = keys.into / "skills-lock.json"
    lock = json.loads(lock_path.read_text())
    lock["skills"]["greet"]["signature"] = {
        "state": "signed",
        "method": "ssh",
        "principal": "alice@example.com",
        "key": fingerprint(keys.alice),
        "subject": "tag v1",
    }
    lock_path.write_text(json.dumps(lock))
    sig = origin_of(keys.into / "greet", "greet").signature
    assert not sig.is_signed and "another signer" in sig.note
    # %skills verify (offline: nothing fetched) says so too
    (line,) = verify_skills(keys.into)
    assert line.startswith("greet: unsigned (skills-lock.json names another signer")
    # and with no record at all (a lock cloned from elsewhere): not believed either
    shutil.rmtree(keys.root / "trust")
    sig = origin_of(keys.into / "greet", "greet").signature
    assert not sig.is_signed and "not verified on this machine" in sig.note


def test_a_record_others_can_write_is_no_record(keys):
    repo = signed_repo(keys.root / "greet", keys.alice)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    tree = read_lock(keys.into).skills["greet"].tree
    assert record.recalled(tree)
    (keys.root / "trust").chmod(0o777)
    assert record.recalled(tree) == ()


# -- archives -----------------------------------------------------------------------------


def make_archive(keys) -> Path:
    skill = keys.root / "src" / "greet"
    write_files(skill, {"SKILL.md": skill_md("greet"), "scripts/hello.py": "print(1)\n"})
    (keys.root / "dist").mkdir()
    return package_skill(skill, keys.root / "dist" / "greet.skill")


def test_a_signed_archive_is_verified(keys):
    archive = make_archive(keys)
    sign_file(keys.alice, archive)
    install_skills(str(archive), into=keys.into, approver=None)
    sig = locked_signature(keys)
    assert sig.is_signed and sig.principal == "alice@example.com"
    assert sig.subject.startswith("archive sha256:")


def test_an_archive_without_a_signature_is_unsigned_and_installs(keys):
    install_skills(str(make_archive(keys)), into=keys.into, approver=None)
    assert locked_signature(keys).describe() == "unsigned (no greet.skill.sig)"


def test_an_archive_signed_by_an_unknown_key_is_unknown(keys):
    archive = make_archive(keys)
    sign_file(keys.mallory, archive)
    install_skills(str(archive), into=keys.into, approver=None)
    assert locked_signature(keys).state is SignatureState.UNKNOWN


def test_a_valid_signature_over_other_bytes_is_refused(keys):
    archive = make_archive(keys)
    sign_file(keys.alice, archive)
    with zipfile.ZipFile(archive, "a") as z:  # the bytes change after signing
        z.writestr("greet/scripts/evil.py", "print('evil')\n")
    with pytest.raises(SourceError, match="BAD signature.*greet.skill.sig does not verify"):
        install_skills(str(archive), into=keys.into, approver=None)
    assert not (keys.into / "greet").exists()


def test_a_signature_for_another_namespace_is_refused(keys):
    archive = make_archive(keys)
    sign_file(keys.alice, archive, namespace="git")
    with pytest.raises(SourceError, match="BAD signature"):
        install_skills(str(archive), into=keys.into, approver=None)


def test_the_lock_reads_a_hostile_signature_as_an_error(keys):
    install_skills(str(make_archive(keys)), into=keys.into, approver=None)
    lock_path = keys.into / "skills-lock.json"
    lock = json.loads(lock_path.read_text())
    lock["skills"]["greet"]["signature"] = {"state": "signed", "principal": "x\ny"}
    lock_path.write_text(json.dumps(lock))
    with pytest.raises(Exception, match="signature"):
        read_lock(keys.into)


def test_gate_session_approval_is_bound_to_the_signer(keys):
    del keys  # the store alone: same bytes, another signer asks again
    from skill_magics.core.run.gating.approval import ApprovalRequest
    from skill_magics.core.run.gating.store import ApprovalStore

    alice = Signature.signed("ssh", "alice@example.com", "SHA256:" + "a" * 43, "tag v1")
    mallory = Signature.signed("ssh", "mallory", "SHA256:" + "b" * 43, "tag v1")
    store = ApprovalStore()
    first = ApprovalRequest("greet", (), content_hash="h", signature=alice)
    store.approve("greet", "h", None, "", store.binding(first))
    assert store.covers(first)
    assert not store.covers(ApprovalRequest("greet", (), content_hash="h", signature=mallory))
    assert not store.covers(ApprovalRequest("greet", (), content_hash="h"))


def test_manager_runs_show_the_signer_in_the_request(keys):
    repo = signed_repo(keys.root / "greet", keys.alice)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    manager = manager_for(keys.into)
    seen = []
    result = manager.execute_skill_script(
        "greet", "scripts/hello.py", approver=lambda r: seen.append(r) or "yes_once"
    )
    assert "hello from a signed skill" in result.stdout
    assert seen[0].signature is not None and seen[0].signature.principal == "alice@example.com"


def test_the_signer_is_shown_where_a_person_decides(keys, ipython_shell, capsys):
    from skill_magics.core.prompt.available_skills import available_skills
    from skill_magics.notebook.approval.panel import summary_text

    repo = signed_repo(keys.root / "greet", keys.alice)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    signed = f"signed by alice@example.com (ssh key {fingerprint(keys.alice)}; tag v1"
    # the install's own question showed it before anything was copied
    seen = []
    shutil.rmtree(keys.into / "greet")
    (keys.into / "skills-lock.json").unlink()
    install_skills(
        str(repo), ref="v1", into=keys.into, approver=lambda r: seen.append(r) or "yes_once"
    )
    assert f"signature: {signed}" in summary_text(seen[0])
    # the run's approval panel, %skills, %skills show, <available_skills>
    manager = manager_for(keys.into)
    asked = []
    manager.execute_skill_script(
        "greet", "scripts/hello.py", approver=lambda r: asked.append(r) or "yes_once"
    )
    assert f"Signature: {signed}" in summary_text(asked[0]).replace("  ", " ")
    assert signed in available_skills(manager)
    shell = ipython_shell(keys.into)
    capsys.readouterr()
    listed = shell.run_line_magic("skills", "")
    assert "signature" in repr(listed) and "signed by alice@example.com" in repr(listed)
    shown = shell.run_line_magic("skills", "show greet")
    assert signed in repr(shown)


def test_well_known_artifacts_with_a_detached_signature_on_a_local_http_server(keys):
    from wellknown_support import Site, entry, serve, zip_bytes

    def signed_by(key: Path, data: bytes, name: str) -> bytes:
        path = keys.root / "sign" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        return sign_file(key, path).read_bytes()

    def skill_zip(name: str) -> bytes:
        return zip_bytes({f"{name}/SKILL.md": skill_md(name).encode()})

    good, other, plain, bad = (skill_zip(n) for n in ("good", "other", "plain", "bad"))
    with serve(Site()) as site:
        index = []
        for name, data, sig in [
            ("good", good, signed_by(keys.alice, good, "good.zip")),
            ("other", other, signed_by(keys.mallory, other, "other.zip")),
            ("plain", plain, None),
            ("bad", bad, signed_by(keys.alice, good, "bad.zip")),  # over other bytes
        ]:
            url = site.publish(f"/a/{name}.zip", data)
            if sig is not None:
                site.publish(f"/a/{name}.zip.sig", sig)
            index.append(entry(name, "archive", url, data))
        site.index(index)
        install_skills(site.base, skills=["good", "other", "plain"], into=keys.into, approver=None)
        lock = read_lock(keys.into).skills
        assert lock["good"].signature.is_signed
        assert lock["good"].signature.principal == "alice@example.com"
        assert lock["other"].signature.state is SignatureState.UNKNOWN
        assert lock["plain"].signature.state is SignatureState.UNSIGNED
        assert origin_of(keys.into / "good", "good").signature.is_signed
        with pytest.raises(SourceError, match="bad.*BAD signature"):
            install_skills(site.base, skills=["bad"], into=keys.into, approver=None)


@pytest.fixture
def gnupg(monkeypatch):
    """A private OpenPGP keyring with one ultimately trusted key (gpg's own for a key it
    made); its agent is stopped afterwards. gpg is installed by ``make`` (Debian's gnupg)."""
    assert shutil.which("gpg"), "gpg is not installed: apt-get install -y gnupg (make does)"
    home = gpg_home()
    monkeypatch.setenv("GNUPGHOME", str(home))
    uid = "Carol <carol@example.com>"
    fpr = gpg_keygen(home, uid)
    yield SimpleNamespace(home=home, fpr=fpr, uid=uid)
    gpg_stop(home)


def test_an_openpgp_signed_commit_is_verified_against_the_users_keyring(keys, gnupg, monkeypatch):
    repo = signed_repo(keys.root / "greet", keys.alice, tag="")
    git(repo, "config", "gpg.format", "openpgp")
    git(repo, "config", "user.signingkey", gnupg.fpr)
    git(repo, "commit", "-q", "--amend", "-S", "--no-edit")
    install_skills(str(repo), into=keys.into, approver=None)
    sig = locked_signature(keys)
    assert (sig.state, sig.method, sig.key) == (SignatureState.SIGNED, "openpgp", gnupg.fpr)
    assert sig.principal == gnupg.uid
    # another user's keyring without the key: a valid signature nobody here vouches for
    empty = gpg_home()
    monkeypatch.setenv("GNUPGHOME", str(empty))
    try:
        shutil.rmtree(keys.into)
        install_skills(str(repo), into=keys.into, approver=None)
        assert locked_signature(keys).state is SignatureState.UNKNOWN
    finally:
        gpg_stop(empty)


def test_verify_signatures_trusts_a_cloned_lock_and_names_another_signer(keys):
    from skill_magics.core.sources.update import verify_signatures

    repo = signed_repo(keys.root / "greet", keys.alice)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    shutil.rmtree(keys.root / "trust")  # as on another machine: the lock alone is not believed
    assert not origin_of(keys.into / "greet", "greet").signature.is_signed
    assert verify_signatures(keys.into) == []  # verified again at the locked commit
    assert origin_of(keys.into / "greet", "greet").signature.is_signed
    # a lock edited to name mallory: verify names the difference, the record is unchanged
    lock_path = keys.into / "skills-lock.json"
    lock = json.loads(lock_path.read_text())
    lock["skills"]["greet"]["signature"]["principal"] = "mallory@example.com"
    lock_path.write_text(json.dumps(lock))
    (line,) = verify_signatures(keys.into)
    assert line.startswith("greet: signer: signed by mallory@example.com") and "alice" in line
    assert not origin_of(keys.into / "greet", "greet").signature.is_signed


def test_allowed_signers_options_hold_commas_of_their_own() -> None:
    """``namespaces="a,b"`` is one option with two namespaces (ssh's format), not two options."""
    from skill_magics.core.trust.signers import parse_signers

    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    text = (
        f'alice@example.com,bob@x namespaces="git,skill-magics",valid-after=20200101 {key}\n'
        f'carol@x cert-authority,namespaces="file" {key}\n'
        f"dave@x {key}\n"
    )
    signers = parse_signers(text)
    assert [(s.principals, s.namespaces) for s in signers] == [
        (("alice@example.com", "bob@x"), ("git", "skill-magics")),
        (("carol@x",), ("file",)),
        (("dave@x",), ()),
    ]


def test_two_skills_with_the_same_bytes_keep_each_its_own_verified_signer(keys):
    """The record is found by tree digest; two installs of the same files, signed by two
    allowed signers, each show (and are approved under) the signer their lock names."""
    bob = keygen(keys.root / "keys", "bob")
    allowed_signers(keys.allowed, ("alice@example.com", keys.alice), ("bob@example.com", bob))
    by_alice = signed_repo(keys.root / "a" / "greet", keys.alice)
    by_bob = signed_repo(keys.root / "b" / "greet", bob)
    first, second = keys.root / "one", keys.root / "two"
    install_skills(str(by_alice), ref="v1", into=first, approver=None)
    install_skills(str(by_bob), ref="v1", into=second, approver=None)
    assert read_lock(first).skills["greet"].tree == read_lock(second).skills["greet"].tree
    one = origin_of(first / "greet", "greet").signature
    two = origin_of(second / "greet", "greet").signature
    assert one.is_signed and one.principal == "alice@example.com", one.describe()
    assert two.is_signed and two.principal == "bob@example.com", two.describe()


def test_a_lock_whose_signer_was_removed_by_hand_is_not_believed(keys):
    """The lock names no signer (its "signature" deleted): the record of what was verified
    for these bytes is not lent to it; ``%skills verify --signatures`` verifies it again."""
    repo = signed_repo(keys.root / "greet", keys.alice)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    lock_path = keys.into / "skills-lock.json"
    lock = json.loads(lock_path.read_text())
    del lock["skills"]["greet"]["signature"]
    lock_path.write_text(json.dumps(lock))
    sig = origin_of(keys.into / "greet", "greet").signature
    assert not sig.is_signed and "verify --signatures" in sig.note, sig.describe()


def test_yes_in_session_asks_again_when_the_same_bytes_come_from_another_signer(keys):
    """End to end: a person's "Yes in session" for alice's skill covers its next runs; the
    same files, now signed by bob (allowed too) after an update, ask again."""
    bob = keygen(keys.root / "keys", "bob")
    allowed_signers(keys.allowed, ("alice@example.com", keys.alice), ("bob@example.com", bob))
    repo = signed_repo(keys.root / "greet", keys.alice)
    install_skills(str(repo), ref="v1", into=keys.into, approver=None)
    manager = manager_for(keys.into)
    asked = []

    def person(request):
        asked.append(request.signature)
        return "yes_in_session"

    for _ in range(2):
        run = manager.execute_skill_script("greet", "scripts/hello.py", approver=person)
        assert "signed skill" in run.stdout
    assert [s.principal for s in asked] == ["alice@example.com"]  # the second was not asked
    tree = read_lock(keys.into).skills["greet"].tree
    use_key(repo, bob)
    git(repo, "commit", "-q", "--allow-empty", "-S", "-m", "same files, another signer")
    git(repo, "tag", "-f", "-s", "-m", "v1 again", "v1")
    update_skills(keys.into, approver=None)
    assert read_lock(keys.into).skills["greet"].tree == tree  # the same bytes
    run = manager.execute_skill_script("greet", "scripts/hello.py", approver=person)
    assert "signed skill" in run.stdout
    assert [s.principal for s in asked] == ["alice@example.com", "bob@example.com"]
