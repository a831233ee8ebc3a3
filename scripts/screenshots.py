"""Remake every image in docs/ from the real UI: JupyterLab in headless Chromium.

    .venv/bin/python scripts/screenshots.py [--out docs/images] [--place /tmp/skill-magics-demo]

The pictures show paths (the command, the interpreter, the working folder), so they are made
in a neutral place, never this machine's checkout or venv (issue 44: approval.png showed
them): ``--place`` (default /tmp/skill-magics-demo, emptied first) gets a copy of the
example skills (``skills/``), a venv (``.venv/``, ``--copies``: its python's real path stays
there) that sees this checkout and this venv's packages through a .pth file, and the
notebook's folder (``work/``). The kernel runs that venv's python. Before an image is
written, the cell's text is checked for this machine's paths (checkout, venvs, home); one
found stops the script, naming it.

Starts JupyterLab from this venv (isolated settings, a temporary root, a random token: the
same start-up as tests/e2e/conftest.py, whose helpers it uses) and drives Debian's Chromium
with Playwright (never a downloaded browser). The notebook is the README tour's first run:
`%%skillrun unit-converter.convert -o marathon -- --value 42.195 --from km --to mi`.
approval.png is that cell while its approval panel waits for a click; after a click on
"Yes once", result.png is that cell's result: header and tabs, stdout selected. sidepanel.png
is the Skills side panel (labextension/, `make labextension` first) while that question waits
in it too; sidepanel-result.png its Recent runs after the run, with the run's result tabs
open (its "Result" button). Everything started
here is stopped at the end, failures included. Slow (JupyterLab start-up): not part of
`make test`, whose browser test drives the same flow.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
RUN_CELL = "%%skillrun unit-converter.convert -o marathon -- --value 42.195 --from km --to mi"
PLACE = Path("/tmp/skill-magics-demo")
KERNEL = "skill-magics-demo"


def neutral_place(place: Path) -> Path:
    """Make ``place`` (emptied first): skills/, .venv/, work/; returns the venv's python."""
    if place.exists():
        shutil.rmtree(place)
    (place / "work").mkdir(parents=True)
    shutil.copytree(REPO / "skill_magics" / "examples" / "skills", place / "skills")
    base = getattr(sys, "_base_executable", sys.executable)
    venv = place / ".venv"
    subprocess.run([base, "-m", "venv", "--copies", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]  # this venv's packages: ipykernel, ipywidgets...
    (Path(site) / "skill_magics_demo.pth").write_text(f"{REPO}\n{ours}\n")
    return python


def machine_paths(place: Path) -> list[str]:
    """This machine's paths a picture must not show (the neutral place excepted)."""
    found = {str(REPO), sys.prefix, sys.base_prefix, str(Path.home()), tempfile.gettempdir()}
    return sorted(p for p in found if p and p != "/" and not str(place).startswith(p + "/"))


def check_neutral(text: str, place: Path) -> None:
    # Whole paths only: the place itself may sit in a folder whose name merely starts like the
    # checkout's (/tmp/ci-tmp/... beside a checkout in /tmp/ci).
    rest = text.replace(str(place), "<place>")
    leaked = [p for p in machine_paths(place) if re.search(re.escape(p) + r"(?![\w.-])", rest)]
    if leaked:
        raise SystemExit(f"the picture would show this machine's path {leaked[0]}: not written")


def _e2e_helpers():
    # tests/e2e/conftest.py holds the JupyterLab start/stop and the page helpers; loaded by
    # path so this script needs no pytest run (tests/ on sys.path for kernel_fixtures).
    sys.path.insert(0, str(REPO / "tests"))
    spec = importlib.util.spec_from_file_location("e2e_helpers", REPO / "tests/e2e/conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext skill_magics\n%skills add ../skills"),
        nbformat.v4.new_code_cell(RUN_CELL),
        nbformat.v4.new_code_cell(
            "print(f\"A marathon is {marathon.json()['result']:.2f} miles\")"
        ),
    ]
    return nb


def make(out: Path, place: Path = PLACE) -> list[Path]:
    """Write approval.png, sidepanel.png, result.png and sidepanel-result.png into ``out``,
    made in ``place``."""
    from playwright.sync_api import sync_playwright

    e2e = _e2e_helpers()
    chromium = e2e.find_chromium()
    if chromium is None:
        raise SystemExit(
            "no Chromium found: apt-get install -y chromium (or SKILL_MAGICS_CHROMIUM)"
        )
    python = neutral_place(place)
    base = Path(tempfile.mkdtemp(prefix="skill-magics-shots-"))
    root = place / "work"
    e2e.register_kernelspec(base, KERNEL, str(python))
    server = e2e.start_lab(base, root)
    pw = sync_playwright().start()
    context = None
    try:
        context = pw.chromium.launch_persistent_context(
            user_data_dir=str(base / "profile"),
            executable_path=chromium,
            headless=True,
            args=e2e.CHROMIUM_FLAGS,
            viewport={"width": 1100, "height": 900},
            device_scale_factor=1,
            timeout=90_000,
        )
        page = context.new_page()
        page.set_default_timeout(120_000)
        lab = e2e.LabPage(page, server, base)
        name = lab.add_notebook(_notebook(), "tour.ipynb")
        lab.open_notebook(name)
        lab.run_all()
        for label in ("Yes once", "Yes in session", "No"):
            lab.button(1, label).wait_for(state="visible")
        time.sleep(0.5)  # let the panel's layout settle before the picture
        out.mkdir(parents=True, exist_ok=True)
        approval, result = out / "approval.png", out / "result.png"
        check_neutral(lab.output_text(1), place)
        lab.cell(1).screenshot(path=str(approval))
        side = out / "sidepanel.png"
        tab = page.locator(".jp-SideBar .lm-TabBar-tab[title='Skills']")
        tab.click()
        panel = page.locator("#skill-magics-sidepanel")
        panel.get_by_role("group").first.wait_for(state="visible")
        panel.get_by_role("button", name="Refresh the skills").click()
        panel.get_by_text("unit-converter", exact=True).first.wait_for(state="visible")
        time.sleep(0.5)
        panel.screenshot(path=str(side))
        tab.click()  # closed again: the result's picture keeps the notebook's width
        lab.button(1, "Yes once").click()
        lab.wait_cell_done(2, timeout=120)
        view = lab.cell(1).locator(".skill-magics-result").last
        view.wait_for(state="visible")
        text = lab.wait_output(1, "completed")
        if "completed" not in text:
            raise SystemExit(f"the run did not complete; the cell shows:\n{text}")
        check_neutral(text, place)
        time.sleep(0.5)
        # The output holding the result (header, then its sections, stdout open: the static
        # form a saved notebook keeps), not the answered panel above it.
        lab.cell(1).locator(
            ".jp-OutputArea-child", has=page.locator(".skill-magics-result")
        ).last.screenshot(path=str(result))
        if "A marathon is 26.22 miles" not in lab.output_text(2):
            raise SystemExit(f"the next cell did not read the value: {lab.output_text(2)!r}")
        side_result = out / "sidepanel-result.png"
        tab.click()  # Recent runs: the run's "Result" opens its tabs in the side panel
        runs = panel.get_by_role("region", name="Recent runs")
        runs.get_by_role("button", name="Show result of unit-converter").first.click()
        shown = runs.get_by_role("region", name="Result of unit-converter.convert")
        shown.wait_for(state="visible")
        check_neutral(runs.inner_text(), place)
        time.sleep(0.5)
        runs.screenshot(path=str(side_result))
        return [approval, side, result, side_result]
    finally:
        if context is not None:
            context.close()
        pw.stop()
        e2e.stop_lab(server)
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(place, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--place", type=Path, default=PLACE, help="the neutral folder (emptied)")
    args = parser.parse_args()
    for path in make(args.out, args.place):
        print(path)


if __name__ == "__main__":
    main()
