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
    from skill_magics.core.run.planning.settings import RunSettings
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


LISTS_CONFIG = """\
c.SkillMagics.allowed_interpreters = "python3, bash"
c.SkillMagics.env_passthrough = "MY_TOKEN OTHER_TOKEN"
c.SkillMagics.sandbox_network = "csv-profiler,unit-converter"
c.SkillMagics.sandbox_read = {folder!r}
"""

LISTS_CODE = """\
get_ipython().run_line_magic("load_ext", "skill_magics")
m = get_ipython().magics_manager.registry["SkillMagics"]
s = m.manager.settings
print("traits", m.allowed_interpreters, m.env_passthrough, m.sandbox_network, m.sandbox_read)
print("settings", sorted(s.allowed), s.env_passthrough, s.sandbox_network, s.sandbox_read)
"""


def test_a_string_for_a_list_of_names_in_ipython_config_is_split(tmp_path: Path) -> None:
    """``c.SkillMagics.allowed_interpreters = "python3, bash"`` was ONE interpreter named
    'python3, bash' (traitlets makes a string a one-item list): no script could run. Names
    are split by the one parser, as auto_approve's are; a path list's string stays one path."""
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    folder = str(tmp_path / "my data, 2026")
    (profile / "ipython_config.py").write_text(LISTS_CONFIG.format(folder=folder))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILL_MAGICS")}
    env["IPYTHONDIR"] = str(tmp_path / "ipython")
    proc = subprocess.run(
        [sys.executable, "-m", "IPython", "--colors=nocolor", "-c", LISTS_CODE],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        "traits ['python3', 'bash'] ['MY_TOKEN', 'OTHER_TOKEN'] "
        f"['csv-profiler', 'unit-converter'] [{folder!r}]"
    ) in proc.stdout, proc.stdout + proc.stderr
    assert (
        "settings ['bash', 'python3'] ('MY_TOKEN', 'OTHER_TOKEN') "
        f"('csv-profiler', 'unit-converter') ({folder!r},)"
    ) in proc.stdout, proc.stdout


def test_a_string_for_a_list_of_names_in_percent_config_is_split(ipython_shell, tmp_path):
    """The same through %config, and what it must NOT change: a list keeps each item as
    written (a comma inside one is part of it), a path list's string is one path."""
    from skill_magics.notebook.extension import get_magics

    ip = ipython_shell(tmp_path)
    magics = get_magics(ip)
    for value in ('"python3, bash"', '"python3 bash"', '"python3,bash"'):
        ip.run_cell(f"%config SkillMagics.allowed_interpreters = {value}")
        assert magics.allowed_interpreters == ["python3", "bash"], value
    assert magics.manager.settings.allowed == {"python3", "bash"}
    ip.run_cell('%config SkillMagics.env_passthrough = "MY_TOKEN"')
    assert magics.env_passthrough == ["MY_TOKEN"]  # one name: one item, never letters
    ip.run_cell('%config SkillMagics.sandbox_network = ["a,b"]')
    assert magics.sandbox_network == ["a,b"]  # a list item is one name, as written
    folder = str(tmp_path / "my data, 2026")
    ip.run_cell(f"%config SkillMagics.sandbox_deny_read = {folder!r}")
    assert magics.sandbox_deny_read == [folder]
    ip.run_cell(f"%config SkillMagics.skill_dirs = {str(tmp_path)!r}")
    assert magics.skill_dirs == [str(tmp_path)]
