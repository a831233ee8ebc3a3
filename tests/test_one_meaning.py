"""Each name means one thing (issue 30): the renamed keywords and attributes, and their old
spellings kept for one release (the same result, a DeprecationWarning naming the new one;
both spellings together refuse)."""

from __future__ import annotations

import pytest
from manager_support import manager_for

from skill_magics.core.prompt.available_skills import available_skills, entry_text
from skill_magics.core.prompt.context import build_skill_context
from skill_magics.core.prompt.tools import tool_definitions


@pytest.fixture
def manager(tmp_path, make_skill):
    make_skill(tmp_path, "pdf", scripts={"scripts/extract.py": "print('x')\n"})
    return manager_for(tmp_path)


def test_format_was_three_things_now_envelope_api_and_layout(manager):
    cases = [
        (build_skill_context, ("pdf",), "envelope", "skill_content"),
        (tool_definitions, (), "api", "openai"),
        (available_skills, (), "layout", "guide"),
    ]
    for func, args, keyword, value in cases:
        new, name = {keyword: value}, f"{keyword}="
        expected = func(manager, *args, **new)
        with pytest.warns(DeprecationWarning, match=rf"^format= is deprecated .*use {name}"):
            assert func(manager, *args, format=value) == expected
        with pytest.raises(ValueError, match=rf"format= is the old name of {name}: give {name}"):
            func(manager, *args, format=value, **new)
    meta = manager.get_skill("pdf").metadata
    with pytest.warns(DeprecationWarning, match="use layout="):
        assert entry_text(meta, format="guide") == entry_text(meta, "guide")


def test_the_defaults_did_not_move(manager):
    """No keyword: the <skill_context> envelope, Anthropic's tool shape, skills-ref's layout."""
    assert build_skill_context(manager, "pdf", run_scripts=False).startswith("<skill_context")
    assert "input_schema" in tool_definitions(manager)[0]
    assert available_skills(manager).layout == "skills-ref"


def test_an_offer_names_its_block_available_skills(manager):
    """Offer.catalog was the <available_skills> block while core/catalog/ is the skills on
    disk: the block is Offer.available_skills now, .catalog its deprecated old name."""
    from skill_magics.core.lab.offer import make_offer

    offer = make_offer(manager)
    assert offer.available_skills == str(available_skills(manager, ["pdf"]))
    assert offer.available_skills in offer.system
    with pytest.warns(DeprecationWarning, match=r"^Offer\.catalog is deprecated .*available_"):
        assert offer.catalog == offer.available_skills
    assert make_offer(manager, []).available_skills == ""


def test_a_prepared_run_and_its_settings_share_no_name_with_two_types():
    """PreparedRun.sandbox was a SandboxProfile and PreparedRun.warm a mode name, beside
    RunSettings.sandbox (a mode name) and the per-run ``warm=`` (a bool): a field named like
    a setting now holds that setting's type, and the profile has a name of its own."""
    import dataclasses

    from skill_magics.core.run.executor import ScriptExecutor
    from skill_magics.core.run.launching.prepared import PreparedRun
    from skill_magics.core.run.planning.settings import RunSettings

    settings = {f.name: f.type for f in dataclasses.fields(RunSettings)}
    prepared = {f.name: f.type for f in dataclasses.fields(PreparedRun)}
    shared = set(settings) & set(prepared)
    assert shared >= {"timeout", "max_output_size", "warm_start"}
    assert {n: (settings[n], prepared[n]) for n in shared if settings[n] != prepared[n]} == {
        "warm_start": ("str | None", "str")  # resolved: None became the default mode
    }
    assert "sandbox" not in prepared and "warm" not in prepared
    assert "sandbox_profile" in prepared
    # The executor's warm launcher is not a boolean ``warm`` beside execute(warm=...).
    executor = ScriptExecutor()
    assert not hasattr(executor, "warm") and executor.warm_launcher is not None


def test_a_result_says_timed_out_and_timeout_stays_seconds():
    """ScriptExecutionResult.timeout was a bool (did it time out) while ``timeout`` is seconds
    in RunSettings, PreparedRun and every ``timeout=`` keyword: it is ``timed_out`` now (the
    name ProcessOutcome and %%skillpy's result already used); .timeout warns for one release."""
    from pathlib import Path

    from skill_magics.core.base.models import ScriptExecutionResult

    result = ScriptExecutionResult("", "", 124, 1.0, Path("scripts/slow.py"), timed_out=True)
    assert result.timed_out and result.status.value == "timeout"
    with pytest.warns(DeprecationWarning, match=r"ScriptExecutionResult\.timeout is deprecated"):
        assert result.timeout is True


def test_a_reference_run_as_a_command_is_not_called_command(tmp_path, make_skill):
    """ScriptReference.command was a bool beside ``command`` as the argv a run executes
    (PreparedRun.command, the approval panel's ScriptToApprove.command): as_command now."""
    from skill_magics.core.catalog.references import scan_skill

    make_skill(
        tmp_path, "cmd", scripts={"scripts/x.py": "print(1)\n"}, body="Run `python scripts/x.py`.\n"
    )
    skill = manager_for(tmp_path).get_skill("cmd")
    (ref,), _ = scan_skill(skill)
    assert ref.as_command is True
    with pytest.warns(DeprecationWarning, match=r"ScriptReference\.command is deprecated"):
        assert ref.command is True


def test_a_trigger_run_names_its_query_by_index():
    """TriggerRun.query was an index while QueryResult.query and TriggerQuery.query are the
    query's text: TriggerRun.query_index now, .query warns for one release."""
    from skill_magics.core.lab.triggers import TriggerRun

    run = TriggerRun(3, 1, "triggered")
    assert run.query_index == 3
    with pytest.warns(DeprecationWarning, match=r"TriggerRun\.query is deprecated"):
        assert run.query == 3


def test_the_old_module_level_names_warn_and_give_the_new_value():
    from skill_magics.core.prompt import available_skills as block
    from skill_magics.core.prompt import context, tools

    for module, old, new in (
        (context, "ContextFormat", "Envelope"),
        (tools, "ToolFormat", "ToolApi"),
        (block, "FORMATS", "LAYOUTS"),
    ):
        with pytest.warns(DeprecationWarning, match=rf"^{old} is deprecated .*use {new} instead"):
            assert getattr(module, old) is getattr(module, new)
    with pytest.raises(AttributeError, match="has no attribute 'NOPE'"):
        context.NOPE  # noqa: B018 - any other name is missing as before
