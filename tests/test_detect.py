"""ScriptDetector: what counts as a script, where it is looked for, and its description."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from manager_support import posix_only

from skill_magics.core.catalog.detect import ScriptDetector, extract_description
from skill_magics.core.manager import SkillManager


def paths(scripts) -> list[str]:
    return [s.path.as_posix() for s in scripts]


def test_nested_scripts_and_root_fallback(make_skill, tmp_path):
    skill = make_skill(
        tmp_path,
        "tools",
        scripts={
            "scripts/extract.py": "print(1)\n",
            "scripts/convert.sh": "echo hi\n",
            "scripts/utils/parser.py": "pass\n",
            "scripts/a/b/c/d/e/deep.py": "pass\n",  # depth 5 under scripts/: found
            "scripts/a/b/c/d/e/f/too_deep.py": "pass\n",  # depth 6: not scanned
            "helper.js": "console.log(1)\n",
            "lib/not_root.py": "pass\n",  # root scan is not recursive
        },
    )
    found = ScriptDetector().detect(skill)
    assert paths(found) == [
        "helper.js",
        "scripts/a/b/c/d/e/deep.py",
        "scripts/convert.sh",
        "scripts/extract.py",
        "scripts/utils/parser.py",
    ]
    by_name = {s.name: s for s in found}
    assert (by_name["extract"].script_type, by_name["extract"].interpreter) == ("python", "python3")
    assert (by_name["convert"].script_type, by_name["convert"].interpreter) == ("bash", "bash")
    assert (by_name["helper"].script_type, by_name["helper"].interpreter) == ("node", "node")


def test_every_known_extension(make_skill, tmp_path):
    names = ["a.py", "b.sh", "c.bash", "d.js", "e.mjs", "f.rb", "g.pl"]
    skill = make_skill(tmp_path, "exts", scripts={f"scripts/{n}": "x\n" for n in names})
    found = {s.path.name: s.script_type for s in ScriptDetector().detect(skill)}
    assert found == {
        "a.py": "python",
        "b.sh": "bash",
        "c.bash": "bash",
        "d.js": "node",
        "e.mjs": "node",
        "f.rb": "ruby",
        "g.pl": "perl",
    }


def test_typescript_only_when_allowed(make_skill, tmp_path):
    skill = make_skill(tmp_path, "ts", scripts={"scripts/build.ts": "// Build it\n"})
    assert ScriptDetector().detect(skill) == []
    (ts,) = ScriptDetector(allow_typescript=True).detect(skill)
    assert (ts.script_type, ts.interpreter, ts.description) == ("typescript", "tsx", "Build it")


def test_extensionless_shebang_file_is_a_script(make_skill, tmp_path):
    skill = make_skill(
        tmp_path,
        "sheb",
        scripts={
            "scripts/run": "#!/usr/bin/env python3\n# Run the thing.\nprint(1)\n",
            "scripts/deploy": "#!/bin/bash\n# Deploy it.\n",
            "scripts/NOTES": "no shebang here\n",
        },
    )
    found = {s.path.as_posix(): s for s in ScriptDetector().detect(skill)}
    assert set(found) == {"scripts/deploy", "scripts/run"}
    assert (found["scripts/run"].name, found["scripts/run"].script_type) == ("run", "python")
    assert found["scripts/run"].description == "Run the thing."
    assert found["scripts/deploy"].interpreter == "bash"


def test_non_scripts_are_excluded(make_skill, tmp_path):
    skill = make_skill(
        tmp_path,
        "data",
        scripts={"scripts/real.py": "pass\n"},
        files={
            "data/config.yaml": "a: 1\n",
            "scripts/config.yaml": "a: 1\n",
            "scripts/README.md": "# readme\n",
            "scripts/table.csv": "a,b\n",
            "scripts/data.json": "{}\n",
            "scripts/notes.txt": "#!/bin/bash\n",  # a shebang does not make .txt a script
            "README.md": "# x\n",
            "binary": b"\x7fELF\x00\x00",
        },
    )
    assert paths(ScriptDetector().detect(skill)) == ["scripts/real.py"]


def test_skill_md_hidden_and_tool_dirs_skipped(make_skill, tmp_path):
    skill = make_skill(
        tmp_path,
        "hidden",
        scripts={
            "scripts/ok.py": "pass\n",
            "scripts/.hidden/secret.py": "pass\n",
            "scripts/.dot.py": "pass\n",
            "scripts/venv/bin/activate.py": "pass\n",
            "scripts/.venv/x.py": "pass\n",
            "scripts/node_modules/pkg/index.js": "pass\n",
            "scripts/__pycache__/ok.py": "pass\n",
            ".env.sh": "pass\n",
        },
    )
    assert paths(ScriptDetector().detect(skill)) == ["scripts/ok.py"]


def test_symlink_loop_in_scripts_is_survived(make_skill, tmp_path):
    skill = make_skill(tmp_path, "loop", scripts={"scripts/a/x.py": "pass\n"})
    os.symlink("..", skill / "scripts" / "a" / "up")
    assert paths(ScriptDetector().detect(skill)) == ["scripts/a/x.py"]


def test_symlinked_script_outside_is_listed_but_not_read(make_skill, tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text('"""Secret outside text."""\n')
    skill = make_skill(tmp_path, "links", scripts={"scripts/in.py": "pass\n"})
    os.symlink(outside, skill / "scripts" / "out.py")
    found = {s.path.as_posix(): s for s in ScriptDetector().detect(skill)}
    assert found["scripts/out.py"].description == ""  # never read outside the skill


def test_no_scripts_dir_and_missing_skill(tmp_path):
    (tmp_path / "empty").mkdir()
    assert ScriptDetector().detect(tmp_path / "empty") == []
    assert ScriptDetector().detect(tmp_path / "missing") == []


def test_sorted_by_relative_path(make_skill, tmp_path):
    names = ["z.py", "a.sh", "m/b.py", "B.py"]
    skill = make_skill(tmp_path, "sort", scripts={f"scripts/{n}": "x\n" for n in names})
    assert paths(ScriptDetector().detect(skill)) == [
        "scripts/B.py",
        "scripts/a.sh",
        "scripts/m/b.py",
        "scripts/z.py",
    ]


def test_spaces_and_brackets_in_names(make_skill, tmp_path):
    skill = make_skill(
        tmp_path, "odd", scripts={"scripts/my script.py": "x\n", "scripts/f[1].sh": ""}
    )
    found = ScriptDetector().detect(skill)
    assert paths(found) == ["scripts/f[1].sh", "scripts/my script.py"]
    assert [s.name for s in found] == ["f[1]", "my script"]


# -- descriptions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "#!/usr/bin/env python3\n# Extract text.\n# Second line.\nimport x\n",
            "Extract text.\nSecond line.",
        ),
        ('"""Module docstring."""\n', "Module docstring."),
        ("'''Single quoted docstring.'''\n", "Single quoted docstring."),
        (
            '#!/usr/bin/env python3\n"""Summary.\n\n    Details here.\n    """\n',
            "Summary.\n\nDetails here.",
        ),
        (
            '#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n\n"""After the cookie."""\n',
            "After the cookie.",
        ),
        ("# vim: set ft=python:\n# Real comment.\n", "Real comment."),
        ("// Node helper.\n// Does things.\nconst x = 1\n", "Node helper.\nDoes things."),
        ("/* Block comment. */\n", "Block comment."),
        (
            "/**\n * Doc block line one.\n * Line two.\n */\nfunction f() {}\n",
            "Doc block line one.\nLine two.",
        ),
        ("#!/bin/bash\n#\n# Bash usage.\n#\nset -e\n", "Bash usage."),
        ("#!/bin/bash\n###########\n# Banner\n###########\n", "Banner"),
        ("import os\n# too late\n", ""),
        ("#!/usr/bin/env python3\nprint(1)\n", ""),
        ("", ""),
        ('r"""Raw docstring."""\n', "Raw docstring."),
        ("#!/usr/bin/env perl\n# Perl tool.\nuse strict;\n", "Perl tool."),
        (  # a PEP 723 block is metadata, not the description
            '# /// script\n# dependencies = ["x"]\n# ///\n"""Print a table."""\n',
            "Print a table.",
        ),
    ],
)
def test_extract_description(source, expected):
    assert extract_description(source) == expected


def test_description_capped_and_unterminated_docstring():
    assert extract_description('"""' + "word " * 400).endswith("…")
    assert len(extract_description('"""' + "word " * 400)) <= 500
    assert extract_description('"""Starts\nand never ends') == "Starts\nand never ends"


def test_descriptions_in_detected_scripts(make_skill, tmp_path):
    skill = make_skill(
        tmp_path,
        "desc",
        scripts={
            "scripts/a.py": '#!/usr/bin/env python3\n"""Python doc."""\n',
            "scripts/b.sh": "#!/bin/bash\n# Shell doc.\n",
            "scripts/c.js": "// JS doc.\n",
            "scripts/d.rb": "puts 1\n",
        },
    )
    descs = {s.name: s.description for s in ScriptDetector().detect(skill)}
    assert descs == {"a": "Python doc.", "b": "Shell doc.", "c": "JS doc.", "d": ""}


def test_only_the_head_of_a_file_is_read(make_skill, tmp_path):
    # A docstring that never closes within the first KB is cut, not read to the end.
    skill = make_skill(tmp_path, "big", scripts={"scripts/big.py": '"""Big.\n' + "x\n" * 2_000_000})
    (s,) = ScriptDetector().detect(skill)
    assert s.description.startswith("Big.")
    assert len(s.description) <= 500


def test_fifty_scripts_detect_quickly(make_skill, tmp_path):
    # The benchmark (bench/bench_discovery.py) measures the real figure (< 2 ms here);
    # this only guards against an accidental O(file size) regression, with a wide margin.
    scripts = {f"scripts/s{i:02d}.py": f'"""Script {i}."""\n' + "x = 1\n" * 2000 for i in range(50)}
    skill = make_skill(tmp_path, "many", scripts=scripts)
    detector = ScriptDetector()
    assert len(detector.detect(skill)) == 50
    best = min(_timed(lambda: detector.detect(skill)) for _ in range(5))
    assert best < 0.05, f"detecting 50 scripts took {best * 1000:.1f} ms"


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def test_scan_signature_tracks_changes(make_skill, tmp_path):
    skill = make_skill(tmp_path, "sig", scripts={"scripts/a.py": "pass\n"})
    detector = ScriptDetector()
    scan = detector.scan(skill)
    assert detector.signature(skill, scan.signature) == scan.signature
    (skill / "scripts" / "a.py").write_text("pass  # longer now\n")
    assert detector.signature(skill, scan.signature) != scan.signature
    scan = detector.scan(skill)
    (skill / "scripts" / "b.py").write_text("pass\n")
    assert detector.signature(skill, scan.signature) != scan.signature
    scan = detector.scan(skill)
    (skill / "scripts" / "a.py").unlink()
    assert detector.signature(skill, scan.signature) is None


def test_detect_accepts_str_and_path(make_skill, tmp_path):
    skill = make_skill(tmp_path, "types", scripts={"scripts/a.py": "pass\n"})
    assert ScriptDetector().detect(str(skill)) == ScriptDetector().detect(Path(skill))


@pytest.mark.parametrize(
    ("source", "script_type", "expected"),
    [
        ("// JS comment\n", "node", "JS comment"),
        ("// not a Python comment\n", "python", ""),
        ("# not a JS comment\n", "node", ""),
        ('"""Not a docstring in bash."""\n', "bash", ""),
        ("/* TS block */\n", "typescript", "TS block"),
        ("# Ruby tool.\n", "ruby", "Ruby tool."),
    ],
)
def test_description_styles_follow_the_language(source, script_type, expected):
    assert extract_description(source, script_type) == expected


# -- versioned Python shebangs are Python -----------------------------------------------------


@posix_only
@pytest.mark.parametrize("shebang", ["#!/usr/bin/python3.11", "#!/usr/bin/env python3.99 -u"])
def test_versioned_python_shebang_runs_the_kernels_python_with_its_docstring(
    make_skill, tmp_path, shebang
):
    code = f'{shebang}\n"""Says which Python runs it."""\nimport sys\nprint(sys.executable)\n'
    make_skill(tmp_path / "skills", "py", scripts={"scripts/which": code})
    manager = SkillManager([tmp_path / "skills"])
    (script,) = manager.get_skill("py").scripts
    assert (script.script_type, script.interpreter) == ("python", "python3")
    assert script.description == "Says which Python runs it."
    result = manager.execute_skill_script("py", "which")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == sys.executable
