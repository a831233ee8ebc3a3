"""The Skills side panel in a real JupyterLab, clicked in a real headless Chromium.

The notebook blocks its kernel on each approval (``%autoawait off``); every answer is given
in the side panel's tab, never in the cell:

    cell 1  %%skillrun touch_marker  -> "Yes once" in the side panel; the cell's own panel
            says it was decided in the side panel
    cell 2  %%skillrun touch_marker  -> "Yes in session" in the side panel
    cell 3  %%skillrun touch_marker  -> covered by the grant: runs without a question
    cell 4  waits (the kernel busy) until the grant is revoked: "Revoke" in the side panel
    cell 5  %%skillrun touch_marker  -> asks again; "No" in the side panel: nothing ran
    cell 6  prints the statuses

A second notebook on a second kernel sees none of the first one's questions, the REST
handlers refuse a request without the server's credentials or from a page on another
origin, and a question answered in the cell leaves the side panel. Marker files prove what ran.
Recent runs show a run's result tabs on click, a script's HTML output as text.
The side panel needs the prebuilt frontend (``make labextension``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from conftest import REPO_ROOT

SKILL = "demo-behaviours.touch_marker"
SETUP = "%load_ext skill_magics\n%skills add --examples\n%autoawait off"


def _notebook(markers: Path) -> nbformat.NotebookNode:
    def run(var: str, marker: str) -> str:
        return f"%%skillrun {SKILL} -o {var}\n" + json.dumps({"path": str(markers / marker)})

    wait_revoked = (
        "import time\n"
        "from skill_magics.notebook.extension import get_magics\n"
        "store = get_magics(get_ipython()).manager.approvals\n"
        "while store.approvals():\n"
        "    time.sleep(0.2)\n"
        'print("REVOKED")'
    )
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.cells = [
        nbformat.v4.new_code_cell(SETUP),
        nbformat.v4.new_code_cell(run("r1", "once")),
        nbformat.v4.new_code_cell(run("r2", "session")),
        nbformat.v4.new_code_cell(run("r3", "covered")),
        nbformat.v4.new_code_cell(wait_revoked),
        nbformat.v4.new_code_cell(run("r5", "declined")),
        nbformat.v4.new_code_cell('print("STATUSES", r1.status, r2.status, r3.status, r5.status)'),
    ]
    return nb


def _plain(cells: list[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


@pytest.fixture
def markers() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="side-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(autouse=True)
def _built() -> None:
    if not (REPO_ROOT / "skill_magics" / "labextension" / "package.json").is_file():
        pytest.fail("the Skills side panel is not built: run `make labextension` first")


class Side:
    """The Skills tab of one browser page."""

    def __init__(self, lab) -> None:
        self.lab = lab
        self.page = lab.page
        self.root = self.page.locator("#skill-magics-sidepanel")

    def open(self) -> None:
        tab = self.page.locator(".jp-SideBar .lm-TabBar-tab[title='Skills']")
        tab.wait_for(state="visible", timeout=60_000)
        if not self.root.is_visible():
            tab.click()
        self.root.wait_for(state="visible", timeout=30_000)

    def section(self, name: str):
        return self.root.get_by_role("region", name=name)

    def waiting(self):
        return self.section("Waiting for you").get_by_role("group")

    def answer(self, label: str) -> None:
        question = self.waiting().first
        question.wait_for(state="visible", timeout=120_000)
        question.get_by_role("button", name=f"{label} for demo-behaviours").click()


def _wait_text(locator, needle: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    text = locator.inner_text()
    while needle not in text and time.monotonic() < deadline:
        time.sleep(0.2)
        text = locator.inner_text()
    assert needle in text, f"{needle!r} not in {text!r}"
    return text


def test_side_panel_decides_blocked_cells(lab, markers: Path) -> None:
    name = lab.add_notebook(_notebook(markers), "side.ipynb")
    lab.open_notebook(name)
    side = Side(lab)
    side.open()
    lab.run_all()

    # The tab lists the example skills of this kernel.
    lab.wait_cell_done(0, timeout=120)
    side.root.get_by_role("button", name="Refresh the skills").click()
    skills = side.section("Skills")
    _wait_text(skills, "csv-profiler")
    assert "demo-behaviours" in skills.inner_text()
    side.root.get_by_role("searchbox", name="Search skills").fill("csv")
    _wait_text(skills, "csv-profiler")
    assert "demo-behaviours" not in skills.inner_text()
    side.root.get_by_role("searchbox", name="Search skills").fill("")

    # -- Yes once, in the side panel, while cell 1 blocks its kernel ---------------------------
    question = side.waiting().first
    question.wait_for(state="visible", timeout=120_000)
    assert "touch_marker.py" in question.inner_text(), "the same content as the cell's panel"
    assert lab.is_running(1) and not (markers / "once").exists(), "nothing runs before it"
    lab.screenshot("side-panel-waiting")
    side.answer("Yes once")
    lab.wait_cell_done(1, timeout=120)
    assert (markers / "once").exists()
    text = lab.wait_output(1, "decided in the side panel")
    assert "decided in the side panel" in text, f"the cell's panel says who decided: {text!r}"

    # -- Yes in session, then the grant is listed and covers the next run ----------------------
    side.answer("Yes in session")
    lab.wait_cell_done(3, timeout=120)
    assert (markers / "session").exists() and (markers / "covered").exists()
    grants = side.section("Allowed this session")
    _wait_text(grants, "demo-behaviours")
    lab.screenshot("side-panel-allowed")
    runs = side.section("Recent runs")
    _wait_text(runs, "touch_marker.py")
    runs.locator("summary").first.click()  # a run's record opens on click
    _wait_text(runs, "arguments:")

    # -- Revoke (cell 4 waits for it, the kernel busy), then the next run asks: No -------------
    assert lab.is_running(4)
    grants.get_by_role("button", name="Revoke demo-behaviours").click()
    lab.wait_cell_done(4, timeout=60)
    assert "REVOKED" in lab.output_text(4)
    side.answer("No")
    lab.wait_cell_done(6, timeout=120)
    assert "STATUSES completed completed completed declined" in lab.output_text(6)
    assert not (markers / "declined").exists(), "No means the script never ran"
    _wait_text(side.section("Waiting for you"), "Nothing waits.")

    # -- Install through the panel: the gate asks in the panel, Yes once installs ---------------
    source = markers / "panel-skill"
    source.mkdir()
    (source / "SKILL.md").write_text(
        "---\nname: panel-skill\ndescription: Installed from the Skills tab.\n---\n# Hi\n"
    )
    install = side.section("Install")
    install.get_by_role("textbox", name="Install source").fill(str(source))
    install.get_by_role("button", name="Install").click()
    question = side.waiting().first
    question.wait_for(state="visible", timeout=120_000)
    assert "panel-skill" in question.inner_text()
    lab.screenshot("side-panel-install")
    question.get_by_role("button", name="Yes once for panel-skill").click()
    _wait_text(install, "done")
    side.root.get_by_role("button", name="Refresh the skills").click()
    _wait_text(skills, "Installed from the Skills tab.")


def test_two_kernels_see_only_their_own(lab, browser_context, markers: Path) -> None:
    from conftest import LabPage

    first = lab.add_notebook(
        _plain([SETUP, f"%%skillrun {SKILL}\n" + json.dumps({"path": str(markers / "a")})]),
        "first.ipynb",
    )
    second = lab.add_notebook(_plain([SETUP]), "second.ipynb")
    lab.open_notebook(first)
    side_a = Side(lab)
    side_a.open()
    lab.run_all()
    lab.wait_cell_done(0, timeout=180)  # the kernel and the examples first (slow when busy)
    side_a.waiting().first.wait_for(state="visible", timeout=180_000)

    other = LabPage(browser_context.new_page(), lab.server, lab.shots_dir)
    other.page.set_default_timeout(60_000)
    try:
        other.open_notebook(second)
        side_b = Side(other)
        side_b.open()
        other.run_all()
        other.wait_cell_done(0, timeout=120)
        _wait_text(side_b.section("Waiting for you"), "Nothing waits.")
        assert side_b.waiting().count() == 0, "B's panel shows none of A's questions"
        other.screenshot("side-panel-other-kernel")

        # The REST layer: B's kernel id with A's question id decides nothing; no
        # credentials, nothing at all.
        server = lab.server
        sessions = server.api("GET", "api/sessions")
        kernels = {s["notebook"]["path"]: s["kernel"]["id"] for s in sessions}
        state = server.api("GET", f"skill-magics/kernels/{kernels[first]}/state")
        (question,) = state["waiting"]
        with pytest.raises(urllib.error.HTTPError) as refused:
            server.api(
                "POST",
                f"skill-magics/kernels/{kernels[second]}/decide",
                {"id": question["id"], "choice": "yes_once"},
            )
        assert refused.value.code == 409
        bare = urllib.request.Request(
            server.url + f"skill-magics/kernels/{kernels[first]}/decide",
            data=json.dumps({"id": question["id"], "choice": "yes_once"}).encode(),
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as anonymous:
            urllib.request.urlopen(bare, timeout=30)
        assert anonymous.value.code in (401, 403)
        # A page on another origin, in the same browser (JupyterLab's cookie set), posts an
        # answer: the browser sends it, the server refuses it (no XSRF token; no cookie
        # across sites); the question still waits.
        _foreign_post(
            browser_context,
            server.url + f"skill-magics/kernels/{kernels[first]}/decide",
            {"id": question["id"], "choice": "yes_once"},
        )
        deadline = time.monotonic() + 30
        while "403 POST /skill-magics/kernels/" not in server.log_tail(200):
            assert time.monotonic() < deadline, "the foreign page's POST never reached the server"
            time.sleep(0.2)
        state = server.api("GET", f"skill-magics/kernels/{kernels[first]}/state")
        assert [q["id"] for q in state["waiting"]] == [question["id"]]
        assert lab.is_running(1) and not (markers / "a").exists()
    finally:
        other.page.close()
    # Decided in the cell itself: the question leaves A's side panel.
    lab.button(1, "Yes once").click()
    lab.wait_cell_done(1, timeout=120)
    assert (markers / "a").exists()
    _wait_text(side_a.section("Waiting for you"), "Nothing waits.")


HOSTILE = """\
import sys
print('<img src=x onerror="document.body.dataset.pwned = 1"> RESULT-STDOUT')
print("<b>RESULT-STDERR</b>", file=sys.stderr)
sys.exit(3)
"""


def test_recent_runs_show_a_runs_result_tabs(lab, markers: Path) -> None:
    """Recent runs: "Result" on a run's row shows the cell's tabs (stdout, stderr, exit code,
    signal, timing) in the side panel, as text: a script's HTML is never markup there."""
    skill = markers / "skills" / "hostile-output"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: hostile-output\ndescription: Prints HTML and fails.\n---\n"
    )
    (skill / "scripts" / "shout.py").write_text(HOSTILE)
    name = lab.add_notebook(
        _plain(
            [
                SETUP,
                f"%skills add {skill.parent}\n"
                "%config SkillMagics.auto_approve = ['hostile-output']",
                "%%skillrun hostile-output.shout -o shout\n{}",
                'print("EXIT", shout.exit_code)',
            ]
        ),
        "results.ipynb",
    )
    lab.open_notebook(name)
    side = Side(lab)
    side.open()
    lab.run_all()
    lab.wait_cell_done(3, timeout=180)
    assert "EXIT 3" in lab.output_text(3)

    runs = side.section("Recent runs")
    _wait_text(runs, "shout.py")
    show = runs.get_by_role("button", name="Show result of hostile-output scripts/shout.py")
    show.click()
    view = runs.get_by_role("region", name="Result of hostile-output.shout")
    view.wait_for(state="visible", timeout=30_000)
    assert show.get_attribute("aria-expanded") == "true"
    panel = view.get_by_role("tabpanel")
    stdout = _wait_text(panel, "RESULT-STDOUT")
    assert '<img src=x onerror="document.body.dataset.pwned = 1">' in stdout, "shown as text"
    assert side.root.locator("img").count() == 0, "no element made of the script's output"
    assert lab.page.evaluate("document.body.dataset.pwned") is None
    assert view.get_by_role("tab", name="stdout").get_attribute("aria-selected") == "true"
    assert "exit 3" in view.inner_text()
    view.scroll_into_view_if_needed()
    lab.screenshot("side-panel-result")

    view.get_by_role("tab", name="exit code").click()
    _wait_text(panel, "3 (failure: see stderr)")
    # The keyboard: arrows move between the tabs, Escape closes and gives the focus back.
    view.get_by_role("tab", name="exit code").press("ArrowLeft")
    assert "<b>RESULT-STDERR</b>" in _wait_text(panel, "RESULT-STDERR")
    assert view.get_by_role("tab", name="stderr").get_attribute("aria-selected") == "true"
    view.get_by_role("tab", name="stderr").press("End")
    _wait_text(panel, "execution time")
    lab.page.keyboard.press("Escape")
    view.wait_for(state="hidden", timeout=10_000)
    label = lab.page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert label.startswith("Show result of hostile-output"), label
    # Enter on the focused button opens it again; "Close the result" closes it.
    lab.page.keyboard.press("Enter")
    view.wait_for(state="visible", timeout=30_000)
    view.get_by_role("button", name="Close the result").click()
    view.wait_for(state="hidden", timeout=10_000)
    assert show.get_attribute("aria-expanded") == "false"

    # The server's REST read: another kernel's or an unknown id is a clear refusal.
    kernel = next(
        s["kernel"]["id"]
        for s in lab.server.api("GET", "api/sessions")
        if s["notebook"]["path"] == name
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        lab.server.api("GET", f"skill-magics/kernels/{kernel}/result?id=0123456789abcdef")
    assert refused.value.code == 409
    assert "no result" in refused.value.read().decode()


def _foreign_post(browser_context, url: str, body: dict) -> None:
    """POST ``body`` to ``url`` from a page served on another origin (localhost, another
    port), with credentials, as a hostile page would."""
    import http.server
    import threading

    empty = Path(tempfile.mkdtemp(prefix="foreign-"))
    (empty / "index.html").write_text("<html><body>elsewhere</body></html>")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(empty), **kwargs)

        def log_message(self, *_args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    page = browser_context.new_page()
    try:
        page.goto(f"http://localhost:{httpd.server_address[1]}/index.html")
        sent = page.evaluate(
            """async ([url, body]) => {
                for (const mode of ['no-cors', 'cors']) {
                    try {
                        await fetch(url, {method: 'POST', mode, credentials: 'include',
                            headers: {'Content-Type': 'text/plain'}, body});
                    } catch (e) { /* refused or unreadable: what matters is the kernel */ }
                }
                return true;
            }""",
            [url, json.dumps(body)],
        )
        assert sent
    finally:
        page.close()
        httpd.shutdown()
        httpd.server_close()
        shutil.rmtree(empty, ignore_errors=True)


def test_a_page_reloaded_while_a_cell_waits_decides_it_in_the_side_panel(
    lab, markers: Path
) -> None:
    """Issue 44, item 3: the reloaded page lost the cell's panel (JupyterLab shows a request's
    outputs only in the page that sent it), but the question still waits in the kernel: the
    side panel of the new page lists it and its "Yes once" runs the blocked cell."""
    marker = markers / "after-reload"
    name = lab.add_notebook(
        _plain([SETUP, f"%%skillrun {SKILL}\n" + json.dumps({"path": str(marker)})]),
        "reload.ipynb",
    )
    lab.open_notebook(name)
    lab.run_all()
    lab.wait_cell_done(0, timeout=120)
    kernel = next(
        s["kernel"]["id"]
        for s in lab.server.api("GET", "api/sessions")
        if s["notebook"]["path"] == name
    )
    deadline = time.monotonic() + 120
    while not lab.server.api("GET", f"skill-magics/kernels/{kernel}/state")["waiting"]:
        assert time.monotonic() < deadline, "the cell never asked"
        time.sleep(0.3)

    lab.page.reload()
    side = Side(lab)
    side.open()
    question = side.waiting().first
    question.wait_for(state="visible", timeout=120_000)
    assert "touch_marker.py" in question.inner_text()
    assert not marker.exists(), "nothing ran before the answer"
    side.answer("Yes once")
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert time.monotonic() < deadline, "the blocked cell never ran after the reload"
        time.sleep(0.3)
    _wait_text(side.section("Waiting for you"), "Nothing waits.")
    deadline = time.monotonic() + 60
    while lab.server.api("GET", f"api/kernels/{kernel}")["execution_state"] != "idle":
        assert time.monotonic() < deadline, "the kernel stayed busy after the answer"
        time.sleep(0.3)
