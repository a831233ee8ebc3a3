"""Configuration from ipython_config.py (not only %config): a real IPython process reads it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from skill_magics.core.manager import examples_dir

CONFIG = """\
c.InteractiveShellApp.extensions = ["skill_magics"]
c.SkillMagics.skill_dirs = [{skills!r}]
c.SkillMagics.timeout = 5
c.SkillMagics.max_display_chars = 123
c.SkillMagics.auto_approve = ["csv-profiler"]
c.SkillMagics.allowed_interpreters = ["python3", "bash"]
"""

CODE = """\
m = get_ipython().magics_manager.registry["SkillMagics"]
print("config", m.timeout, m.max_display_chars, m.auto_approve, m.manager.settings.timeout)
r = get_ipython().run_cell_magic("skillrun", "csv-profiler.profile", '{"path": "data/sample.csv"}')
print("status", r.status, len(r.stdout) > 123)
print(get_ipython().display_formatter.format(r)[0]["text/plain"])  # what IPython shows
"""


def test_ipython_config_file_configures_the_magics(tmp_path: Path) -> None:
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text(CONFIG.format(skills=str(examples_dir())))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILL_MAGICS")}
    env["IPYTHONDIR"] = str(tmp_path / "ipython")
    proc = subprocess.run(
        [sys.executable, "-m", "IPython", "--colors=nocolor", "-c", CODE],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,  # nobody to ask: only the configured pre-approval runs it
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "config 5.0 123 ['csv-profiler'] 5.0" in out
    assert "status completed True" in out
    # The result's text view is cut at max_display_chars, with a note; the object keeps all.
    assert "showing first 123 of" in out, out


def test_bad_value_in_ipython_config_is_one_line_and_the_rest_applies(tmp_path: Path) -> None:
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    (profile / "ipython_config.py").write_text(
        "c.SkillMagics.timeout = 0\nc.SkillMagics.max_display_chars = 77\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILL_MAGICS")}
    env["IPYTHONDIR"] = str(tmp_path / "ipython")
    code = (
        "get_ipython().run_line_magic('load_ext', 'skill_magics')\n"
        "m = get_ipython().magics_manager.registry['SkillMagics']\n"
        "print('loaded', m.timeout, m.max_display_chars)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "IPython", "--colors=nocolor", "-c", code],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "loaded 30.0 77" in proc.stdout  # the bad value keeps its default, the rest applies
    lines = [line for line in proc.stderr.splitlines() if "SkillMagics.timeout" in line]
    assert lines == [
        "skill_magics: ignored SkillMagics.timeout = 0 from the configuration "
        "(SkillMagics.timeout = 0 is out of range: use 1 to 600 seconds); fix it in "
        "ipython_config.py or with %config"
    ], proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_run_setting_traits_default_to_run_settings_own_defaults(monkeypatch) -> None:
    """The SkillMagics traits that are run settings take RunSettings' defaults from the one
    place (core/run/defaults.py), so a default changed there changes both."""
    from dataclasses import fields

    from skill_magics.core.run.defaults import DEFAULTS
    from skill_magics.core.run.settings import RunSettings
    from skill_magics.notebook.magics.skills import RUN_SETTINGS, SkillMagics

    monkeypatch.delenv("SKILL_MAGICS_SANDBOX", raising=False)
    monkeypatch.delenv("SKILL_MAGICS_WARM_START", raising=False)
    declared = {f.name: f.default for f in fields(RunSettings) if f.init}
    assert declared == dict(DEFAULTS)
    traits = SkillMagics.class_traits()
    shown = {name: traits[name].default() for name in RUN_SETTINGS}
    as_fields = {k: tuple(v) if isinstance(v, list) else v for k, v in shown.items()}
    assert as_fields == declared
    assert RunSettings(**shown) == RunSettings()
