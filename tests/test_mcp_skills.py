"""Skills over MCP (SEP-2640), with real processes and real SDKs on both ends:

- our host (core/mcp, over the official ``mcp`` SDK) against FastMCP's own skills server
  (``SkillsDirectoryProvider`` over skill folders shaped like anthropics/skills and K-Dense
  ones), over stdio and streamable HTTP;
- our server (``python -m skill_magics.mcp serve``) against FastMCP's skills client, and
  against our host, over stdio and HTTP;
- hostile servers of our own (tests/mcp_servers/: the official SDK's low-level Server that
  lies, and stdlib scripts that hang or send garbage) for what a conforming server never does;
- the host-only cache.

One server process per kind for the module (CI time): the hostile one switches what it does
with a test-only request (``test/mode``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_support import free_port, http_server

from skill_magics.core.base.errors import McpCacheError, McpError, McpSkillMismatchError
from skill_magics.core.manager import SkillManager
from skill_magics.core.mcp.cache import McpCache, copy_key, fetch_into
from skill_magics.core.mcp.connection import ServerSpec, connect
from skill_magics.core.mcp.host import McpSkillsHost
from skill_magics.core.mcp.wire import SkillEntry, binding, check_label, sha256_digest
from skill_magics.notebook.extension import get_magics

pytestmark = [pytest.mark.mcp, pytest.mark.timeout(120)]

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "mcp_servers"
PY = sys.executable
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))  # not UTF-8


# -- skill folders in the shapes of public ones (written here, never copied) ---------------


def _write(base: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return base


def write_shared_skills(root: Path) -> Path:
    """Two skills both servers can serve: an anthropics/skills-like document skill (LICENSE
    file, top-level reference docs, scripts/) and a K-Dense-like scientific one (metadata
    with an author, references/, scripts/, a binary asset)."""
    _write(
        root / "pdf-forms",
        {
            "SKILL.md": (
                "---\nname: pdf-forms\ndescription: Fill PDF forms and check their fields. "
                "Use when a user hands over a PDF form.\nlicense: Proprietary. LICENSE.txt "
                "has complete terms\n---\n\n# PDF forms\n\nRead forms.md first, then run "
                "`python scripts/check_fields.py form.pdf`.\n"
            ),
            "LICENSE.txt": "Terms of this test skill.\n",
            "forms.md": "# Forms\r\nCRLF lines stay as they are.\r\n",
            "reference.md": "# Reference\n\nFields, widgets, values.\n",
            "scripts/check_fields.py": "import sys\nprint('fields of', sys.argv[1:])\n",
            "scripts/fill_form.py": "import json, sys\nprint(json.load(sys.stdin))\n",
        },
    )
    _write(
        root / "sci-plotting",
        {
            "SKILL.md": (
                "---\nname: sci-plotting\ndescription: Publication-quality plots with "
                "matplotlib. Use for figures in papers.\nlicense: MIT license\nmetadata:\n"
                "    skill-author: Test Lab Inc.\n---\n\n# Scientific plotting\n\nSee "
                "references/styles.md.\n"
            ),
            "references/styles.md": "# Styles\n\nUse a colour-blind palette.\n",
            "references/api_reference.md": "# API\n\n`plot(x, y)`\n",
            "scripts/plot.py": "print('plot')\n",
            "assets/logo.png": PNG,
        },
    )
    return root


def write_our_extra_skills(root: Path) -> Path:
    """A skill with what our server must never serve: a secret dot-file, a link out of the
    folder, a venv, a nested .git (FastMCP refuses links, so this root is ours only)."""
    base = _write(
        root / "with-secrets",
        {
            "SKILL.md": "---\nname: with-secrets\ndescription: Holds things not shipped.\n---\n",
            "scripts/run.py": "print('run')\n",
            ".env": "API_KEY=secret\n",
            "venv/bin/python": "not shipped\n",
            ".git/config": "[core]\n",
            "node_modules/x/index.js": "1\n",
        },
    )
    # A name the spec refuses: left out (a host would refuse the whole listing), the rest
    # still served.
    _write(root / "bad-name", {"SKILL.md": "---\nname: Bad Name\ndescription: Caps.\n---\n"})
    # Over the limits: left out whole (never half-served).
    _write(root / "too-many", {f"data/{i}.txt": "" for i in range(512)})
    _write(root / "too-many", {"SKILL.md": "---\nname: too-many\ndescription: 513.\n---\n"})
    _write(root / "too-big", {"SKILL.md": "---\nname: too-big\ndescription: 17 MiB.\n---\n"})
    with open(root / "too-big" / "data.bin", "wb") as fh:
        fh.truncate(17 << 20)
    outside = root.parent / "outside.txt"
    outside.write_text("outside the skill\n", encoding="utf-8")
    (base / "linked.txt").symlink_to(outside)
    (base / "linkdir").symlink_to(root.parent)
    return root


def disk_files(base: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# -- servers --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("mcp")
    return {
        "shared": write_shared_skills(base / "shared"),
        "ours": write_our_extra_skills(base / "ours" / "skills"),
    }


@pytest.fixture(scope="module")
def fastmcp_stdio(roots: dict[str, Path]) -> Iterator[McpSkillsHost]:
    argv = [PY, str(SERVERS / "fastmcp_skills.py"), str(roots["shared"])]
    with connect("fm", command=argv, timeout=20) as conn:
        yield McpSkillsHost(conn)


@pytest.fixture(scope="module")
def ours_stdio(roots: dict[str, Path]) -> Iterator[McpSkillsHost]:
    argv = [PY, "-m", "skill_magics.mcp", "serve", str(roots["shared"]), str(roots["ours"])]
    with connect("ours", command=argv, timeout=20) as conn:
        yield McpSkillsHost(conn)


@pytest.fixture(scope="module")
def hostile() -> Iterator[McpSkillsHost]:
    # A secret of the kernel's environment: a server we start must not see it.
    os.environ["SKILL_MAGICS_TEST_KERNEL_SECRET"] = "s3cret"
    try:
        argv = [PY, str(SERVERS / "hostile.py")]
        conn = connect("evil", command=argv, timeout=4, env={"GIVEN_TO_SERVER": "1"})
    finally:
        del os.environ["SKILL_MAGICS_TEST_KERNEL_SECRET"]
    with conn:
        yield McpSkillsHost(conn)


def test_a_stdio_server_gets_only_the_env_it_is_given(hostile: McpSkillsHost) -> None:
    names = hostile.connection.request("test/env", {})["env"]
    assert "GIVEN_TO_SERVER" in names and "PATH" in names
    assert "SKILL_MAGICS_TEST_KERNEL_SECRET" not in names


@pytest.fixture
def mode(hostile: McpSkillsHost) -> Iterator[object]:
    """Set the hostile server's mode for one test (back to honest after it)."""

    def set_mode(name: str) -> None:
        hostile.connection.request("test/mode", {"mode": name})

    yield set_mode
    set_mode("honest")


def reads(host: McpSkillsHost) -> list[str]:
    return list(host.connection.request("test/reads", {})["reads"])


# -- our host against FastMCP's skills server -----------------------------------------------


def check_against_disk(host: McpSkillsHost, root: Path) -> None:
    entries = {e.name: e for e in host.list_skills()}
    assert set(entries) == {"pdf-forms", "sci-plotting"}
    for name, entry in entries.items():
        on_disk = disk_files(root / name)
        assert {f.path for f in entry.files or ()} == set(on_disk)
        got = {f.path: f.data for f in host.fetch_all(entry)}
        assert got == on_disk  # byte for byte: CRLF, binary asset
        assert entry.qualified_name == f"{host.label}/{name}"
        expected = {
            "uri": entry.uri,
            "digest": sorted((entry.prefix + p, sha256_digest(d)) for p, d in on_disk.items()),
        }
        assert sorted((f.uri, f.digest) for f in entry.files or ()) == expected["digest"]
    sci = entries["sci-plotting"]
    assert sci.frontmatter["metadata"] == {"skill-author": "Test Lab Inc."}
    assert entries["pdf-forms"].frontmatter["license"].startswith("Proprietary")


def test_host_reads_fastmcp_skills_over_stdio(
    fastmcp_stdio: McpSkillsHost, roots: dict[str, Path]
) -> None:
    check_against_disk(fastmcp_stdio, roots["shared"])
    entry = fastmcp_stdio.get_skill("skill://pdf-forms/SKILL.md")
    assert entry.name == "pdf-forms" and entry.label == "fm"


def test_host_reads_fastmcp_skills_over_http(roots: dict[str, Path]) -> None:
    port = free_port()
    argv = [PY, str(SERVERS / "fastmcp_skills.py"), str(roots["shared"]), "--http", str(port)]
    with http_server(argv, port) as url:
        with connect("fm-http", url=url, timeout=20) as conn:
            check_against_disk(McpSkillsHost(conn), roots["shared"])


def test_file_changed_between_list_and_read_is_a_mismatch(
    fastmcp_stdio: McpSkillsHost, roots: dict[str, Path]
) -> None:
    # FastMCP re-reads the folders (reload=True): the listing is honest, the file then changes.
    entry = fastmcp_stdio.find("sci-plotting")
    script = roots["shared"] / "sci-plotting" / "scripts" / "plot.py"
    before = script.read_bytes()
    script.write_bytes(b"print('changed')\n")
    try:
        with pytest.raises(McpSkillMismatchError) as err:
            fastmcp_stdio.read(entry, "scripts/plot.py")
    finally:
        script.write_bytes(before)
    text = str(err.value)
    assert "'fm'" in text and "scripts/plot.py" in text and "\n" not in text
    assert "bytes" in text or "digest" in text


# -- our server ------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_our_server_against_fastmcp_client(roots: dict[str, Path], transport: str) -> None:
    """FastMCP's skills client (not ours) lists and reads every skill of our server, over
    stdio and over streamable HTTP (``serve --http PORT``), checking every digest and size."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
    from fastmcp.skills.client import SkillsClientExtension

    args = ["-m", "skill_magics.mcp", "serve", str(roots["shared"])]

    async def run(connect_to: StdioTransport | StreamableHttpTransport) -> dict[str, Any]:
        async with Client(connect_to, extensions=[SkillsClientExtension()]) as client:
            listed = await client.list_skills()
            out = {}
            for entry in listed:
                skill = await client.read_skill(entry.uri)  # verifies every digest and size
                out[entry.frontmatter.name] = dict(skill.files)
            return out

    if transport == "stdio":
        got = asyncio.run(run(StdioTransport(command=PY, args=args)))
    else:
        port = free_port()
        with http_server([PY, *args[:3], "--http", str(port), *args[3:]], port) as url:
            got = asyncio.run(run(StreamableHttpTransport(url)))
    assert set(got) == {"pdf-forms", "sci-plotting"}
    for name, files in got.items():
        assert files == disk_files(roots["shared"] / name)


def test_our_server_ships_no_links_secrets_or_venvs(
    ours_stdio: McpSkillsHost, roots: dict[str, Path]
) -> None:
    entries = {e.name: e for e in ours_stdio.list_skills()}
    assert set(entries) == {"pdf-forms", "sci-plotting", "with-secrets"}
    paths = {f.path for f in entries["with-secrets"].files or ()}
    # What must NOT be refused: the skill itself is served, with its real files.
    assert paths == {"SKILL.md", "scripts/run.py"}
    got = {f.path: f.data for f in ours_stdio.fetch_all(entries["with-secrets"])}
    assert got["scripts/run.py"] == b"print('run')\n"
    check = {e.name: e for e in ours_stdio.list_skills() if e.name != "with-secrets"}
    for name, entry in check.items():
        assert {f.path: f.data for f in ours_stdio.fetch_all(entry)} == disk_files(
            roots["shared"] / name
        )
    # Asked directly for what it does not ship, the server says no (no link followed).
    for uri in ("skill://with-secrets/.env", "skill://with-secrets/linked.txt"):
        with pytest.raises(McpError, match="Unknown resource"):
            ours_stdio.connection.read(uri, 1 << 20)


def test_our_server_over_http(roots: dict[str, Path]) -> None:
    port = free_port()
    argv = [PY, "-m", "skill_magics.mcp", "serve", "--http", str(port), str(roots["shared"])]
    with http_server(argv, port) as url:
        with connect("ours-http", url=url, timeout=20) as conn:
            check_against_disk(McpSkillsHost(conn), roots["shared"])


def test_serve_refuses_a_missing_folder(tmp_path: Path) -> None:
    proc = subprocess.run(
        [PY, "-m", "skill_magics.mcp", "serve", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "is not a folder" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# -- hostile servers -------------------------------------------------------------------------

LIES = {
    "digest-lie": "file 'scripts/run.py': digest",
    "size-lie": "file 'scripts/run.py': 13 bytes, the listing said 14",
    "fm-differs": "file 'SKILL.md': field 'description' is \"Harmless helper.\"",
    "fm-extra": "field 'allowed-tools' is in the entry but not in SKILL.md",
    "many-files": "it lists 513 files, over the 512 limit",
    "huge": "over the 16 MiB limit",
    "dot-dot": "has a path segment '..'",
    "encoded-dot-dot": "has a path segment '..'",
    "path-like": "'/etc/passwd' is path-like",
    "file-uri": "names a local file",
    "other-skill": "'skill://demo/scripts/run.py' lies outside the skill",
    "other-host": "'https://evil.example/x.py' lies outside the skill",
    "name-mismatch": "frontmatter name 'someone-else' differs",
    "no-skill-md": "do not list its SKILL.md",
    "twice": "listed twice",
    "bad-digest-form": "not sha256:<hex>",
    "negative-size": "has size -1",
    "bool-size": "has size True",
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_lying_server_is_refused_naming_server_and_file(hostile: McpSkillsHost, lie: str) -> None:
    with pytest.raises(McpSkillMismatchError) as err:
        entry = hostile.get_skill(f"skill://{lie}/SKILL.md")
        for _ in hostile.fetch_all(entry):
            pass
    text = str(err.value)
    assert text.startswith("MCP server 'evil': ") and "\n" not in text
    assert LIES[lie] in text


def test_limits_are_checked_before_any_read(hostile: McpSkillsHost) -> None:
    before = reads(hostile)
    for lie in ("many-files", "huge", "dot-dot", "other-host"):
        with pytest.raises(McpSkillMismatchError):
            hostile.get_skill(f"skill://{lie}/SKILL.md")
    assert reads(hostile) == before


# Names the installer refuses, refused the same way (issue 39): by the listing, in one line
# naming the server and the file, before anything is read or written.
BAD_NAMES = {
    "enc-newline": r"file 'data/a\\nb.txt': it holds control, bidi or invisible characters",
    "enc-escape": r"file 'data/a\\x1b[2Kb.txt': it holds control, bidi or invisible",
    "enc-csi": r"file 'data/a\\x9bb.txt': it holds control, bidi or invisible",
    "enc-rlo": "file 'data/a⟨U+202E⟩txt.exe': it holds control, bidi or invisible",
    "lookalike-raw": "file 'scripts\u2215run.py': it holds U+2215, which looks like a path",
    "lookalike-enc": "file 'scripts\u2215run.py': it holds U+2215, which looks like a path",
    "long-name": "a part of it is longer than 255 bytes",
    "deep": "it is nested deeper than 32 folders",
    "not-utf8": "percent-encodes bytes that are not UTF-8",
}


@pytest.mark.parametrize("name", sorted(BAD_NAMES))
def test_file_names_the_installer_refuses_are_refused_before_any_read(
    hostile: McpSkillsHost, name: str
) -> None:
    before = reads(hostile)
    with pytest.raises(McpSkillMismatchError) as err:
        hostile.get_skill(f"skill://{name}/SKILL.md")
    text = str(err.value)
    assert text.startswith(f"MCP server 'evil': skill '{name}': ") and "\n" not in text
    assert BAD_NAMES[name] in text and len(text) < 400
    assert reads(hostile) == before


def test_the_cache_holds_names_to_the_rule_before_writing(
    hostile: McpSkillsHost, tmp_path: Path
) -> None:
    """An entry made by hand (not parsed from a listing) with a 300-byte name or 900 folders:
    the cache refuses it in one line, not with OSError, and writes nothing."""
    (entry,) = hostile.list_skills()
    fetched = list(hostile.fetch_all(entry))
    for path in ("x" * 300 + ".txt", "d/" * 900 + "f.txt"):
        extra = type(entry.files[0])(entry.prefix + path, path, sha256_digest(b""), 0)
        bad = SkillEntry(
            entry.label,
            entry.uri,
            entry.name,
            entry.frontmatter,
            (*entry.files, extra),
            entry.prefix,
        )
        got = [*fetched, type(fetched[0])(path, extra.uri, b"", True)]
        with pytest.raises(McpCacheError, match=r"^MCP server 'evil': skill 'demo', file '"):
            McpCache(tmp_path / "cache", discovery_dirs=[]).store(bad, "s", got)
        assert not (tmp_path / "cache").exists()


def test_ordinary_non_ascii_file_names_are_not_refused(
    hostile: McpSkillsHost, tmp_path: Path
) -> None:
    entry = hostile.get_skill("skill://non-ascii-ok/SKILL.md")
    assert {f.path for f in entry.files or ()} >= {"data/données.csv", "data/\u8868.csv"}
    cached = fetch_into(McpCache(tmp_path / "cache", discovery_dirs=[]), hostile, entry)
    assert (cached.base_dir / "data" / "données.csv").read_bytes() == b"a,b\n1,2\n"
    assert (cached.base_dir / "data" / "\u8868.csv").read_bytes() == b"x\n"


def test_two_skills_of_one_server_with_one_name_are_refused(
    hostile: McpSkillsHost, mode: object
) -> None:
    mode("same-name")  # type: ignore[operator]
    with pytest.raises(McpSkillMismatchError) as err:
        hostile.list_skills()
    text = str(err.value)
    assert text.startswith("MCP server 'evil': skills/list: two skills are named 'demo'")
    assert "skill://team/demo/SKILL.md" in text and "\n" not in text


def test_reads_are_lazy_and_unlisted_files_never_asked_for(hostile: McpSkillsHost) -> None:
    before = reads(hostile)
    (entry,) = hostile.list_skills()
    assert reads(hostile) == before  # listing fetched nothing
    hostile.read(entry, "scripts/run.py")
    assert reads(hostile) == [*before, "skill://demo/scripts/run.py"]
    with pytest.raises(McpSkillMismatchError, match="'scripts/secret.py': not in the skill's"):
        hostile.read(entry, "scripts/secret.py")
    assert reads(hostile) == [*before, "skill://demo/scripts/run.py"]


def test_an_entry_from_another_server_is_never_read_here(hostile: McpSkillsHost) -> None:
    (entry,) = hostile.list_skills()
    foreign = SkillEntry("other", entry.uri, entry.name, entry.frontmatter, entry.files, "x")
    with pytest.raises(McpError, match="listed by server 'other'"):
        hostile.read(foreign, "SKILL.md")


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        ("read-changed", "skill 'demo', file 'SKILL.md': sent more than the 73 bytes listed"),
        ("read-other-uri", "answered with the content of skill://demo/SKILL.mdx"),
        ("read-two", "answered 2 content blocks, not 1"),
    ],
)
def test_read_lies(hostile: McpSkillsHost, mode: object, name: str, expect: str) -> None:
    (entry,) = hostile.list_skills()
    mode(name)  # type: ignore[operator]
    with pytest.raises(McpSkillMismatchError) as err:
        for _ in hostile.fetch_all(entry):
            pass
    assert expect in str(err.value) and "'evil'" in str(err.value)


def test_a_blob_read_verifies_too(hostile: McpSkillsHost, mode: object) -> None:
    (entry,) = hostile.list_skills()
    mode("read-blob")  # type: ignore[operator]
    files = {f.path: f for f in hostile.fetch_all(entry)}
    assert files["scripts/run.py"].data == b"print('run')\n" and files["SKILL.md"].verified


@pytest.mark.parametrize(
    ("name", "expect"),
    [
        ("pages-forever", "pages on past 100 pages"),
        ("cursor-repeat", "sent the cursor 'same' again"),
        ("duplicate", "is listed twice"),
        ("bad-entry", "skill 'dot-dot': URI 'skill://dot-dot/scripts/../../etc/passwd'"),
        ("not-a-list", "has no 'skills' list"),
    ],
)
def test_listing_lies(hostile: McpSkillsHost, mode: object, name: str, expect: str) -> None:
    mode(name)  # type: ignore[operator]
    with pytest.raises(McpSkillMismatchError) as err:
        hostile.list_skills()
    assert expect in str(err.value) and str(err.value).startswith("MCP server 'evil'")


def test_honest_paging_is_followed(hostile: McpSkillsHost, mode: object) -> None:
    mode("paged")  # type: ignore[operator]
    names = [e.name for e in hostile.list_skills()]
    assert names == ["alpha", "beta", "gamma", "delta"]


def test_skills_get_answering_another_skill_is_refused(
    hostile: McpSkillsHost, mode: object
) -> None:
    mode("get-other")  # type: ignore[operator]
    with pytest.raises(McpSkillMismatchError, match="answered with skill 'skill://demo/SKILL.md'"):
        hostile.get_skill("skill://alpha/SKILL.md")


def test_dynamic_skill_is_never_content_bound(hostile: McpSkillsHost) -> None:
    entry = hostile.get_skill("skill://dynamic-one/SKILL.md")
    assert entry.dynamic and binding(entry) is None
    got = hostile.read(entry, "scripts/run.py")  # readable, under its own prefix
    assert got.data == b"print('run')\n" and not got.verified
    with pytest.raises(McpError, match="is dynamic"):
        list(hostile.fetch_all(entry))
    with pytest.raises(McpSkillMismatchError, match="path segment '..'"):
        hostile.read(entry, "../demo/SKILL.md")


def test_a_hanging_call_is_a_one_line_timeout(hostile: McpSkillsHost, mode: object) -> None:
    (entry,) = hostile.list_skills()
    mode("hang-read")  # type: ignore[operator]
    started = time.monotonic()
    with pytest.raises(McpError) as err:
        hostile.read(entry, "scripts/run.py")
    assert time.monotonic() - started < 15
    assert str(err.value).startswith("MCP server 'evil' (") and "within 4 s" in str(err.value)
    mode("hang")  # type: ignore[operator]
    with pytest.raises(
        McpError, match=r"^MCP server 'evil' \(.*did not answer skills/list within 4 s; its "
    ):
        hostile.list_skills()
    mode("honest")  # type: ignore[operator]
    assert hostile.read(entry, "scripts/run.py").verified  # the next call connects again


def gone(pid: int, within: float = 30.0) -> bool:
    """Has ``pid`` exited (a zombie counts: it runs nothing) within ``within`` seconds?"""
    import psutil

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def test_a_timed_out_call_kills_the_server_and_the_next_call_connects_again(
    hostile: McpSkillsHost, mode: object
) -> None:
    (entry,) = hostile.list_skills()
    server, child = hostile.connection.server_pid, hostile.connection.request("test/child", {})
    mode("hang-read")  # type: ignore[operator]
    with pytest.raises(McpError, match="did not answer .* within 4 s; its connection was closed"):
        hostile.read(entry, "scripts/run.py")
    assert server is not None and gone(server) and gone(child["pid"])
    assert hostile.read(entry, "scripts/run.py").verified
    assert hostile.connection.server_pid not in (None, server)


def test_a_huge_answer_is_refused_by_its_size_and_leaves_nothing_busy(
    hostile: McpSkillsHost, mode: object
) -> None:
    """Issue 39: one `resources/read` answered with a 40 MB line was reported as "did not
    answer within 4 s", and then the SDK's reader kept a core busy (it splits the growing
    buffer for every 64 KiB), the connection dead. Now: refused by its size, in one line;
    the server and its child killed; nothing left busy; the next call connects again."""
    (entry,) = hostile.list_skills()
    server, child = hostile.connection.server_pid, hostile.connection.request("test/child", {})
    mode("huge-read")  # type: ignore[operator]
    with pytest.raises(McpError) as err:
        hostile.read(entry, "scripts/run.py")
    text = str(err.value)
    assert text.startswith("MCP server 'evil' (") and "\n" not in text
    assert "sent 40.0 MB in one message, more than the 34.6 MB allowed" in text, text
    assert "did not answer" not in text and "its connection was closed" in text
    assert server is not None and gone(server) and gone(child["pid"])
    # Idle now: this process (the kernel's side of the connection) uses little CPU.
    cpu = time.process_time()
    time.sleep(2)
    assert time.process_time() - cpu < 0.3  # the SDK reader took 0.5-2 s here (load)
    assert hostile.read(entry, "scripts/run.py").verified  # connected again


def test_a_big_answer_under_the_bound_is_read_whole(hostile: McpSkillsHost) -> None:
    """What must NOT be refused: a 6.5 MB file, its answer read over ~100 reads of the pipe."""
    server = hostile.connection.server_pid
    entry = hostile.get_skill("skill://big-ok/SKILL.md")
    got = hostile.read(entry, "data/big.txt")
    assert got.verified and got.data == b"line of text\n" * 500_000
    assert hostile.connection.server_pid == server  # the same connection


def test_silent_and_garbage_servers_fail_in_one_line(capfd: pytest.CaptureFixture[str]) -> None:
    def attempt(script: str, label: str) -> str:
        with pytest.raises(McpError) as err:
            connect(label, command=[PY, str(SERVERS / script)], timeout=2, connect_timeout=2)
        return str(err.value)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # both at once: CI time
        texts = dict(
            zip(
                ("silent", "garbage"),
                pool.map(attempt, ("silent.py", "garbage.py"), ("silent", "garbage")),
                strict=True,
            )
        )
    assert time.monotonic() - started < 20
    for label, text in texts.items():
        assert text.startswith(f"MCP server '{label}' (") and "\n" not in text
        assert "did not answer the handshake within 2 s" in text
        assert ("not JSON-RPC" in text) == (label == "garbage")
    # The SDK's tracebacks for each garbage line stay off stderr (a notebook's output).
    assert "Traceback" not in capfd.readouterr().err


def test_a_command_that_is_no_mcp_server_is_one_whole_line() -> None:
    """Issue 44 item 8: `%skills add mcp X -- /bin/echo hello` quoted pydantic's validation
    error cut mid-word; the line says what the command printed, and words stay whole."""
    noisy = [PY, "-c", "print('hello ' * 40)", "--an-argument-long-enough-to-be-shortened"]
    with pytest.raises(McpError) as caught:
        SkillManager([]).add_mcp_server("echoes", command=noisy, connect_timeout=30)
    text = str(caught.value)
    assert "\n" not in text and "validation error" not in text
    assert (
        "(it printed 'hello hello hello" in text and " …' on stdout, which is not JSON-RPC" in text
    )
    assert "is the command an MCP server?" in text
    origin = text.split("MCP server 'echoes' (", 1)[1].split(") could not", 1)[0]
    assert origin.endswith(" ...") and origin[:-4] in " ".join(noisy)


def test_a_server_without_skills_and_one_that_cannot_start() -> None:
    argv = [PY, str(SERVERS / "hostile.py"), "--no-skills"]
    with pytest.raises(McpError, match="does not offer skills"):
        connect("plain", command=argv, timeout=5)
    # One that dies while in use: the next call says so in one line, promptly.
    with connect("dying", command=[PY, str(SERVERS / "hostile.py")], timeout=5) as conn:
        conn.request("test/exit", {})
        time.sleep(0.5)
        started = time.monotonic()
        with pytest.raises(McpError) as err:
            McpSkillsHost(conn).list_skills()
        assert time.monotonic() - started < 8
        assert str(err.value).startswith("MCP server 'dying' (") and "\n" not in str(err.value)
        assert "failed on skills/list: Connection closed" in str(err.value)
    with pytest.raises(McpError, match="MCP server 'gone'.*could not be connected"):
        connect("gone", command=["/nonexistent/skill-magics-server"], timeout=5)


# -- labels, specs, binding ------------------------------------------------------------------


def test_labels_are_checked_like_skill_names() -> None:
    for good in ("docs", "team-tools", "a1"):
        assert check_label(good) == good
    for bad in ("", "Docs", "a/b", "../x", "a--b", "-a", "x" * 65, "a b"):
        with pytest.raises(McpError, match="label"):
            check_label(bad)
    with pytest.raises(McpError, match="either command"):
        ServerSpec("x")
    with pytest.raises(McpError, match="either command"):
        ServerSpec("x", command=("a",), url="http://h")
    with pytest.raises(McpError, match="list of arguments"):
        ServerSpec("x", command="python -m x")  # type: ignore[arg-type]
    with pytest.raises(McpError, match="http"):
        ServerSpec("x", url="ftp://h")
    with pytest.raises(McpError, match="timeout"):
        ServerSpec("x", url="http://h", timeout=0)
    with pytest.raises(McpError, match="env= is for a server we start"):
        ServerSpec("x", url="http://h", env={"A": "1"})
    # What must NOT be refused: each form, as documented.
    assert ServerSpec("x", command=["python", "-m", "srv"], env={"A": "1"}).origin == (
        "python -m srv"
    )
    assert ServerSpec("x", url="https://h/mcp", timeout=600).origin == "https://h/mcp"


def test_binding_covers_the_full_set_of_uri_and_digest(fastmcp_stdio: McpSkillsHost) -> None:
    entry = fastmcp_stdio.find("pdf-forms")
    value = binding(entry)
    assert value is not None and value.startswith("mcp-sha256:")
    files = list(entry.files or ())
    reordered = SkillEntry(
        entry.label, entry.uri, entry.name, entry.frontmatter, tuple(reversed(files)), entry.prefix
    )
    assert binding(reordered) == value
    for i, f in enumerate(files):
        changed = files.copy()
        changed[i] = type(f)(f.uri, f.path, "sha256:" + "0" * 64, f.size)
        other = SkillEntry(
            entry.label, entry.uri, entry.name, entry.frontmatter, tuple(changed), entry.prefix
        )
        assert binding(other) != value
    fewer = SkillEntry(
        entry.label, entry.uri, entry.name, entry.frontmatter, tuple(files[:-1]), entry.prefix
    )
    assert binding(fewer) != value


# -- the host-only cache ---------------------------------------------------------------------


def test_cache_stores_verified_files_host_only_and_remembers_the_origin(
    fastmcp_stdio: McpSkillsHost, roots: dict[str, Path], tmp_path: Path
) -> None:
    entry = fastmcp_stdio.find("sci-plotting")
    # What must NOT be refused: a cache beside the skill folders, not in them.
    cache = McpCache(tmp_path / "cache", discovery_dirs=[roots["shared"], tmp_path / "skills"])
    cached = cache.store(entry, "fastmcp_skills.py", list(fastmcp_stdio.fetch_all(entry)))
    assert stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700
    assert disk_files(cached.base_dir) == disk_files(roots["shared"] / "sci-plotting")
    for p in cached.base_dir.rglob("*"):
        assert stat.S_IMODE(p.stat().st_mode) & 0o077 == 0
    # A restart: a new cache object finds it, still an MCP skill, with its binding.
    (again,) = McpCache(tmp_path / "cache", discovery_dirs=[]).cached()
    assert again.origin == "mcp:fm" and again.binding == binding(entry)
    assert again.uri == "skill://sci-plotting/SKILL.md"
    copy = tmp_path / "cache" / "fm" / "sci-plotting" / copy_key(binding(entry))
    assert cached.base_dir == copy / "files"  # one folder per digest set
    origin = json.loads((copy / "origin.json").read_text())
    assert origin["origin"] == "mcp" and origin["server"] == "fastmcp_skills.py"
    # Re-hashed on use: a changed byte, then a planted file, are refused.
    plot = cached.base_dir / "scripts" / "plot.py"
    plot.write_bytes(b"print('evil')\n")
    with pytest.raises(McpCacheError, match=r"fm/sci-plotting, file 'scripts/plot.py': its bytes"):
        cache.verify("fm", "sci-plotting")
    assert McpCache(tmp_path / "cache", discovery_dirs=[]).cached() == []
    again = fetch_into(cache, fastmcp_stdio, entry)  # fetched again: replaced whole
    assert again.server.endswith("fastmcp_skills.py " + str(roots["shared"]))
    assert cache.verify("fm", "sci-plotting").binding == binding(entry)
    (cached.base_dir / "scripts" / "helper.py").write_text("import os\n")
    with pytest.raises(McpCacheError, match="'scripts/helper.py': not in what was verified"):
        cache.verify("fm", "sci-plotting")


def test_cache_refuses_unsafe_roots_and_unverified_files(
    hostile: McpSkillsHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (entry,) = hostile.list_skills()
    fetched = list(hostile.fetch_all(entry))
    skills = tmp_path / "skills"
    skills.mkdir()
    for root in (skills / "cache", tmp_path):  # inside a skill folder, or holding one
        with pytest.raises(McpCacheError, match="overlaps the skill folder"):
            McpCache(root, discovery_dirs=[skills]).store(entry, "s", fetched)
    assert not (skills / "cache").exists()
    monkeypatch.setenv("SKILL_MAGICS_PATH", str(skills))  # the default discovery paths count
    with pytest.raises(McpCacheError, match="overlaps the skill folder"):
        McpCache(skills / "cache").store(entry, "s", fetched)
    open_root = tmp_path / "open"
    open_root.mkdir(mode=0o777)
    open_root.chmod(0o777)
    with pytest.raises(McpCacheError, match="not ours alone"):
        McpCache(open_root, discovery_dirs=[]).store(entry, "s", fetched)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    with pytest.raises(McpCacheError, match="a link"):
        McpCache(link, discovery_dirs=[]).store(entry, "s", fetched)
    assert list((tmp_path / "elsewhere").iterdir()) == []
    lied = [type(f)(f.path, f.uri, f.data + b"x", f.verified) for f in fetched]
    with pytest.raises(McpCacheError, match="not fetched and verified"):
        McpCache(tmp_path / "c2", discovery_dirs=[]).store(entry, "s", lied)
    with pytest.raises(McpCacheError, match="not fetched and verified"):
        McpCache(tmp_path / "c2", discovery_dirs=[]).store(entry, "s", fetched[:1])
    assert not (tmp_path / "c2" / "evil" / "demo").exists()  # nothing half-written


def test_cache_write_never_follows_a_planted_link(hostile: McpSkillsHost, tmp_path: Path) -> None:
    (entry,) = hostile.list_skills()
    fetched = list(hostile.fetch_all(entry))
    cache = McpCache(tmp_path / "cache", discovery_dirs=[])
    cache.store(entry, "s", fetched)
    target = tmp_path / "victim"
    target.mkdir()
    # A link where the skill's folders were (as if planted): never written through.
    import shutil

    for skill in (
        tmp_path / "cache" / "evil" / "demo" / copy_key(binding(entry)),  # the copy's
        tmp_path / "cache" / "evil" / "demo",  # the skill's
    ):
        shutil.rmtree(skill)
        skill.symlink_to(target)
        try:
            cache.store(entry, "s", fetched)
        except McpCacheError:  # refused is fine too; writing through the link is not
            skill.unlink()
            cache.store(entry, "s", fetched)
        assert list(target.iterdir()) == []
        assert not skill.is_symlink() and cache.verify("evil", "demo").name == "demo"
        assert [p.name for p in skill.parent.iterdir() if p.name.startswith(".")] == []
    # A verified copy reached through a link is not the cache's: never read through it.
    label = tmp_path / "cache" / "evil"
    label.rename(tmp_path / "moved")
    label.symlink_to(tmp_path / "moved")
    with pytest.raises(McpCacheError, match="evil/demo is not cached"):
        cache.verify("evil", "demo")
    files = tmp_path / "moved" / "demo" / copy_key(binding(entry)) / "files"
    files.rename(tmp_path / "files-elsewhere")
    files.symlink_to(tmp_path / "files-elsewhere")
    label.unlink()
    (tmp_path / "moved").rename(label)
    with pytest.raises(McpCacheError, match="evil/demo has no files folder"):
        cache.verify("evil", "demo")


# -- the extra stays optional ----------------------------------------------------------------


def test_importing_the_package_does_not_import_the_sdk() -> None:
    code = (
        "import sys, skill_magics, skill_magics.core.manager, skill_magics.core.mcp.host, "
        "skill_magics.core.mcp.cache, skill_magics.core.mcp.server, skill_magics.mcp\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', "
        "'fastmcp', 'httpx', 'anyio'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout


# -- the manager and the notebook ------------------------------------------------------------


def test_python_dash_m_skill_magics_mcp_runs_with_the_kernels_python(
    ipython_shell: object,
    roots: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/mcp.md's `-- python -m skill_magics.mcp serve DIR` (issue 44 item 5): the
    `python` PATH finds need not have the package or the SDK (here: the base interpreter,
    without the venv's packages); our own server runs with the kernel's interpreter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    base = getattr(sys, "_base_executable", "") or shutil.which("python3") or ""
    (bin_dir / "python").symlink_to(base)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    probe = subprocess.run(["python", "-c", "import mcp"], capture_output=True, timeout=60)
    assert probe.returncode != 0, "the PATH python must lack the MCP SDK for this test"
    shell = ipython_shell(tmp_path / "skills")  # type: ignore[operator]
    added = shell.run_cell(
        f"%skills add mcp team -- python -m skill_magics.mcp serve {roots['shared']}"
    )
    assert added.error_in_exec is None, added.error_in_exec
    # Any other command stays as written (not the kernel's interpreter by surprise).
    from skill_magics.notebook.cmd._mcp import our_server

    assert our_server(["python", "server.py"]) == ["python", "server.py"]
    assert our_server(["uvx", "some-server"]) == ["uvx", "some-server"]
    assert shell.run_cell("%skills remove mcp team").error_in_exec is None


def test_skills_add_mcp_magic_lists_them_with_their_origin(
    ipython_shell: object,
    roots: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    skills = tmp_path / "skills"
    _write(skills / "local-one", {"SKILL.md": "---\nname: local-one\ndescription: Local.\n---\n"})
    shell = ipython_shell(skills)  # type: ignore[operator]
    added = shell.run_cell(
        f"%skills add mcp team -- {PY} -m skill_magics.mcp serve {roots['shared']}"
    )
    assert added.error_in_exec is None
    table = shell.run_cell("%skills").result
    text, page = repr(table), table._repr_html_()
    assert "local-one" in text and "team/pdf-forms" in text and "team/sci-plotting" in text
    assert (
        re.search(r"mcp: team\s", text)
        and f"MCP server 'team': {PY} -m skill_magics.mcp serve " in text
    )
    assert "team/pdf-forms" in page and "skill-magics-mcp-skills" in page
    for line, expect in (
        ("%skills add mcp team -- x", "already in use (" + PY),
        ("%skills add mcp team -- x", "remove it first (%skills remove mcp team)"),
        ("%skills add mcp Bad -- x", "label 'Bad' cannot be used"),
        ("%skills add mcp other nothing", "Usage: %skills add mcp LABEL"),
        ("%skills add mcp other --", "Usage: %skills add mcp LABEL"),
        ("%skills remove mcp nobody", "No MCP server is labelled 'nobody'"),
    ):
        error = shell.run_cell(line).error_in_exec
        assert error is not None and expect in str(error), (line, error)
    shown = shell.run_cell("%skills show team/pdf-forms").result
    text = repr(shown)
    assert "team/pdf-forms: from MCP server 'team'" in text and "# PDF forms" in text
    assert "6 files" in text and "LICENSE.txt" in text and "mcp-sha256:" in text
    assert "# PDF forms" in shown._repr_html_()
    # Changed on the server since %skills listed it: `show` lists it again and shows the
    # change, verified against the new listing (a file changed between a listing and its
    # read is the mismatch test_file_changed_between_list_and_read_is_a_mismatch shows).
    skill_md = roots["shared"] / "pdf-forms" / "SKILL.md"
    before = skill_md.read_bytes()
    skill_md.write_bytes(before.replace(b"# PDF forms", b"# PDF forms, changed"))
    try:
        shown = shell.run_cell("%skills show team/pdf-forms").result
    finally:
        skill_md.write_bytes(before)
    assert "# PDF forms, changed" in repr(shown)
    error = shell.run_cell("%skills show team/nope").error_in_exec
    assert error is not None and "lists no skill 'nope'" in str(error)
    # The same through the manager (what the magic calls): never local skills, one label once.
    from skill_magics.core.mcp.servers import servers_of

    manager = get_magics(shell).manager
    server = servers_of(manager).get("team")
    assert server is not None
    assert [e.qualified_name for e in server.skills] == ["team/pdf-forms", "team/sci-plotting"]
    assert [m.name for m in manager.local_skills()] == ["local-one"]
    # every usable skill (issue 44): the server's too, under their LABEL/NAME
    assert [m.name for m in manager.list_skills()] == [
        "local-one",
        "team/pdf-forms",
        "team/sci-plotting",
    ]
    with pytest.raises(McpError, match=r"label 'team' is already in use .*remove_mcp_server"):
        manager.add_mcp_server("team", url="http://127.0.0.1:9/mcp")
    assert shell.run_cell("%skills remove mcp team").error_in_exec is None
    assert "team/" not in repr(shell.run_cell("%skills").result)
    assert not manager.remove_mcp_server("team")
    with pytest.raises(McpError, match="MCP server 'team' .* is not connected"):
        server.connection.request("skills/list", {})  # closed: its server was stopped
    # What must NOT be taken for an MCP server: a folder called mcp, added as before.
    _write(
        tmp_path / "mcp" / "from-folder",
        {"SKILL.md": "---\nname: from-folder\ndescription: In ./mcp.\n---\n"},
    )
    monkeypatch.chdir(tmp_path)
    assert shell.run_cell("%skills add mcp").error_in_exec is None
    assert "from-folder" in repr(shell.run_cell("%skills").result)


@pytest.mark.parametrize(
    ("listed", "fetched", "same"),
    [
        ({"v": 1}, {"v": 1.0}, True),  # a JavaScript server's JSON
        ({"flag": "yes"}, {"flag": True}, True),  # YAML 1.2 against 1.1
        ({"d": "2024-01-01T00:00:00.000Z"}, {"d": "2024-01-01"}, True),
        ({"tags": ["a", "b"]}, {"tags": ["a", "b"]}, True),
        ({"v": 1}, {"v": "1"}, False),
        ({"flag": "maybe"}, {"flag": True}, False),
        ({"d": "2024-01-01T10:00:00Z"}, {"d": "2024-01-01"}, False),
        ({"tags": ["a"]}, {"tags": ["a", "b"]}, False),
        ({"m": {"a": 1}}, {"m": {"a": 1, "b": 2}}, False),
        ({"allowed-tools": "Bash"}, {}, False),
    ],
)
def test_frontmatter_comparison(listed: dict, fetched: dict, same: bool) -> None:
    from skill_magics.core.mcp.wire import frontmatter_difference

    assert (frontmatter_difference(listed, fetched) is None) is same
