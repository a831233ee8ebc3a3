"""SkillManager listing and Skill: dirs, precedence, limits, progressive disclosure, caches."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from manager_support import posix_only

from skill_magics.core.base.errors import (
    AmbiguousScriptError,
    PathSecurityError,
    ScriptNotFoundError,
    SkillNotFoundError,
    SkillParseError,
)
from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.manager import SkillManager, default_skill_dirs, examples_dir

# -- directories and precedence -----------------------------------------------------------


def test_default_dirs_order(isolated_env):
    work, home = Path.cwd(), Path.home()
    assert default_skill_dirs() == [
        work / "skills",
        work / ".agents/skills",
        work / ".claude/skills",
        home / "skills",
        home / ".agents/skills",
        home / ".claude/skills",
    ]
    assert SkillManager().skill_dirs == default_skill_dirs()


def test_env_var_goes_first(isolated_env, monkeypatch):
    a, b = isolated_env / "a", isolated_env / "b"
    monkeypatch.setenv("SKILL_MAGICS_PATH", f"{a}{os.pathsep}{b}{os.pathsep}")
    dirs = SkillManager().skill_dirs
    assert dirs[:2] == [a, b]
    assert dirs[2] == Path.cwd() / "skills"


def test_explicit_dirs_override_everything(isolated_env, monkeypatch, tmp_path):
    monkeypatch.setenv("SKILL_MAGICS_PATH", str(tmp_path / "env"))
    manager = SkillManager([tmp_path / "only"])
    assert manager.skill_dirs == [tmp_path / "only"]
    assert SkillManager(tmp_path / "one").skill_dirs == [tmp_path / "one"]  # a single path
    assert SkillManager(str(tmp_path / "one")).skill_dirs == [tmp_path / "one"]


def test_relative_and_tilde_dirs_become_absolute(isolated_env):
    manager = SkillManager(["rel", "~/skills"])
    assert manager.skill_dirs == [Path.cwd() / "rel", Path.home() / "skills"]


def test_project_beats_user_on_name_clash(isolated_env, make_skill):
    project = make_skill(Path.cwd() / "skills", "pdf", {"name": "pdf", "description": "project"})
    user = make_skill(Path.home() / ".claude/skills", "pdf", {"name": "pdf", "description": "user"})
    manager = SkillManager()
    (only,) = manager.list_skills()
    assert only.description == "project"
    clash = [w for w in manager.warnings if "shadowed" in w]
    assert len(clash) == 1
    assert str(user / "SKILL.md") in clash[0] and str(project / "SKILL.md") in clash[0]


def test_clash_decided_by_dir_order_not_name_order(tmp_path, make_skill):
    make_skill(tmp_path / "zz", "tool", {"name": "tool", "description": "first dir"})
    make_skill(tmp_path / "aa", "tool", {"name": "tool", "description": "second dir"})
    manager = SkillManager([tmp_path / "zz", tmp_path / "aa"])
    assert manager.get_skill("tool").metadata.description == "first dir"


def test_same_directory_twice_is_not_a_clash(tmp_path, make_skill):
    make_skill(tmp_path / "skills", "one")
    os.symlink(tmp_path / "skills", tmp_path / "alias")
    manager = SkillManager([tmp_path / "skills", tmp_path / "alias", tmp_path / "skills"])
    assert [m.name for m in manager.list_skills()] == ["one"]
    assert manager.warnings == []
    assert len(manager.skill_dirs) == 1  # duplicates (also via symlink) collapse


def test_missing_dirs_are_ignored_silently(tmp_path, make_skill):
    make_skill(tmp_path / "real", "one")
    manager = SkillManager([tmp_path / "nope", tmp_path / "real", tmp_path / "file.txt"])
    (tmp_path / "file.txt").write_text("not a dir")
    assert [m.name for m in manager.list_skills()] == ["one"]
    assert manager.warnings == []


def test_a_skill_dir_itself_can_be_configured(tmp_path, make_skill):
    skill = make_skill(tmp_path, "solo", scripts={"scripts/a.py": "pass\n"})
    assert [m.name for m in SkillManager([skill]).list_skills()] == ["solo"]


# -- scanning limits ----------------------------------------------------------------------


def test_list_sorted_by_name_and_nested_groups(tmp_path, make_skill):
    for name in ("zeta", "alpha", "mid"):
        make_skill(tmp_path / "group" / name[0], name)
    assert [m.name for m in SkillManager([tmp_path]).list_skills()] == ["alpha", "mid", "zeta"]


def test_depth_limit(tmp_path, make_skill):
    make_skill(tmp_path / "a/b/c/d", "deep5")  # tmp/a/b/c/d/deep5 = depth 5: found
    make_skill(tmp_path / "a/b/c/d/e", "deep6")  # depth 6: not scanned
    assert [m.name for m in SkillManager([tmp_path]).list_skills()] == ["deep5"]


def test_hidden_and_tool_dirs_skipped(tmp_path, make_skill):
    make_skill(tmp_path / ".hidden", "secret")
    make_skill(tmp_path / "node_modules", "dep")
    make_skill(tmp_path / "__pycache__", "cache")
    make_skill(tmp_path, "visible")
    assert [m.name for m in SkillManager([tmp_path]).list_skills()] == ["visible"]


def test_hidden_configured_root_is_scanned(tmp_path, make_skill):
    make_skill(tmp_path / ".agents" / "skills", "one")
    assert [m.name for m in SkillManager([tmp_path / ".agents/skills"]).list_skills()] == ["one"]


def test_skills_inside_a_skill_are_not_scanned(tmp_path, make_skill):
    outer = make_skill(tmp_path, "outer")
    make_skill(outer / "examples", "inner")
    assert [m.name for m in SkillManager([tmp_path]).list_skills()] == ["outer"]


def test_symlink_loops_are_survived(tmp_path, make_skill):
    make_skill(tmp_path / "group", "one")
    os.symlink(tmp_path, tmp_path / "group" / "loop")
    os.symlink(tmp_path / "group", tmp_path / "group2")
    assert [m.name for m in SkillManager([tmp_path]).list_skills()] == ["one"]


def test_symlinked_skill_dir_is_found(tmp_path, make_skill):
    real = make_skill(tmp_path / "store", "linked")
    (tmp_path / "skills").mkdir()
    os.symlink(real, tmp_path / "skills" / "linked")
    assert [m.name for m in SkillManager([tmp_path / "skills"]).list_skills()] == ["linked"]


# -- bad skills never break the others ----------------------------------------------------


def test_bad_skills_skipped_with_path_and_reason(tmp_path, make_skill):
    make_skill(tmp_path, "good")
    bad_yaml = make_skill(tmp_path, "bad-yaml", "name: bad-yaml\ndescription: [oops\n")
    no_desc = make_skill(tmp_path, "no-desc", {"name": "no-desc"})
    (tmp_path / "no-front").mkdir()
    (tmp_path / "no-front" / "SKILL.md").write_text("# Just text\n")
    manager = SkillManager([tmp_path])
    assert [m.name for m in manager.list_skills()] == ["good"]
    warnings = "\n".join(manager.warnings)
    assert f"Skipped {bad_yaml / 'SKILL.md'}: frontmatter is not valid YAML" in warnings
    assert f"Skipped {no_desc / 'SKILL.md'}: frontmatter has no 'description'" in warnings
    assert "no-front" in warnings and "does not start with a '---'" in warnings
    with pytest.raises(SkillNotFoundError, match="'no-desc' was skipped: .*no 'description'"):
        manager.get_skill("no-desc")


def test_unreadable_skill_md_is_skipped(tmp_path, make_skill):
    skill = make_skill(tmp_path, "locked")
    (skill / "SKILL.md").chmod(0)
    probe = (
        "import sys; from skill_magics.core.manager import SkillManager\n"
        "m = SkillManager([sys.argv[1]])\n"
        "print(len(m.list_skills())); print(*m.warnings, sep='\\n')\n"
    )
    command = [sys.executable, "-c", probe, str(tmp_path)]
    if os.geteuid() == 0:
        # root reads any file: list the tree in a process without the DAC-override
        # capabilities, where a mode-0 file is unreadable for root too
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to test unreadable files as root"
        drop = "-dac_override,-dac_read_search"
        command = [setpriv, "--bounding-set", drop, "--inh-caps", "-all", "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    count, *warnings = done.stdout.splitlines()
    assert count == "0"
    assert any(str(skill / "SKILL.md") in w and "cannot read it" in w for w in warnings), warnings


def test_spec_warnings_surface_with_path(tmp_path, make_skill):
    skill = make_skill(tmp_path, "dir-name", {"name": "Other_Name", "description": "x"})
    manager = SkillManager([tmp_path])
    assert [m.name for m in manager.list_skills()] == ["Other_Name"]  # loaded anyway
    assert any(
        w.startswith(str(skill / "SKILL.md")) and "does not match its directory" in w
        for w in manager.warnings
    )


def test_get_skill_unknown_suggests_close_matches(tmp_path, make_skill):
    make_skill(tmp_path, "csv-profiler")
    manager = SkillManager([tmp_path])
    with pytest.raises(SkillNotFoundError) as err:
        manager.get_skill("csv-profile")
    message = str(err.value)
    assert "did you mean 'csv-profiler'?" in message
    assert "list_skills()" in message and "add_dir" in message and str(tmp_path) in message
    assert "\n" not in message


@posix_only
@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("metadata:\n  updated: 2024-02-30\n", "day is out of range for month"),
        ("x: " + "9" * 5000 + "\n", "integer string conversion"),
    ],
    ids=["impossible-date", "5000-digit-int"],
)
def test_a_value_python_cannot_build_skips_only_that_skill(tmp_path, extra, reason, make_skill):
    make_skill(tmp_path, "good", "name: good\ndescription: d\n")
    make_skill(tmp_path, "typo", f"name: typo\ndescription: d\n{extra}")
    manager = SkillManager([tmp_path])
    assert [m.name for m in manager.list_skills()] == ["good"]
    (warning,) = [w for w in manager.warnings if "typo" in w]
    assert warning.startswith(f"Skipped {tmp_path / 'typo' / 'SKILL.md'}: ")
    assert reason in warning and "put it in quotes" in warning and "\n" not in warning
    assert "set_int_max_str_digits" not in warning  # Python's hint is not the fix here


@posix_only
def test_yaml_alias_expansion_skips_only_that_skill(tmp_path, make_skill):
    """'Billion laughs': aliases loaded cheaply but expanding exponentially when shown."""
    lines = ["name: laughs", "description: ok", "metadata:", "  a0: &a0 [x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 8)}]" for i in range(1, 12)]
    make_skill(tmp_path, "laughs", "\n".join(lines))
    make_skill(tmp_path, "fine")
    # shared (not repeated) values stay fine: an alias used a few times is ordinary YAML
    make_skill(tmp_path, "anchors", "name: anchors\ndescription: &d ok\nmetadata: {x: *d, y: *d}")
    manager = SkillManager([tmp_path])
    assert [m.name for m in manager.list_skills()] == ["anchors", "fine"]
    warnings = "\n".join(manager.warnings)
    assert "laughs" in warnings and "expands to more than 10,000 values" in warnings


@posix_only
def test_an_edit_that_breaks_the_yaml_shows_the_last_good_metadata_but_runs_nothing(
    tmp_path, make_skill
):
    make_skill(tmp_path, "s", "name: s\ndescription: d\nversion: '1'\n")
    skill = SkillManager([tmp_path]).get_skill("s")
    assert skill.content == "# s\n"
    (tmp_path / "s" / "SKILL.md").write_text(
        "---\nname: s\ndescription: d\nversion: '2'\nx: " + "[" * 30_000 + "\n---\nnew body\n"
    )
    assert skill.content == "new body\n"
    assert skill.metadata.version == "1"  # what %skills show still has to show
    with pytest.raises(SkillParseError, match="no longer parses"):
        skill.current_metadata()  # what a run checks allowed-tools against: fail closed


# -- progressive disclosure ---------------------------------------------------------------


def _bytes_read() -> int:
    with open("/proc/self/io") as fh:
        return int(next(line for line in fh if line.startswith("rchar:")).split()[1])


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux /proc/self/io")
def test_listing_reads_only_frontmatter(tmp_path, make_skill):
    body = "# Huge body\n" + "instructions line\n" * 300_000  # ~5 MB per skill
    for i in range(10):
        make_skill(tmp_path, f"big-{i}", body=body)
    manager = SkillManager([tmp_path])
    before = _bytes_read()
    assert len(manager.list_skills()) == 10
    read = _bytes_read() - before
    assert read < 1_000_000, f"listing read {read} bytes; the bodies total 50 MB"
    skill = manager.get_skill("big-3")
    assert not skill.content_loaded  # get_skill does not read the body either
    assert skill.content.startswith("# Huge body")
    assert skill.content_loaded


def test_content_cached_and_invalidated_on_change(tmp_path, make_skill):
    skill_dir = make_skill(tmp_path, "doc", body="first version\n")
    skill = SkillManager([tmp_path]).get_skill("doc")
    first = skill.content
    assert first == "first version\n"
    assert skill.content is first  # cached: same object, not re-read
    md = skill_dir / "SKILL.md"
    text = md.read_text().replace("first version", "second version!")
    md.write_text(text)
    assert skill.content == "second version!\n"
    # Same size, new mtime: still noticed.
    md.write_text(text.replace("second", "SECOND"))
    st = md.stat()
    os.utime(md, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000))
    assert skill.content == "SECOND version!\n"


def test_content_refresh_updates_metadata(tmp_path, make_skill):
    skill_dir = make_skill(tmp_path, "doc", {"name": "doc", "description": "old"})
    skill = SkillManager([tmp_path]).get_skill("doc")
    (skill_dir / "SKILL.md").write_text("---\nname: doc\ndescription: new one\n---\nbody\n")
    assert skill.content == "body\n"
    assert skill.metadata.description == "new one"


def test_reload_add_dir_remove_dir(tmp_path, make_skill):
    make_skill(tmp_path / "a", "one")
    manager = SkillManager([tmp_path / "a"])
    assert [m.name for m in manager.list_skills()] == ["one"]
    make_skill(tmp_path / "a", "two")
    assert [m.name for m in manager.list_skills()] == ["one", "two"]  # on disk now
    manager.reload()
    assert [m.name for m in manager.list_skills()] == ["one", "two"]
    make_skill(tmp_path / "b", "three")
    assert manager.add_dir(tmp_path / "b") == tmp_path / "b"
    assert [m.name for m in manager.list_skills()] == ["one", "three", "two"]
    assert manager.skill_dirs == [tmp_path / "a", tmp_path / "b"]
    make_skill(tmp_path / "c", "one", {"name": "one", "description": "from c"})
    manager.add_dir(tmp_path / "c", first=True)
    assert manager.get_skill("one").metadata.description == "from c"
    assert manager.remove_dir(tmp_path / "c") is True
    assert manager.remove_dir(tmp_path / "c") is False
    assert manager.get_skill("one").metadata.description != "from c"


def test_get_skill_returns_the_same_cached_object_across_threads(tmp_path, make_skill):
    make_skill(tmp_path, "shared", scripts={f"scripts/s{i}.py": "pass\n" for i in range(20)})
    manager = SkillManager([tmp_path])
    got: list = []
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait()
        skill = manager.get_skill("shared")
        got.append((skill, len(skill.scripts), len(skill.content)))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(s) for s, _, _ in got}) == 1
    assert {n for _, n, _ in got} == {20}


# -- Skill: scripts, lookup, references ---------------------------------------------------


class CountingDetector(ScriptDetector):
    """The real detector, counting full scans (to see the cache work)."""

    def __init__(self) -> None:
        super().__init__()
        self.scans = 0

    def scan(self, skill_dir):
        self.scans += 1
        return super().scan(skill_dir)


def skill_from(manager: SkillManager, name: str, detector: ScriptDetector) -> Skill:
    return Skill(manager.get_skill(name).metadata, detector=detector)


def test_scripts_detected_lazily_and_cached(tmp_path, make_skill):
    skill_dir = make_skill(tmp_path, "lazy", scripts={"scripts/a.py": '"""A."""\n'})
    detector = CountingDetector()
    skill = skill_from(SkillManager([tmp_path]), "lazy", detector)
    assert detector.scans == 0  # nothing detected until asked
    assert [s.name for s in skill.scripts] == ["a"]
    assert [s.name for s in skill.scripts] == ["a"]
    assert detector.scans == 1
    # Add a script: picked up.
    (skill_dir / "scripts" / "b.sh").write_text("# B.\n")
    assert [s.name for s in skill.scripts] == ["a", "b"]
    # Edit a script: its description follows.
    (skill_dir / "scripts" / "a.py").write_text('"""A, edited."""\n')
    assert skill.find_script("a").description == "A, edited."
    # Remove one: gone.
    (skill_dir / "scripts" / "b.sh").unlink()
    assert [s.name for s in skill.scripts] == ["a"]
    scans = detector.scans
    assert skill.scripts and detector.scans == scans  # unchanged again: cached


def test_scripts_list_is_a_copy(tmp_path, make_skill):
    make_skill(tmp_path, "copy", scripts={"scripts/a.py": "pass\n"})
    skill = SkillManager([tmp_path]).get_skill("copy")
    skill.scripts.clear()
    assert len(skill.scripts) == 1


@pytest.fixture
def lookup_skill(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "lookup",
        scripts={
            "scripts/extract.py": "pass\n",
            "scripts/utils/parser.py": "pass\n",
            "scripts/convert.sh": "echo\n",
            "scripts/convert.py": "pass\n",
            "scripts/a/helper.py": "pass\n",
            "scripts/b/helper.py": "pass\n",
            "scripts/build": "#!/bin/bash\necho\n",  # extensionless, same stem as build.sh
            "scripts/build.sh": "echo\n",
        },
    )
    return SkillManager([tmp_path]).get_skill("lookup")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("extract", "scripts/extract.py"),
        ("extract.py", "scripts/extract.py"),
        ("scripts/extract.py", "scripts/extract.py"),
        ("./scripts/extract.py", "scripts/extract.py"),
        ("parser", "scripts/utils/parser.py"),
        ("scripts/utils/parser.py", "scripts/utils/parser.py"),
        ("utils/parser.py", "scripts/utils/parser.py"),
        ("scripts\\utils\\parser.py", "scripts/utils/parser.py"),
        ("convert.sh", "scripts/convert.sh"),
        ("build.sh", "scripts/build.sh"),
        ("scripts/build", "scripts/build"),
        ("scripts/a/helper.py", "scripts/a/helper.py"),
        (Path("scripts/convert.py"), "scripts/convert.py"),
    ],
)
def test_find_script_by_stem_file_or_path(lookup_skill, query, expected):
    assert lookup_skill.find_script(query).path.as_posix() == expected


@pytest.mark.parametrize(
    ("query", "paths"),
    [
        ("convert", ["scripts/convert.py", "scripts/convert.sh"]),
        ("helper", ["scripts/a/helper.py", "scripts/b/helper.py"]),
        ("helper.py", ["scripts/a/helper.py", "scripts/b/helper.py"]),
        ("build", ["scripts/build", "scripts/build.sh"]),  # the file name must not win
    ],
)
def test_ambiguous_names_list_every_path(lookup_skill, query, paths):
    with pytest.raises(AmbiguousScriptError) as err:
        lookup_skill.find_script(query)
    message = str(err.value)
    for p in paths:
        assert p in message
    assert "pass the relative path" in message


def test_unknown_script_suggests_and_lists(lookup_skill):
    with pytest.raises(ScriptNotFoundError) as err:
        lookup_skill.find_script("extrct")
    message = str(err.value)
    assert "did you mean 'scripts/extract.py'?" in message
    assert "Available: scripts/a/helper.py, scripts/b/helper.py" in message
    with pytest.raises(ScriptNotFoundError, match="no script 'zzz'. Available"):
        lookup_skill.find_script("zzz")
    with pytest.raises(ScriptNotFoundError, match="No script name given"):
        lookup_skill.find_script("  ")


def test_path_outside_the_skill_is_a_security_error(lookup_skill):
    for bad in ("../../etc/passwd", "/etc/passwd", "scripts/../../x.py"):
        with pytest.raises(PathSecurityError, match="outside skill 'lookup'"):
            lookup_skill.find_script(bad)
    with pytest.raises(ScriptNotFoundError):
        lookup_skill.find_script("scripts/missing.py")  # inside, just not there


def test_skill_without_scripts_says_so(tmp_path, make_skill):
    make_skill(tmp_path, "bare")
    skill = SkillManager([tmp_path]).get_skill("bare")
    with pytest.raises(ScriptNotFoundError, match="has no scripts"):
        skill.find_script("anything")


def test_content_hash_changes_with_scripts(tmp_path, make_skill):
    skill_dir = make_skill(tmp_path, "hash", scripts={"scripts/a.py": "pass\n"})
    skill = SkillManager([tmp_path]).get_skill("hash")
    first = skill.content_hash()
    assert skill.content_hash() == first
    (skill_dir / "scripts" / "a.py").write_text("print('changed')\n")
    second = skill.content_hash()
    assert second != first
    (skill_dir / "scripts" / "b.sh").write_text("echo\n")
    assert skill.content_hash() not in (first, second)


def test_references_and_assets(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "refs",
        files={
            "references/guide.md": "g",
            "references/deep/api.md": "a",
            "references/.hidden.md": "h",
            "assets/logo.svg": "<svg/>",
            "data/other.csv": "x",
        },
    )
    skill = SkillManager([tmp_path]).get_skill("refs")
    assert skill.references == [
        Path("assets/logo.svg"),
        Path("references/deep/api.md"),
        Path("references/guide.md"),
    ]


def test_referenced_scripts_from_skill_md(example_manager):
    skill = example_manager.get_skill("csv-profiler")
    refs = skill.referenced_scripts
    assert refs, "csv-profiler's SKILL.md names scripts/profile.py"
    assert {r.path for r in refs} == {"scripts/profile.py"}


def test_skill_repr_and_base_dir(example_manager, examples_dir):
    skill = example_manager.get_skill("text-tools")
    assert skill.base_dir == examples_dir / "text-tools"
    assert "text-tools" in repr(skill)


# -- bundled examples ---------------------------------------------------------------------


def test_examples_dir_matches_fixture(examples_dir):
    assert examples_dir_resolved() == examples_dir.resolve()


def examples_dir_resolved() -> Path:
    return examples_dir().resolve()


def test_examples_are_valid_skills(example_manager, examples_dir):
    names = [m.name for m in example_manager.list_skills()]
    assert names == ["csv-profiler", "demo-behaviours", "text-tools", "unit-converter"]
    assert example_manager.warnings == []
    for meta in example_manager.list_skills():
        assert meta.allowed_tools is None or any(t.startswith("Bash") for t in meta.allowed_tools)
        assert meta.version is not None or meta.name == "text-tools"


def test_examples_pass_the_reference_validator(examples_dir):
    import skills_ref.validator as validator

    for skill_dir in sorted(p for p in examples_dir.iterdir() if p.is_dir()):
        assert validator.validate(skill_dir) == [], skill_dir.name


def test_examples_scripts(example_manager):
    expected = {
        "csv-profiler": ["scripts/profile.py"],
        "text-tools": ["scripts/wordcount.sh"],
        "unit-converter": ["scripts/convert.py"],
        "demo-behaviours": [
            "scripts/crash.py",
            "scripts/env_report.py",
            "scripts/flood.py",
            "scripts/sleepy.py",
            "scripts/touch_marker.py",
        ],
    }
    for name, scripts in expected.items():
        skill = example_manager.get_skill(name)
        assert [s.path.as_posix() for s in skill.scripts] == scripts
        assert all(s.description for s in skill.scripts), name


def test_example_reference_styles_are_present(examples_dir):
    text = (examples_dir / "csv-profiler" / "SKILL.md").read_text()
    assert "```bash" in text and "python scripts/profile.py --top 3" in text  # fenced command
    assert "`scripts/profile.py`" in text  # inline code
    assert "](scripts/profile.py)" in text  # markdown link
    assert "{baseDir}/scripts/profile.py" in text


def test_listing_copy_of_examples_is_fast_enough(tmp_path, examples_dir):
    # Sanity only (the benchmark has the real figure): 200 skills list well under a second.
    for i in range(200):
        shutil.copytree(examples_dir / "text-tools", tmp_path / f"t{i}" / "text-tools")
    manager = SkillManager([tmp_path])
    start = time.perf_counter()
    assert len(manager.list_skills()) == 1  # same name: one wins ...
    elapsed = time.perf_counter() - start
    assert len([w for w in manager.warnings if "shadowed" in w]) == 199  # ... 199 reported
    assert elapsed < 20  # a hang or a quadratic walk; bench/bench_discovery.py has the figure


def test_content_survives_broken_edits_and_reports_deletion(tmp_path, make_skill):
    skill_dir = make_skill(tmp_path, "edit", {"name": "edit", "description": "good"})
    skill = SkillManager([tmp_path]).get_skill("edit")
    md = skill_dir / "SKILL.md"
    md.write_text("---\nname: edit\ndescription: [broken\n---\nnew body\n")
    assert skill.content == "new body\n"
    assert skill.metadata.description == "good"  # last good metadata kept
    md.write_text("no frontmatter at all\n")
    assert skill.content == "no frontmatter at all\n"
    md.unlink()
    with pytest.raises(SkillNotFoundError, match="is gone .*reload"):
        skill.content  # noqa: B018


# -- skills appear when they appear (issue 31) ----------------------------------------------


def test_a_skill_written_after_the_first_listing_is_found_without_reload(tmp_path, make_skill):
    make_skill(tmp_path / "skills", "first", scripts={"scripts/hi.py": "print(1)\n"})
    manager = SkillManager([tmp_path / "skills"])
    assert [m.name for m in manager.list_skills()] == ["first"]
    first = manager.get_skill("first")
    make_skill(tmp_path / "skills", "second", scripts={"scripts/hi.py": "print(2)\n"})
    assert manager.get_skill("second").name == "second"  # a miss rescans before the error
    assert [m.name for m in manager.list_skills()] == ["first", "second"]
    assert manager.get_skill("first") is first, "an unchanged skill keeps its loaded state"


def test_a_skills_folder_made_later_is_listed(tmp_path, make_skill):
    manager = SkillManager([tmp_path / "skills"])  # does not exist yet
    assert manager.list_skills() == []
    make_skill(tmp_path / "skills" / "group", "late")  # nested: the group folder is new too
    assert [m.name for m in manager.list_skills()] == ["late"]
    make_skill(tmp_path / "skills" / "group", "later")  # inside a folder already scanned
    assert [m.name for m in manager.list_skills()] == ["late", "later"]
    shutil.rmtree(tmp_path / "skills" / "group" / "late")
    assert [m.name for m in manager.list_skills()] == ["later"]  # a removal shows too


def test_an_unchanged_tree_is_not_scanned_again(tmp_path, make_skill, monkeypatch):
    # What must NOT happen: a rescan per lookup when nothing changed (one stat per folder).
    make_skill(tmp_path / "skills", "only")
    manager = SkillManager([tmp_path / "skills"])
    manager.list_skills()
    scans = []
    original = manager._finder._scan
    monkeypatch.setattr(manager._finder, "_scan", lambda: scans.append(1) or original())
    for _ in range(3):
        manager.list_skills()
        with pytest.raises(SkillNotFoundError):
            manager.get_skill("missing")
    assert scans == []


def test_not_found_names_the_fix_in_python_and_in_magic_words(tmp_path, make_skill):
    make_skill(tmp_path, "unit-converter", scripts={"scripts/convert.py": "print(1)\n"})
    manager = SkillManager([tmp_path])
    with pytest.raises(SkillNotFoundError) as err:
        manager.get_skill("nope")
    python, magic = str(err.value), err.value.magic_text()
    assert "manager.list_skills()" in python and "manager.add_dir(path)" in python
    assert "%skills add DIR" in magic and "%skills;" in magic
    assert "add_dir" not in magic and "list_skills" not in magic
    with pytest.raises(ScriptNotFoundError) as err:
        manager._finder.resolve_script("unit-converter", "convrt")
    assert "'scripts/convert.py'" in str(err.value)
    magic = err.value.magic_text()
    assert "did you mean unit-converter.convert?" in magic and "scripts/convert.py" not in magic
