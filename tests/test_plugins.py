"""Agent Plugins: a folder with a root plugin.json is discovered as a plugin whose
skills/<name>/ are listed under its name (and nothing else in it is taken for a skill); its
mcp.json servers are offered, not started, in %skills and %skills show. A folder without
plugin.json is searched as before (what must not change)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skill_magics.core.catalog.plugins import MCP_NOTE, plugin_of, read_plugin
from skill_magics.core.manager import SkillManager


def skill(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n---\n")


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    root = tmp_path / "plugins" / "acme-tools"
    root.mkdir(parents=True)
    (root / "plugin.json").write_text(
        json.dumps(
            {
                "$schema": "https://agentplugins.dev/schema/1.0.0/plugin.json",
                "name": "acme-tools",
                "version": "1.2.0",
            }
        )
    )
    (root / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "acme": {"command": "acme-mcp", "args": ["--stdio"], "env": {"ACME_KEY": "x"}},
                    "docs": {"type": "http", "url": "https://mcp.example.com/docs"},
                }
            }
        )
    )
    skill(root / "skills" / "report", "report")
    skill(root / "skills" / "lint", "lint")
    # not skills of the plugin: deeper than one level, or outside skills/
    skill(root / "skills" / "report" / "nested" / "inner", "inner")
    skill(root / "agents" / "helper", "helper")
    skill(root / "skills" / "group" / "deep", "deep")
    return root


def test_a_plugin_folder_gives_its_skills_one_level_deep_only(plugin, tmp_path):
    manager = SkillManager([plugin.parent])
    names = [m.name for m in manager.list_skills()]
    assert names == ["lint", "report"]
    assert plugin_of(manager.get_skill("report").base_dir).name == "acme-tools"
    # what must not change: the same folders without plugin.json are searched as before
    (plugin / "plugin.json").unlink()
    manager.reload()
    assert [m.name for m in manager.list_skills()] == ["deep", "helper", "lint", "report"]


def test_mcp_servers_are_read_and_offered_never_started(plugin, tmp_path):
    read = read_plugin(plugin)
    assert read is not None and read.problems == ()
    assert [m.describe() for m in read.mcp_servers] == [
        "acme (stdio: acme-mcp --stdio)",
        "docs (http: https://mcp.example.com/docs)",
    ]
    assert read.mcp_servers[0].env == ("ACME_KEY",)  # names only, never values


def test_a_broken_manifest_is_a_note_not_an_error(plugin):
    (plugin / "plugin.json").write_text("{not json")
    (plugin / "mcp.json").write_text(json.dumps({"mcpServers": {"x": {"args": []}}}))
    read = read_plugin(plugin)
    assert read is not None and read.name == "acme-tools"  # the folder name
    assert any("plugin.json is not JSON" in p for p in read.problems)
    assert "mcp.json server 'x' has neither 'command' nor 'url'" in read.problems
    assert [m.name for m in SkillManager([plugin]).list_skills()] == ["lint", "report"]


def test_list_and_show_name_the_plugin_and_its_offered_servers(plugin, monkeypatch):
    monkeypatch.setenv("SKILL_MAGICS_PATH", os.fspath(plugin.parent))
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skill_magics")
    try:
        ip.run_line_magic("skills", f"add {plugin.parent}")
        listed = ip.run_line_magic("skills", "list")
        assert "--- plugins ---" in listed.text
        assert "acme-tools (" in listed.text and "): skills lint, report" in listed.text
        assert "MCP servers: acme (stdio: acme-mcp --stdio), docs (http: " in listed.text
        assert MCP_NOTE in listed.text and MCP_NOTE in listed.html
        shown = ip.run_line_magic("skills", "show report")
        assert "acme-tools" in shown.text and MCP_NOTE in shown.text
    finally:
        ip.run_line_magic("unload_ext", "skill_magics")
