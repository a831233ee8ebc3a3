"""Helpers for the tests of installed skills (core/sources): real git repositories and real zip
files made in the test (no tests in here).

The repositories reproduce the *shapes* of public skill collections, with our own text:
anthropics/skills (``skills/<name>/`` with ``SKILL.md``, ``scripts/`` with executables,
``reference.md``, ``LICENSE.txt``, and a ``template/`` skill at the top), openai/skills
(``skills/.curated/<name>``, ``skills/.system/<name>``: hidden folders) and a one-skill
repository whose top folder is the skill. Archives: a ``.skill`` as skill-creator's
``package_skill.py`` writes it (``name/...`` file members, no folder members) and a GitHub
"Download ZIP" (everything under ``repo-main/``, folder members included).
"""

from __future__ import annotations

import os
import stat
import subprocess
import zipfile
from collections.abc import Mapping
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def git(repo: Path, *args: str) -> str:
    """Run the real git in ``repo`` (the test's own config only); its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    out = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, f"git {' '.join(args)}: {out.stderr}"
    return out.stdout.strip()


def skill_md(name: str, description: str = "", body: str = "") -> str:
    description = description or f"Does the {name} thing when asked."
    return f"---\nname: {name}\ndescription: {description}\n---\n{body or f'# {name}'}\n"


def write_files(
    root: Path, files: Mapping[str, str | bytes], executable: tuple[str, ...] = ()
) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        if rel in executable:
            path.chmod(0o755)


def commit_all(repo: Path, message: str = "change") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_repo(
    root: Path,
    files: Mapping[str, str | bytes],
    *,
    executable: tuple[str, ...] = (),
    branch: str = "main",
) -> Path:
    """A real repository with ``files`` committed on ``branch``."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    write_files(root, files, executable)
    commit_all(root, "first")
    return root


COLLECTION = {
    # anthropics/skills' shape
    "README.md": "# Our skills\n",
    "skills/pdf/SKILL.md": skill_md("pdf", body="Run `python scripts/extract.py FILE`."),
    "skills/pdf/scripts/extract.py": (
        "#!/usr/bin/env python3\nimport sys\nprint('pages of', sys.argv[1:])\n"
    ),
    "skills/pdf/reference.md": "# Reference\nFields.\n",
    "skills/pdf/LICENSE.txt": "Test licence text.\n",
    "skills/docx/SKILL.md": skill_md("docx"),
    "skills/docx/ooxml/schema.xsd": "<schema/>\n",
    "template/SKILL.md": skill_md("template-skill"),
    # openai/skills' shape: hidden folders
    "skills/.curated/gh-fix-ci/SKILL.md": skill_md(
        "gh-fix-ci", body="Run `python scripts/inspect_checks.py`."
    ),
    "skills/.curated/gh-fix-ci/scripts/inspect_checks.py": "print('checks: ok')\n",
    "skills/.system/skill-installer/SKILL.md": skill_md("skill-installer"),
    "skills/.system/skill-installer/scripts/install.sh": "#!/bin/sh\necho install\n",
}
COLLECTION_EXEC = (
    "skills/pdf/scripts/extract.py",
    "skills/.system/skill-installer/scripts/install.sh",
)
COLLECTION_SKILLS = ["docx", "gh-fix-ci", "pdf", "skill-installer", "template"]


def make_collection(root: Path) -> Path:
    return make_repo(root, COLLECTION, executable=COLLECTION_EXEC)


# -- zip files -------------------------------------------------------------------------------


def zip_info(name: str, mode: int = 0o100644) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.create_system = 3  # Unix: external_attr holds the mode
    info.external_attr = (mode & 0xFFFF) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def write_zip(
    path: Path, members: Mapping[str, str | bytes], *, modes: Mapping[str, int] | None = None
) -> Path:
    """A zip with ``members`` (name -> content); ``modes``: a member's Unix mode (a symlink:
    ``stat.S_IFLNK | 0o777`` with the target as content)."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, content in members.items():
            mode = (modes or {}).get(name, 0o040755 if name.endswith("/") else 0o100644)
            zf.writestr(zip_info(name, mode), content)
    return path


def package_skill(skill_dir: Path, out: Path) -> Path:
    """A ``.skill`` file the way skill-creator's package_skill.py makes one: every file as
    ``<skill folder>/<path>``, deflated, no folder members."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(skill_dir.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(skill_dir.parent))
    return out


def github_zip(repo: Path, out: Path, top: str) -> Path:
    """A "Download ZIP" of ``repo``'s files: all under ``top/``, folder members included."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(zip_info(f"{top}/", 0o040755), b"")
        for path in sorted(repo.rglob("*")):
            rel = path.relative_to(repo).as_posix()
            if rel.split("/")[0] == ".git":
                continue
            if path.is_dir():
                zf.writestr(zip_info(f"{top}/{rel}/", 0o040755), b"")
            else:
                mode = stat.S_IMODE(path.stat().st_mode) | stat.S_IFREG
                zf.writestr(zip_info(f"{top}/{rel}", mode), path.read_bytes())
    return out


def tree_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes), for comparing copies."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }
