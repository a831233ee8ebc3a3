"""core/base/namelist.py: the one parser for lists of names, and its users (pre-approval, settings,
secrets). A string: commas and whitespace both separate; a list: each item is one name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from skill_magics.core.base.namelist import name_list, path_list, token_names
from skill_magics.core.run.planning.settings import RunSettings
from skill_magics.notebook.approval.preapproval import (
    AUTO_APPROVE_ENV,
    preapproved_by,
    unavailable_message,
)

PACKAGE = Path(__file__).resolve().parent.parent / "skill_magics"


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("csv-profiler,unit-converter", ("csv-profiler", "unit-converter")),
        ("csv-profiler, unit-converter", ("csv-profiler", "unit-converter")),
        ("csv-profiler unit-converter", ("csv-profiler", "unit-converter")),
        (" a ,, b\tc\nd , ", ("a", "b", "c", "d")),
        ("*", ("*",)),
        ("", ()),
        (" , ", ()),
        (None, ()),
        (["python3", " bash ", "", "  "], ("python3", "bash")),
        (("a", "a"), ("a", "a")),  # order and repeats kept; callers needing a set make one
        (iter(["x"]), ("x",)),
        ([1, 2], ("1", "2")),
    ],
)
def test_what_parses(value, names) -> None:
    assert name_list(value) == names


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("pdf-tools", ("pdf-tools",)),  # hyphens are part of a name, never a separator
        ("a;b|c", ("a;b|c",)),  # only commas and whitespace separate
        ("abc", ("abc",)),  # a string is not a sequence of letters
        (["Other Tools"], ("Other Tools",)),  # a list item is one name, spaces inside kept
        (["a,b"], ("a,b",)),  # ... and commas inside too
        ("**", ("**",)),  # not "*"
    ],
)
def test_what_does_not_split(value, names) -> None:
    assert name_list(value) == names


def test_preapproval_reads_names_as_every_other_list_does() -> None:
    """``auto_approve = "a b"`` pre-approved nothing (one name 'a b'); now both skills, as the
    same string means two names for env_passthrough, sandbox_network, ..."""
    config = "csv-profiler unit-converter"
    for skill in ("csv-profiler", "unit-converter"):
        assert preapproved_by(skill, config, env={}) == "config SkillMagics.auto_approve"
        assert preapproved_by(skill, [], env={AUTO_APPROVE_ENV: config}) == (
            f"env {AUTO_APPROVE_ENV}"
        )
    assert RunSettings(sandbox_network=config).sandbox_network == (
        "csv-profiler",
        "unit-converter",
    )


def test_preapproval_approves_only_the_names_given() -> None:
    env = {AUTO_APPROVE_ENV: "csv-profiler"}
    assert preapproved_by("csv", [], env=env) is None  # no prefix or substring match
    assert preapproved_by("csv-profiler-evil", [], env=env) is None
    assert preapproved_by("pdf", "**", env={}) is None
    assert preapproved_by("pdf", ["pdf tools"], env={}) is None
    assert preapproved_by("pdf", [], env={AUTO_APPROVE_ENV: " , "}) is None
    # A lenient (non-spec) name with a space is pre-approved by a list, never by a string.
    assert preapproved_by("Other Tools", ["Other Tools"], env={}) is not None
    assert preapproved_by("Other Tools", "Other Tools", env={}) is None


def test_the_hint_to_pre_approve_names_only_what_works() -> None:
    """The env var hint is given only when the env var can name every skill of the request."""
    hint = unavailable_message(["csv-profiler", "pdf"], "no display")
    assert f"{AUTO_APPROVE_ENV}=csv-profiler,pdf (or *)" in hint
    assert "auto_approve = ['csv-profiler', 'pdf']" in hint
    odd = unavailable_message("Other Tools", "no display")
    assert AUTO_APPROVE_ENV not in odd and "auto_approve = ['Other Tools']" in odd
    assert preapproved_by("Other Tools", ["Other Tools"], env={}) is not None


def test_no_module_parses_a_name_list_by_itself() -> None:
    """The one parser: nothing else in the package splits a string on commas."""
    own = PACKAGE / "core" / "base" / "namelist.py"
    pattern = re.compile(r"""\.split\(\s*["'],["']|\.replace\(\s*["'],["']""")
    found = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != own
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line) and "name_list(" not in line
    ]
    assert found == []


def test_a_path_is_never_split_like_names(tmp_path) -> None:
    """Paths may hold spaces and commas: a string or a Path is one path, a list one per item."""
    odd = tmp_path / "my data, 2026"
    assert path_list(str(odd)) == (str(odd),)
    assert path_list(odd) == (str(odd),)
    assert path_list([odd, "/b c", ""]) == (str(odd), "/b c")
    assert path_list(None) == ()
    settings = RunSettings(sandbox_read=str(odd), sandbox_deny_read="~/my secrets")
    assert settings.sandbox_read == (str(odd),)
    assert settings.sandbox_deny_read == ("~/my secrets",)


def test_a_magics_tokens_are_each_a_string_list() -> None:
    """A magic's line gives tokens: ``a,b`` and ``a b`` name the same skills."""
    assert token_names(["a,b", "c"]) == token_names(["a", "b", "c"]) == ("a", "b", "c")
    assert token_names(["a, b,", ","]) == ("a", "b")
    assert token_names([]) == token_names(None) == ()
