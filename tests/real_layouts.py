"""Skill layouts the way public skills are written, built by the tests themselves.

- ``creator``: a package ``scripts/`` (``__init__.py``) whose CLIs do
  ``from scripts.utils import ...`` (run as ``python -m scripts.x`` from the skill root), one of
  them named in SKILL.md as ``python -m scripts.run_eval``;
- ``office``: sibling imports from the script's own folder (``from office.soffice import``,
  ``from validators import base``), a module with a main guard that another script imports
  (runs, not offered), a module of definitions only (refused), a ``requirements.txt``, and
  programs run three ways
  (``["soffice", ...]`` assigned to a variable, ``["qpdf"] + args``, ``shutil.which("gh")``);
- ``pep``: a PEP 723 header.

``office``'s validators import ``defusedxml``, as public office skills do: a test that runs
them or checks that it is installed creates it (``add_skill_venv``, ``add_distribution``),
never relying on what the running Python happens to have installed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

MISSING_PROGRAM = "skill-magics-no-such-program"


def _write(base: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _skill_md(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: The {name} test skill.\n---\n{body}\n"


def write_creator(root: Path) -> Path:
    base = root / "creator"
    _write(
        base,
        {
            "SKILL.md": _skill_md(
                "creator", "Evaluate a skill with `python -m scripts.run_eval --skill DIR`."
            ),
            "scripts/__init__.py": "",
            "scripts/utils.py": """\
                import json
                def parse_skill_md(text):
                    return {"first": text.splitlines()[0] if text else ""}
                """,
            "scripts/run_eval.py": """\
                import json, os, sys
                from scripts.utils import parse_skill_md
                def main():
                    path = sys.argv[1] if len(sys.argv) > 1 else "SKILL.md"
                    with open(path, encoding="utf-8") as fh:
                        out = parse_skill_md(fh.read())
                    out.update(cwd=os.getcwd(), sys_path0=sys.path[0], name=__name__,
                               spec=__spec__.name if __spec__ else None)
                    print(json.dumps(out))
                if __name__ == "__main__":
                    main()
                """,
            "scripts/package_skill.py": """\
                from scripts.utils import parse_skill_md
                try:
                    import PIL
                except ImportError:
                    PIL = None
                if __name__ == "__main__":
                    print(parse_skill_md("packaged"))
                """,
        },
    )
    return base


def write_office(root: Path) -> Path:
    base = root / "office"
    _write(
        base,
        {
            "SKILL.md": _skill_md("office", "Convert with `python scripts/convert.py input.docx`."),
            "requirements.txt": "defusedxml>=0.7  # XML safety\nskill-magics-test-absent-pkg\n",
            "scripts/office/__init__.py": "",
            "scripts/office/soffice.py": """\
                import subprocess
                def run_soffice(args):
                    cmd = ["soffice", "--headless"]
                    return subprocess.run(cmd + args)
                if __name__ == "__main__":
                    run_soffice([])
                """,
            "scripts/office/validators/__init__.py": "from . import base\n",
            "scripts/office/validators/base.py": """\
                import defusedxml
                class BaseValidator:
                    pass
                if __name__ == "__main__":
                    print("a helper with a main guard")
                """,
            "scripts/office/validate.py": """\
                import json, sys
                from validators import base
                if __name__ == "__main__":
                    print(json.dumps({"validator": base.BaseValidator.__name__}))
                """,
            "scripts/convert.py": f"""\
                import json, shutil, subprocess, sys
                from office.soffice import run_soffice
                GH = shutil.which("gh")
                def pdf(args):
                    subprocess.check_call(["qpdf"] + args)
                if __name__ == "__main__":
                    if shutil.which("{MISSING_PROGRAM}") is None:
                        print(json.dumps({{"converted": sys.argv[1:]}}))
                """,
            "scripts/nomain.py": "def helper():\n    return 1\n",
        },
    )
    return base


def write_pep(root: Path, package: str = "tabulate", spec: str = "tabulate>=0.9") -> Path:
    base = root / "pep"
    _write(
        base,
        {
            "SKILL.md": _skill_md("pep", "Run `python scripts/table.py FILE` on a CSV file."),
            "scripts/table.py": f"""\
                # /// script
                # requires-python = ">=3.10"
                # dependencies = ["{spec}"]
                # ///
                import csv, sys
                import {package}
                if __name__ == "__main__":
                    with open(sys.argv[1], newline="") as fh:
                        rows = list(csv.reader(fh))
                    print({package}.tabulate(rows[1:], headers=rows[0]))
                """,
        },
    )
    return base


def write_all(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_creator(root)
    write_office(root)
    write_pep(root)
    return root


__all__ = ["write_creator", "write_office", "write_pep", "write_all", "MISSING_PROGRAM"]


def add_distribution(site: Path, name: str, version: str) -> Path:
    """An installed distribution in ``site``, as pip leaves it: an importable package and its
    ``.dist-info``. Tests use it instead of whatever the running Python happens to have."""
    (site / name).mkdir(parents=True, exist_ok=True)
    (site / name / "__init__.py").write_text(f"__version__ = {version!r}\n")
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "top_level.txt").write_text(f"{name}\n")
    return site


def add_skill_venv(base: Path, packages: dict[str, str]) -> Path:
    """A real venv in ``base/.venv`` (no pip: fast) holding ``packages`` (name -> version);
    the skill's scripts run with its python. Returns that python."""
    venv = base / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    for name, version in packages.items():
        add_distribution(Path(site), name, version)
    return python
