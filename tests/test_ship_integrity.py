"""Shipped skill copies under attack (core/run/batch/ship.py; docs/architecture.md, *Batch runs*).

Two things an attacker can control on a worker machine: the skill's NAME (its author wrote it)
and, on a shared host, the temp folder other users can write in. Neither may decide where a
copy goes, what gets deleted, or which files run:

- a name is never a path component: ``name: '../../x/precious'`` is listed with a warning and
  refused before anything runs, and a valid name that differs from its folder still runs;
- copies are private (0700 whatever the umask) and trusted only when this user owns them,
  with no group/other write, from the shipping root down; anything else is replaced or
  refused;
- a bundle is unpacked member by member with our own checks (no reliance on ``tarfile``'s
  extraction filter, which older Pythons lack).

Real process pools (``concurrent.futures.ProcessPoolExecutor``) and a real Dask
``LocalCluster`` run the items; the workers' temp folder is a test folder, so every file they
create or delete is seen.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from skill_magics.core.base import envdirs
from skill_magics.core.base.errors import SkillNameError
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.batch import ship, ship_owner

SCRIPT = """
import json, os, sys
d = json.load(sys.stdin)
print(json.dumps({"n": d["n"], "cwd": os.getcwd(), "pid": os.getpid()}))
"""
OTHER_UID = 4242  # "another user" (the tests run as root, so they can chown to it)
HOSTILE = "../../x/precious"
# What multiprocessing and Dask themselves put in a temp folder.
TOOL_PREFIXES = ("skill-magics-shipped", "pymp-", "dask-", "tmp")

needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another uid needs root"
)


@pytest.fixture
def worker_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temp folder of this process and of the pool workers it forks or spawns."""
    folder = tmp_path / "worker-tmp"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", os.fspath(folder))
    monkeypatch.setattr(tempfile, "tempdir", os.fspath(folder))
    return folder


def _victim(tmp: Path) -> Path:
    """The folder the hostile name points at from the old layout
    (``$TMPDIR/skill-magics-shipped/<digest>/../../x/precious``), with a file to lose."""
    victim = tmp / "x" / "precious"
    victim.mkdir(parents=True)
    (victim / "keep.txt").write_text("precious data\n")
    return victim


def _outside(tmp: Path) -> set[str]:
    """Everything under ``tmp`` that is not the shipping area or a tool's own folder."""
    out = set()
    for root, dirs, files in os.walk(tmp):
        rel = os.path.relpath(root, tmp)
        if rel == ".":
            dirs[:] = [d for d in dirs if not d.startswith(TOOL_PREFIXES)]
            files = [f for f in files if not f.startswith(TOOL_PREFIXES)]
        out.update(os.path.normpath(os.path.join(rel, n)) for n in dirs + files)
    return out


def _hostile_skill(make_skill, root: Path) -> Path:
    return make_skill(
        root,
        "precious",
        {"name": HOSTILE, "description": "A skill whose name climbs out of its folder."},
        scripts={"scripts/show.py": SCRIPT},
    )


# -- defect 1: a skill's name never becomes a path --------------------------------------------


def test_a_dotdot_name_is_listed_with_a_warning_and_refused_before_any_run(
    make_skill, tmp_path: Path, worker_tmp: Path
) -> None:
    skills = tmp_path / "skills"
    _hostile_skill(make_skill, skills)
    victim = _victim(worker_tmp)
    before = _outside(worker_tmp)
    manager = SkillManager([skills], run_cwd="skill")
    # Not hidden: it is listed, and the warning names the fix.
    assert [m.name for m in manager.list_skills()] == [HOSTILE]
    warning = next(w for w in manager.warnings if "one folder name" in w)
    assert "set name: precious" in warning and "\n" not in warning
    with ProcessPoolExecutor(2) as pool, pytest.raises(SkillNameError) as info:
        manager.map("../../x/precious", "show", [{"n": i} for i in range(4)], pool=pool)
    message = str(info.value)
    assert "one folder name" in message and "name: precious" in message and "\n" not in message
    # Refused before anything ran, and audited.
    refused = [r for r in manager.audit.records() if r.outcome == "refused"]
    assert refused and "one folder name" in refused[-1].reason
    assert (victim / "keep.txt").read_text() == "precious data\n"
    assert _outside(worker_tmp) == before
    # A single run and a local batch are refused the same way.
    with pytest.raises(SkillNameError):
        manager.execute_skill_script(HOSTILE, "show", {"n": 1}, approver=None)
    with pytest.raises(SkillNameError):
        manager.map(HOSTILE, "show", [{"n": 1}], approver=None)


@pytest.mark.parametrize(
    "name",
    [
        "Precious Tools",  # capitals and a space: against the spec, still one folder name
        "..precious",  # leading dots: one folder name, not a relative step
        "précieux",  # non-ASCII letters
    ],
)
def test_a_name_that_differs_from_its_folder_still_runs_on_a_process_pool(
    make_skill, tmp_path: Path, worker_tmp: Path, name: str
) -> None:
    skills = tmp_path / "skills"
    make_skill(
        skills,
        "precious",
        {"name": name, "description": "Named unlike its folder."},
        scripts={"scripts/show.py": SCRIPT},
    )
    before = _outside(worker_tmp)
    manager = SkillManager([skills], run_cwd="skill")
    with ProcessPoolExecutor(2) as pool:
        res = manager.map(name, "show", [{"n": i} for i in range(4)], pool=pool, approver=None)
    assert res.counts() == {"completed": 4}, res.text()
    copy = Path(res[0].json()["cwd"])
    area = worker_tmp / f"{ship.SHIP_DIR_NAME}-{os.geteuid()}"
    # The copy is <area>/<worker process>/<digest>/<the skill's folder>: the name appears
    # nowhere in it.
    assert copy.parents[2] == area and copy.name == "precious"
    assert ship_owner.Owner.parse(copy.parents[1].name) is not None
    assert name not in os.fspath(copy.relative_to(worker_tmp))
    assert _outside(worker_tmp) == before


def test_the_bundle_itself_refuses_a_name_that_is_not_one_folder(
    make_skill, tmp_path: Path
) -> None:
    """In depth: even a caller that skips the planner cannot ship under a path-like name."""
    base = _hostile_skill(make_skill, tmp_path)
    with pytest.raises(SkillNameError, match="one folder name"):
        ship.SkillBundle.pack(base, HOSTILE, None)
    bundle = ship.SkillBundle.pack(base, "precious", None)
    assert bundle.location().parents[2] == ship.ship_root()
    assert bundle.location().parents[1].name == ship_owner.current().name


@pytest.mark.parametrize("folder", ["precious", "x..", "a b", "x\nz", "\u0440df"])
def test_environments_are_named_by_folder_and_digest_never_by_the_name(
    make_skill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    monkeypatch.setenv(envdirs.ENV_DIR_VAR, os.fspath(tmp_path / "envs"))
    base = make_skill(
        tmp_path / "skills",
        "precious",
        {"name": HOSTILE, "description": "A skill whose name climbs out of its folder."},
        scripts={"scripts/show.py": SCRIPT},
        dirname=folder,
    )
    home = envdirs.skill_env_home(base)
    assert home.parent == envdirs.envs_root() and home.name not in (".", "..")
    assert "/" not in home.name and "\n" not in home.name and "precious/" not in os.fspath(home)
    # And nothing is installed for a skill whose name is not one folder name.
    manager = SkillManager([tmp_path / "skills"])
    with pytest.raises(SkillNameError, match="one folder name"):
        manager.prepare_env(HOSTILE, approver=None)
    assert [(r.script, r.outcome) for r in manager.audit.records()] == [("<install>", "refused")]
    assert not (tmp_path / "envs").exists()


@pytest.fixture(scope="module")
def dask_tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("dask-worker-tmp")


@pytest.fixture(scope="module")
def dask_client(dask_tmp: Path):
    import distributed

    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = os.fspath(dask_tmp)  # the worker processes start with it
    try:
        with (
            distributed.LocalCluster(
                n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            yield client
    finally:
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved


def test_on_dask_a_dotdot_name_deletes_and_creates_nothing(
    make_skill, tmp_path: Path, dask_client, dask_tmp: Path
) -> None:
    assert dask_client.run(tempfile.gettempdir) == {
        addr: os.fspath(dask_tmp) for addr in dask_client.run(tempfile.gettempdir)
    }
    skills = tmp_path / "skills"
    _hostile_skill(make_skill, skills)
    victim = _victim(dask_tmp)
    before = _outside(dask_tmp)
    manager = SkillManager([skills], run_cwd="skill")
    with pytest.raises(SkillNameError, match="one folder name"):
        manager.map(HOSTILE, "show", [{"n": i} for i in range(4)], pool=dask_client)
    assert (victim / "keep.txt").read_text() == "precious data\n"
    assert _outside(dask_tmp) == before

    # A name unlike its folder, but one folder name, runs there, inside the area.
    make_skill(
        skills,
        "other",
        {"name": "Other Tools", "description": "Named unlike its folder."},
        scripts={"scripts/show.py": SCRIPT},
    )
    manager = SkillManager([skills], run_cwd="skill")
    res = manager.map("Other Tools", "show", [{"n": 1}, {"n": 2}], pool=dask_client)
    assert res.counts() == {"completed": 2}, res.text()
    copy = Path(res[0].json()["cwd"])
    assert copy.parents[2] == dask_tmp / f"{ship.SHIP_DIR_NAME}-{os.geteuid()}"
    assert copy.name == "other"
    assert (victim / "keep.txt").read_text() == "precious data\n"
    assert _outside(dask_tmp) == before


# -- defect 8: only private copies of this user are trusted -----------------------------------


@pytest.fixture
def mathx(make_skill, tmp_path: Path) -> Path:
    return make_skill(tmp_path / "skills", "mathx", scripts={"scripts/show.py": SCRIPT})


def _plant(copy: Path, source: Path, uid: int) -> None:
    """Another user's copy: the same files, theirs, mode 0777 everywhere."""
    import shutil

    shutil.copytree(source, copy)
    (copy / "planted-by-someone-else").write_text("x\n")  # data: not code, so it verifies
    for root, dirs, files in os.walk(copy):
        for name in [*dirs, *files]:
            os.chown(os.path.join(root, name), uid, uid)
            os.chmod(os.path.join(root, name), 0o777)
    os.chown(copy, uid, uid)
    os.chmod(copy, 0o777)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _worker_location(pool: ProcessPoolExecutor, skill: Path) -> Path:
    """Where the pool's (one) worker process will keep its copy of ``skill``: in its own
    folder, so that is where a squatter's copy must be to be found."""
    return pool.submit(ship.SkillBundle.pack(skill, skill.name, None).location).result()


@needs_root
def test_another_users_copy_with_the_same_files_is_never_used(
    mathx: Path, worker_tmp: Path
) -> None:
    manager = SkillManager([mathx.parent], run_cwd="skill")
    with ProcessPoolExecutor(1) as pool:
        location = _worker_location(pool, mathx)
        location.parent.mkdir(parents=True)
        _plant(location, mathx, OTHER_UID)
        assert os.lstat(location).st_uid == OTHER_UID
        res = manager.map("mathx", "show", [{"n": i} for i in range(4)], pool=pool)
        assert res.counts() == {"completed": 4}, res.text()
        copy = Path(res[0].json()["cwd"])
        assert copy == location
        # What ran is a fresh private copy of ours: the planted one was moved aside and removed.
        st = os.lstat(copy)
        assert st.st_uid == os.geteuid() and _mode(copy) == 0o700
        assert not (copy / "planted-by-someone-else").exists()
        for root, dirs, files in os.walk(copy):
            for name in [*dirs, *files]:
                path = Path(root, name)
                assert os.lstat(path).st_uid == os.geteuid(), path
                assert not _mode(path) & 0o077, (path, oct(_mode(path)))
        # The whole chain from the root down is this user's, and nobody else may write in it.
        for folder in copy.parents[:3]:
            assert os.lstat(folder).st_uid == os.geteuid() and not _mode(folder) & 0o022


@needs_root
@pytest.mark.parametrize("level", [1, 2], ids=["digest-folder", "process-folder"])
def test_another_users_folder_on_the_way_is_replaced(
    mathx: Path, worker_tmp: Path, level: int
) -> None:
    manager = SkillManager([mathx.parent], run_cwd="skill")
    with ProcessPoolExecutor(1) as pool:
        location = _worker_location(pool, mathx)
        location.parent.mkdir(parents=True, mode=0o700)
        _plant(location, mathx, OTHER_UID)
        for folder in location.parents[:level]:
            os.chown(folder, OTHER_UID, OTHER_UID)
            os.chmod(folder, 0o777)
        res = manager.map("mathx", "show", [{"n": 1}], pool=pool, approver=None)
        assert res.counts() == {"completed": 1}, res.text()
        assert Path(res[0].json()["cwd"]) == location
        # What was another user's is ours now, and private (made afresh: 0700).
        for folder in (location, *location.parents[:level]):
            assert os.lstat(folder).st_uid == os.geteuid() and _mode(folder) == 0o700


@needs_root
def test_a_copy_of_ours_that_others_may_write_is_replaced(mathx: Path, worker_tmp: Path) -> None:
    manager = SkillManager([mathx.parent], run_cwd="skill")
    with ProcessPoolExecutor(1) as pool:
        location = _worker_location(pool, mathx)
        location.parent.mkdir(parents=True)
        _plant(location, mathx, os.geteuid())  # ours, but 0777 (say, made under umask 0)
        res = manager.map("mathx", "show", [{"n": 1}], pool=pool, approver=None)
        assert res.counts() == {"completed": 1}, res.text()
        assert _mode(location) == 0o700 and not (location / "planted-by-someone-else").exists()


@needs_root
@pytest.mark.parametrize("squat", ["owned", "symlink"])
def test_a_shipping_root_that_is_not_ours_refuses_every_item(
    mathx: Path, worker_tmp: Path, tmp_path: Path, squat: str
) -> None:
    root = worker_tmp / f"{ship.SHIP_DIR_NAME}-{os.geteuid()}"
    if squat == "owned":
        root.mkdir(mode=0o777)
        os.chown(root, OTHER_UID, OTHER_UID)
        os.chmod(root, 0o777)
    else:
        elsewhere = tmp_path / "attacker"
        elsewhere.mkdir()
        root.symlink_to(elsewhere)
    manager = SkillManager([mathx.parent], run_cwd="skill")
    with ProcessPoolExecutor(1) as pool:
        res = manager.map("mathx", "show", [{"n": 1}, {"n": 2}], pool=pool, approver=None)
    assert res.counts() == {"refused": 2}, res.text()
    message = res[0].message
    assert "not a private folder of this user" in message and "TMPDIR" in message
    assert "\n" not in message
    refused = [r for r in manager.audit.records() if r.outcome == "refused"]
    assert refused and "private folder" in refused[-1].reason
    if squat == "symlink":
        assert list((tmp_path / "attacker").iterdir()) == []  # nothing written through it


def test_copies_are_private_whatever_the_umask(mathx: Path, worker_tmp: Path) -> None:
    manager = SkillManager([mathx.parent], run_cwd="skill")
    old = os.umask(0)  # the forked workers inherit it
    try:
        with ProcessPoolExecutor(1) as pool:
            res = manager.map("mathx", "show", [{"n": 1}], pool=pool, approver=None)
            assert res.ok, res.text()
            copy = Path(res[0].json()["cwd"])
            # Looked at while the worker runs (its copies go when it exits).
            assert [_mode(folder) for folder in copy.parents[:3]] == [0o700] * 3
            for root, dirs, files in os.walk(copy):
                for name in dirs:
                    assert _mode(Path(root, name)) == 0o700
                for name in files:
                    assert _mode(Path(root, name)) in (0o600, 0o700), name
            assert _mode(copy / "scripts" / "show.py") == 0o700  # the exec bit survives
    finally:
        os.umask(old)


def test_a_temp_folder_others_can_rename_in_is_refused(mathx: Path, worker_tmp: Path) -> None:
    os.chmod(worker_tmp, 0o777)  # world-writable, no sticky bit
    manager = SkillManager([mathx.parent], run_cwd="skill")
    with ProcessPoolExecutor(1) as pool:
        res = manager.map("mathx", "show", [{"n": 1}], pool=pool, approver=None)
        assert res.counts() == {"refused": 1} and "sticky" in res[0].message
        os.chmod(worker_tmp, 0o1777)  # what /tmp is: fine
        res = manager.map("mathx", "show", [{"n": 1}], pool=pool, approver=None)
    assert res.ok, res.text()


# -- unpacking: our own member checks ---------------------------------------------------------


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


@pytest.mark.parametrize(
    "evil",
    [
        [_file("../escaped.txt")],
        [_file("/abs-escaped.txt")],
        [_file("scripts/../../escaped.txt")],
        [_link("scripts", "../.."), _file("scripts/escaped.txt")],
        [_link("hard", "/etc/passwd", tarfile.LNKTYPE)],
        [(tarfile.TarInfo("fifo"), None)],
    ],
    ids=["dotdot", "absolute", "inner-dotdot", "symlink-then-file", "hardlink", "special"],
)
def test_a_bundle_with_members_outside_the_copy_is_refused(
    mathx: Path, worker_tmp: Path, evil: list
) -> None:
    if evil[0][0].name == "fifo":
        evil[0][0].type = tarfile.FIFOTYPE
    good = ship.SkillBundle.pack(mathx, "mathx", None)
    bundle = dataclasses.replace(good, data=_tar([_file("SKILL.md", b"---\n---\n"), *evil]))
    before = set(os.listdir(worker_tmp))
    with pytest.raises(ship.ShippedSkillMismatch, match="refused"):
        bundle.unpack()
    assert set(os.listdir(worker_tmp)) <= before | {f"{ship.SHIP_DIR_NAME}-{os.geteuid()}"}
    assert not bundle.location().exists()
    leftovers = list(bundle.location().parent.iterdir())
    assert leftovers == [], leftovers  # no half-unpacked staging folder either


def test_unpacking_needs_no_tarfile_filter(mathx: Path, tmp_path: Path) -> None:
    """Pythons before the PEP 706 backports have no ``filter=`` argument: a bundle still
    unpacks (issue 21). Shown in a fresh interpreter whose tarfile lacks it."""
    code = f"""
import os, sys, tarfile, tempfile, json
del tarfile.data_filter
original = tarfile.TarFile.extractall
def extractall(self, path=".", members=None, *, numeric_owner=False):  # the old signature
    return original(self, path, members, numeric_owner=numeric_owner)
tarfile.TarFile.extractall = extractall
tempfile.tempdir = {os.fspath(tmp_path)!r}
from skill_magics.core.run.batch import ship
copy = ship.SkillBundle.pack({os.fspath(mathx)!r}, "mathx", None).unpack()
print(json.dumps(sorted(os.listdir(copy / "scripts"))))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["show.py"]
