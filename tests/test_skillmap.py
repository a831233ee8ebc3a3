"""``%%skillrun skill.script --map VAR`` (notebook/magics/skillmap.py) and the BatchResult
display (notebook/render/batch.py), in a real IPython shell with real processes."""

from __future__ import annotations

import io

import pytest
from IPython.core.error import UsageError
from process_support import pid_alive, start_times

from skill_magics.core.run.batch.result import BatchResult
from skill_magics.core.run.planning.template import fill_argv, placeholders
from skill_magics.notebook.render.batch import TextProgress, batch_html

CONVERT = """
import argparse, json, sys
p = argparse.ArgumentParser()
p.add_argument("--value", type=float, required=True)
p.add_argument("--label", default="")
a = p.parse_args()
if a.value < 0:
    sys.exit("negative distance")
print(json.dumps({"miles": round(a.value * 0.621371, 3), "label": a.label}))
"""
STDIN = "import json, sys\nd = json.load(sys.stdin)\nprint(json.dumps({'twice': d['km'] * 2}))\n"


@pytest.fixture
def shell(tmp_path, make_skill, ipython_shell):
    skills = tmp_path / "skills"
    make_skill(skills, "units", scripts={"scripts/convert.py": CONVERT, "scripts/twice.py": STDIN})
    return ipython_shell(skills, auto_approve=True)  # nobody can click in a test shell


def test_placeholders_fill_one_argv_element_each_never_a_shell() -> None:
    template = ("--value", "{km}", "--label", "{name}", "x={km}", "{{lit}}")
    rows = [{"km": 5, "name": "a b; rm -rf /"}, {"km": 1.5, "name": "$(id)"}]
    assert placeholders(template) == ["km", "name", "km"]
    assert fill_argv(template, rows) == [
        ("--value", "5", "--label", "a b; rm -rf /", "x=5", "{lit}"),
        ("--value", "1.5", "--label", "$(id)", "x=1.5", "{lit}"),
    ]
    assert fill_argv(("{}",), ["a.csv", 3]) == [("a.csv",), ("3",)]
    with pytest.raises(ValueError, match="no field 'miles'.*fields: km, name"):
        fill_argv(("{miles}",), rows)


def test_map_over_a_dataframe_with_placeholders_gives_a_dataframe_back(shell) -> None:
    import pandas as pd

    shell.user_ns["df"] = pd.DataFrame(
        {"km": [5.0, 42.195, -1.0], "label": ["5k", "mara thon", "x"]}
    )
    result = shell.run_cell_magic(
        "skillrun",
        "units.convert --map df --workers 2 -o res -- --value {km} --label {label}",
        "\n",
    )
    assert isinstance(result, BatchResult) and shell.user_ns["res"] is result
    assert result.counts() == {"completed": 2, "failed": 1}
    assert result[1].argv == ("--value", "42.195", "--label", "mara thon")
    out = result.to_pandas(json=True)
    assert list(out["km"]) == [5.0, 42.195, -1.0]  # the row's fields come back as columns
    assert out.loc[1, "miles"] == pytest.approx(26.219)
    assert out.loc[1, "json.label"] == "mara thon"  # clashes with an input column: prefixed
    assert "negative distance" in result[2].stderr
    # One approval (pre-approved here) for the batch, one batch record.
    records = result_records(shell)
    assert [r.outcome for r in records if r.outcome == "approved"] == ["approved"]
    assert records[-1].arguments == "batch of 3 items"


def result_records(shell):
    from skill_magics.notebook.extension import get_magics

    return get_magics(shell).manager.audit.records()


def test_map_over_a_list_sends_each_item_on_stdin_and_prints_progress(shell, capsys) -> None:
    shell.user_ns["rows"] = ({"km": k} for k in range(5))  # any iterable
    result = shell.run_cell_magic("skillrun", "units.twice --map rows", "\n")
    assert [item.json()["twice"] for item in result] == [0, 2, 4, 6, 8]
    out = capsys.readouterr().out
    assert "units.twice: 5 items in" in out and "5 completed" in out


def test_a_pool_variable_is_used(shell) -> None:
    from concurrent.futures import ThreadPoolExecutor

    shell.user_ns["rows"] = [{"km": 1}, {"km": 2}]
    with ThreadPoolExecutor(2) as pool:
        shell.user_ns["pool"] = pool
        result = shell.run_cell_magic("skillrun", "units.twice --map rows --pool pool", "\n")
    assert result.pool == "ThreadPoolExecutor" and result.ok


def test_the_executor_flag_is_the_deprecated_old_name_of_pool(shell) -> None:
    """--executor VAR still works, with a FutureWarning (shown in notebooks) naming --pool;
    --pool with --executor is a one-line error before anything runs."""
    from concurrent.futures import ThreadPoolExecutor

    shell.user_ns["rows"] = [{"km": 1}, {"km": 2}]
    with ThreadPoolExecutor(2) as pool:
        shell.user_ns["pool"] = pool
        with pytest.warns(FutureWarning, match=r"^--executor is deprecated .*use --pool "):
            old = "units.twice --map rows --executor pool"
            result = shell.run_cell_magic("skillrun", old, "\n")
        assert result.pool == "ThreadPoolExecutor" and result.ok
        line = "units.twice --map rows --pool pool --executor pool"
        with pytest.raises(UsageError, match=r"^--executor is the old name of --pool") as info:
            shell.run_cell_magic("skillrun", line, "\n")
    assert "\n" not in str(info.value)
    with pytest.warns(FutureWarning), pytest.raises(UsageError, match="--executor rows: pool="):
        shell.run_cell_magic("skillrun", "units.twice --map rows --executor rows", "\n")


@pytest.mark.parametrize(
    ("line", "body", "message"),
    [
        ("units.twice --map nothing", "\n", "no variable 'nothing'"),
        ("units.twice --map rows", '{"km": 1}', "leave the cell body empty"),
        ("units.convert --map rows -- --value 3", "\n", "no {column} placeholder"),
        ("units.convert --map rows -- --value {miles}", "\n", "no field 'miles'"),
        ("units.twice --map rows --workers 0", "\n", "--workers must be at least 1"),
        ("units.nope --map rows", "\n", "ScriptNotFoundError"),
        ("units.twice --map rows --pool rows", "\n", "pool= must be"),
    ],
)
def test_bad_lines_fail_in_one_line_before_anything_runs(shell, line, body, message) -> None:
    shell.user_ns["rows"] = [{"km": 1}]
    with pytest.raises(UsageError, match=message) as info:
        shell.run_cell_magic("skillrun", line, body)
    assert "\n" not in str(info.value)


def test_a_string_variable_is_refused(shell) -> None:
    shell.user_ns["rows"] = "abc"
    with pytest.raises(UsageError, match="needs a DataFrame, a list"):
        shell.run_cell_magic("skillrun", "units.twice --map rows", "\n")


def test_the_result_renders_as_html_and_text(shell) -> None:
    shell.user_ns["rows"] = [{"km": 1}, {"km": None}]
    result = shell.run_cell_magic("skillrun", "units.twice --map rows", "\n")
    data, _ = shell.display_formatter.format(result)
    assert data["text/plain"] == result.text()
    assert "units.twice: 2 items, 1 completed, 1 failed" in data["text/plain"]
    html = data["text/html"]
    assert html == batch_html(result)
    assert "failures (1" in html and "first items" in html and "<table>" in html
    assert "&quot;km&quot;: null" in html  # escaped


def test_text_progress_headless_writes_a_short_log() -> None:
    from skill_magics.core.run.batch.runner import BatchProgress

    stream = io.StringIO()
    progress = TextProgress(3, "units.twice", live=False, stream=stream)
    progress.update(BatchProgress(3, 1, 0, 2, 0, 0.5))
    assert "1/3 done" in progress.line()
    res = BatchResult("units", "scripts/twice.py", [], wall_s=0.1)
    progress.finish(res)
    assert stream.getvalue().count("\n") == 1  # one final line, no redraw spam


def test_the_stop_button_of_the_progress_bar_stops_the_batch(tmp_path, make_skill) -> None:
    """The widget bar's real Button: a click kills the running groups, the rest is cancelled."""
    import threading
    import time

    from skill_magics.core.manager import SkillManager
    from skill_magics.notebook.render.batch import WidgetProgress

    hang = 'sleep 300 &\necho "$$ $!" > "$1"\nwait\n'
    make_skill(tmp_path, "hang", scripts={"scripts/hang.sh": hang})
    manager = SkillManager([tmp_path])
    cancel = threading.Event()
    progress = WidgetProgress(10, "hang.hang", on_stop=cancel.set)
    pid_files = [tmp_path / f"{i}.pids" for i in range(10)]

    starts: dict[int, int | None] = {}

    def click_when_running() -> None:
        deadline = time.monotonic() + 20
        while sum(_written(p) for p in pid_files) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        running = [int(x) for p in pid_files if _written(p) for x in p.read_text().split()]
        starts.update(start_times(running))  # while they surely run: pid reuse shows
        progress.stop_button.click()

    threading.Thread(target=click_when_running, daemon=True).start()
    res = manager.map(
        "hang",
        "hang",
        argv=[[str(p)] for p in pid_files],
        max_workers=2,
        cancel=cancel,
        on_progress=progress.update,
        approver=None,
    )
    progress.finish(res)
    assert res.counts() == {"interrupted": 2, "cancelled": 8}, res.text()
    assert progress.stop_button.disabled and progress.stop_button.description == "Stopping…"
    pids = [int(x) for p in pid_files if p.exists() for x in p.read_text().split()]
    assert len(pids) == 4 and sorted(starts) == sorted(pids)
    assert not [pid for pid in pids if pid_alive(pid, starts[pid])]


def _written(path) -> bool:
    """The script wrote both pids (the file exists before echo has written into it)."""
    try:
        return len(path.read_text().split()) == 2
    except OSError:
        return False


def test_the_approval_panel_shows_the_batch(tmp_path, make_skill) -> None:
    """The ONE request of a batch shows the script, how many items and the first ones."""
    from skill_magics.core.manager import SkillManager
    from skill_magics.notebook.approval.panel import summary_text

    make_skill(tmp_path, "units", scripts={"scripts/twice.py": STDIN})
    plan = SkillManager([tmp_path]).plan_map("units", "twice", [{"km": k} for k in range(40)])
    text = summary_text(plan.request)
    assert "scripts/twice.py" in text
    assert "Batch: 40 items, each one run" in text
    assert '{"km": 1}' in text and "... and 37 more" in text


def test_cwd_and_sandbox_options_apply_to_every_item(shell, tmp_path) -> None:
    """%%skillrun's --cwd (and --sandbox) mean the same with --map as for one run."""
    shell.user_ns["rows"] = [{"km": 1}, {"km": 2}]
    code = (
        "import os, json, sys\n"
        "if __name__ == '__main__':\n"
        "    json.load(sys.stdin)\n"
        "    print(os.getcwd())\n"
    )
    skills = tmp_path / "skills" / "units" / "scripts"
    (skills / "where.py").write_text(code)
    result = shell.run_cell_magic("skillrun", f"units.where --map rows --cwd {tmp_path}", "\n")
    assert [item.stdout.strip() for item in result] == [str(tmp_path)] * 2, result.text()


def test_the_progress_bar_keeps_the_eta_on_its_line():
    # Issue 31 item 12: the ETA wrapped under the bar at 1400 px. The bar has a fixed width,
    # the label takes the rest of one no-wrap row and cuts with an ellipsis.
    from skill_magics.core.run.batch.runner import BatchProgress
    from skill_magics.notebook.render.batch import WidgetProgress

    progress = WidgetProgress(200, "unit-converter.convert", on_stop=lambda: None)
    assert progress.widget.layout.flex_flow == "row nowrap"
    assert progress.bar.layout.width == "240px" and progress.bar.layout.flex == "0 0 auto"
    snap = BatchProgress(total=200, done=120, failed=3, running=2, cancelled=0, elapsed_s=4.1)
    progress.update(snap)
    progress.draw("120/200 done · 3 failed · 2 running · 4.1 s elapsed · ETA 2.7 s")
    assert "white-space:nowrap" in progress.label.value and "ETA 2.7 s" in progress.label.value
    progress.widget.close()
