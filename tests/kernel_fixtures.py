"""Real Jupyter kernels for tests: start one with a chosen Python, run cells, click widgets.

Shared by the kernel tests (tests/test_kernel*.py) and the ipykernel version matrix
(scripts/kernel-matrix.sh). Nothing here is mocked: a real ``ipykernel`` process is started
through ``jupyter_client`` and spoken to over ZeroMQ, the same way JupyterLab does.

Which Python runs the kernel:
    ``SKILL_MAGICS_TEST_KERNEL_PYTHON=/path/to/venv/bin/python`` (set by the matrix script),
    else the interpreter running pytest.

Example:
    >>> from kernel_fixtures import start_kernel
    >>> with start_kernel() as k:
    ...     r = k.execute("%load_ext skill_magics", allow_stdin=False)
    ...     assert r.ok, r.error_text
    ...     msg_id = k.submit("%%skillrun demo-behaviours.echo\\n{}", allow_stdin=True)
    ...     yes = k.wait_for_button("Yes once")      # the frontend saw the button
    ...     k.click(yes)                              # the frontend clicks it (comm_msg)
    ...     r = k.collect(msg_id)

Or as a pytest fixture (import it into the test module):
    >>> from kernel_fixtures import kernel  # noqa: F401
    >>> def test_x(kernel): kernel.execute("1 + 1").text_plain == "2"
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

KERNEL_PYTHON_ENV = "SKILL_MAGICS_TEST_KERNEL_PYTHON"
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
REPO_ROOT = Path(__file__).resolve().parent.parent
_KERNEL_NAME = "skill-magics-test"


def kernel_python() -> str:
    """The Python that test kernels run with (env var override, else this interpreter)."""
    # abspath, not realpath: a venv's python is a symlink and must stay one to find its venv.
    return os.path.abspath(os.environ.get(KERNEL_PYTHON_ENV) or sys.executable)


def kernel_ipykernel_version(python: str | None = None) -> tuple[int, ...]:
    """ipykernel version installed for ``python`` as an int tuple, e.g. (7, 4, 0)."""
    import subprocess

    out = subprocess.run(
        [python or kernel_python(), "-c", "import ipykernel; print(ipykernel.__version__)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    parts = []
    for piece in out.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


@dataclass
class CellResult:
    """Everything one ``execute_request`` produced."""

    msg_id: str
    status: str = ""  # "ok" | "error" | "aborted" (from execute_reply)
    reply: dict[str, Any] = field(default_factory=dict)
    outputs: list[dict[str, Any]] = field(default_factory=list)  # iopub msgs (header+content)
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def bundles(self) -> list[dict[str, Any]]:
        """MIME bundles of display_data / execute_result / update_display_data, in order."""
        return [
            m["content"].get("data", {})
            for m in self.outputs
            if m["msg_type"] in ("display_data", "execute_result", "update_display_data")
        ]

    @property
    def text_plain(self) -> str:
        """text/plain of the execute_result (the cell's value), or ''."""
        for m in self.outputs:
            if m["msg_type"] == "execute_result":
                return m["content"]["data"].get("text/plain", "")
        return ""

    def text(self, mime: str = "text/plain") -> str:
        """All output text joined: streams plus ``mime`` of every bundle (for broad asserts)."""
        parts = [self.stdout, self.stderr]
        parts += [str(b.get(mime, "")) for b in self.bundles]
        return "\n".join(p for p in parts if p)

    @property
    def error_text(self) -> str:
        """ename: evalue of an error, or '' (handy as an assert message)."""
        for m in self.outputs:
            if m["msg_type"] == "error":
                c = m["content"]
                return f"{c.get('ename')}: {c.get('evalue')}"
        if self.status and self.status != "ok":
            return f"{self.status}: {self.reply.get('ename')}: {self.reply.get('evalue')}"
        return ""


class KernelSession:
    """One running kernel plus a blocking client; collects iopub messages and widget state."""

    def __init__(
        self,
        python: str | None = None,
        *,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        startup_timeout: float = 90,
        connection_file: str | Path | None = None,
    ) -> None:
        self.python = python or kernel_python()
        # None: jupyter_client's choice (a bare KernelManager: a tmpXXXX.json in $TMPDIR).
        self.connection_file = "" if connection_file is None else str(connection_file)
        self._tmp = Path(tempfile.mkdtemp(prefix="skill-magics-kernel-"))
        self.cwd = Path(cwd) if cwd else self._tmp / "work"
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.extra_env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.km = None
        self.kc = None
        self.iopub: list[dict[str, Any]] = []  # every iopub message seen, in order
        self._idle: set[str] = set()  # msg_ids of the requests whose "idle" status came
        self.widgets: dict[str, dict[str, Any]] = {}  # comm_id -> latest widget state
        self.every_widget: dict[str, dict[str, Any]] = {}  # the same, closed ones kept
        self.displayed: set[str] = set()  # model ids of the widget views the kernel displayed
        self._comms_subshell: str | None = None  # see comms_subshell()

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> KernelSession:
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpecManager

        # A private kernelspec pointing at the chosen Python: the matrix runs the same
        # tests against kernels whose ipykernel differs from the one running pytest.
        spec_dir = self._tmp / "kernels" / _KERNEL_NAME
        spec_dir.mkdir(parents=True)
        spec = {
            "argv": [self.python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": f"skill-magics test ({self.python})",
            "language": "python",
        }
        (spec_dir / "kernel.json").write_text(json.dumps(spec))
        ksm = KernelSpecManager(kernel_dirs=[str(self._tmp / "kernels")])
        # Unix sockets, not TCP ports: jupyter_client picks free ports, closes them and the
        # kernel binds them later; with the test stages run side by side another process can
        # take one in between (a fresh-clone run lost a kernel to "Address already in use").
        self.km = KernelManager(
            kernel_name=_KERNEL_NAME,
            kernel_spec_manager=ksm,
            connection_file=self.connection_file,
            transport="ipc",
            ip=str(self._tmp / "ipc"),
        )
        self.km.start_kernel(env=self._env(), cwd=str(self.cwd))
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=self.startup_timeout)
        except Exception:
            self.shutdown()
            raise
        return self

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        # Isolate from the developer's IPython profile/startup files; keep the repo importable
        # even when the package is not installed in the kernel's environment.
        env["IPYTHONDIR"] = str(self._tmp / "ipython")
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
        )
        env.pop(KERNEL_PYTHON_ENV, None)
        env.pop("SKILL_MAGICS_AUTO_APPROVE", None)  # tests opt in explicitly via env=
        env.update(self.extra_env)
        return env

    def shutdown(self) -> None:
        """Stop channels and the kernel (graceful, then forced); remove temp files. Idempotent."""
        if self.kc is not None:
            try:
                self.kc.stop_channels()
            except Exception:
                pass
            self.kc = None
        if self.km is not None:
            try:
                if self.km.is_alive():
                    try:
                        self.km.shutdown_kernel(now=False)
                    except Exception:
                        self.km.shutdown_kernel(now=True)
            except Exception:
                pass
            self.km = None
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> KernelSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- running cells -----------------------------------------------------------------
    def submit(self, code: str, *, allow_stdin: bool = False, stop_on_error: bool = True) -> str:
        """Send an execute_request without waiting; returns its msg_id (see collect)."""
        return self.kc.execute(code, allow_stdin=allow_stdin, stop_on_error=stop_on_error)

    def execute(
        self,
        code: str,
        *,
        allow_stdin: bool = False,
        timeout: float = 120,
        stop_on_error: bool = True,
    ) -> CellResult:
        """Run a cell and wait for it: allow_stdin=False is what nbclient/papermill send.

        A cell sent just after one that failed may come back "aborted" without running:
        ipykernel 6 aborts what reaches it before its stop-on-error window closes (a race a
        busy machine loses). It never ran, so it is sent again (up to 3 times)."""
        for _ in range(3):
            result = self.collect(
                self.submit(code, allow_stdin=allow_stdin, stop_on_error=stop_on_error),
                timeout=timeout,
            )
            if result.status != "aborted":
                break
            time.sleep(0.2)
        return result

    def collect(self, msg_id: str, *, timeout: float = 120) -> CellResult:
        """Wait until the request ``msg_id`` is finished (idle + reply) and gather its output."""
        start = time.monotonic()
        deadline = start + timeout
        while not self._idle_seen(msg_id):
            self._pump(deadline, f"cell {msg_id} to finish")
        result = CellResult(msg_id=msg_id)
        reply = self._shell_reply(msg_id, deadline)
        result.reply = reply.get("content", {})
        result.status = result.reply.get("status", "")
        for m in self.iopub:
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if m["msg_type"] in ("status", "execute_input", "comm_open", "comm_msg"):
                continue
            msg = {"msg_type": m["msg_type"], "content": m["content"]}
            result.outputs.append(msg)
            if m["msg_type"] == "stream":
                if m["content"]["name"] == "stdout":
                    result.stdout += m["content"]["text"]
                else:
                    result.stderr += m["content"]["text"]
        result.duration_s = time.monotonic() - start
        return result

    def interrupt(self) -> None:
        """Kernel > Interrupt, as the frontend does it (SIGINT or interrupt_request)."""
        self.km.interrupt_kernel()

    def answer_input(self, text: str, *, timeout: float = 30) -> str:
        """Wait for an input_request (input()/getpass) and reply ``text``; returns its prompt."""
        msg = self.kc.get_stdin_msg(timeout=timeout)
        self.kc.input(text)
        return msg["content"].get("prompt", "")

    def complete(self, code: str, cursor_pos: int | None = None, *, timeout: float = 30) -> dict:
        """A complete_request (Tab in a notebook); returns the reply's content."""
        msg_id = self.kc.complete(code, len(code) if cursor_pos is None else cursor_pos)
        return self._shell_reply(msg_id, time.monotonic() + timeout)["content"]

    # -- widgets (what a browser would do) ----------------------------------------------
    def wait_for_button(self, description: str, *, timeout: float = 60) -> str:
        """Wait until the kernel shows a Button with this description; returns its comm_id.

        Shown, as in a browser: displayed (see :meth:`shown`), not only opened.
        """
        deadline = time.monotonic() + timeout
        while True:
            for comm_id, state in self.widgets.items():
                if (
                    state.get("_model_name") == "ButtonModel"
                    and state.get("description") == description
                    and self.shown(comm_id)
                ):
                    return comm_id
            self._pump(deadline, f"a button {description!r}")

    def wait_for_widget(self, model_name: str, *, timeout: float = 60) -> str:
        """Wait until the kernel shows a widget of this model (e.g. "PasswordModel")."""
        deadline = time.monotonic() + timeout
        while True:
            for comm_id, state in self.widgets.items():
                if state.get("_model_name") == model_name and self.shown(comm_id):
                    return comm_id
            self._pump(deadline, f"a {model_name}")

    def shown(self, comm_id: str) -> bool:
        """Whether a browser draws this widget: a displayed widget view is it or holds it
        (``children``, at any depth).

        Only then can a person click it. Its comm_open alone is too early: ipywidgets opens a
        Button's comm before the Button takes clicks (its ``on_msg``, then its owner's
        ``on_click``), so a click sent then is dropped and the cell waits for ever.
        """
        stack, seen = list(self.displayed), set()
        while stack:
            model_id = stack.pop()
            if model_id == comm_id:
                return True
            if model_id in seen:
                continue
            seen.add(model_id)
            for child in self.widgets.get(model_id, {}).get("children") or ():
                if isinstance(child, str) and child.startswith("IPY_MODEL_"):
                    stack.append(child.removeprefix("IPY_MODEL_"))
        return False

    def set_state(self, comm_id: str, state: dict[str, Any], *, subshell: bool = False) -> None:
        """What a browser sends when the person types or ticks: a widget ``update``."""
        msg = self.kc.session.msg(
            "comm_msg",
            {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}},
        )
        if subshell:
            msg["header"]["subshell_id"] = self.comms_subshell()
        self.kc.session.send(self.kc.shell_channel.socket, msg)

    def buttons(self) -> dict[str, str]:
        """description -> comm_id of every Button the kernel opened so far."""
        return {
            s.get("description", ""): cid
            for cid, s in self.widgets.items()
            if s.get("_model_name") == "ButtonModel"
        }

    def buttons_all(self, description: str) -> list[str]:
        """comm_ids of every shown Button with this description, oldest first (one per
        panel; see :meth:`shown`)."""
        return [
            cid
            for cid, s in self.widgets.items()
            if s.get("_model_name") == "ButtonModel"
            and s.get("description") == description
            and self.shown(cid)
        ]

    def click(self, comm_id: str, *, subshell: bool = False) -> None:
        """Click a Button: the comm_msg JupyterLab's widget manager sends.

        ``subshell=False``: on the main shell (VS Code, JupyterLab without subshells,
        ipykernel 6.x). ``subshell=True``: on a kernel subshell, as JupyterLab >= 4.4 does by
        default on ipykernel >= 7 ("comms over subshells"). A bare 7.0-7.3 kernel handles a
        main-shell click only after the running cell ends; skill_magics' approval panel gets
        it either way (approval/relay.py).
        """
        msg = self.kc.session.msg(
            "comm_msg",
            {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}},
        )
        if subshell:
            msg["header"]["subshell_id"] = self.comms_subshell()
        self.kc.session.send(self.kc.shell_channel.socket, msg)

    def click_when_opened(self, description: str, *, timeout: float = 60) -> str:
        """Click the next Button with this description the instant its comm_open arrives,
        before reading anything else (the earliest a frontend could); returns its comm_id.

        Earlier than a person can (see :meth:`shown`): a test of a kernel that must take the
        click whenever it comes.
        """
        known = set(self.every_widget)
        deadline = time.monotonic() + timeout
        while True:
            seen = len(self.iopub)
            self._pump(deadline, f"a new button {description!r}")
            for msg in self.iopub[seen:]:
                comm_id = msg["content"].get("comm_id")
                state = self.widgets.get(comm_id) if msg["msg_type"] == "comm_open" else None
                if (
                    state is not None
                    and comm_id not in known
                    and state.get("_model_name") == "ButtonModel"
                    and state.get("description") == description
                ):
                    self.click(comm_id)
                    return comm_id

    def click_until_handled(
        self,
        comm_id: str,
        msg_id: str,
        *,
        subshell: bool = False,
        every: float = 5.0,
        timeout: float = 60,
    ) -> None:
        """Click, and click again every ``every`` s while the cell ``msg_id`` still runs.

        A busy 2-core machine has lost one subshell click in many runs (the subshell thread
        not yet serving); a person would click again too. Every click after the first that
        counts is a no-op for the code under test (first decision wins).
        """
        deadline = time.monotonic() + timeout
        while True:
            self.click(comm_id, subshell=subshell)
            retry_at = min(deadline, time.monotonic() + every)
            while not self._idle_seen(msg_id) and time.monotonic() < retry_at:
                self.drain(0.2)
            if self._idle_seen(msg_id) or time.monotonic() >= deadline:
                return

    def click_while_waiting(
        self, msg_id: str, label: str = "Yes once", *, subshell: bool = False
    ) -> CellResult:
        """The approval flow of a person: the button appears, the cell is still waiting,
        click it (again if lost), and the cell finishes; returns the finished cell."""
        button = self.wait_for_button(label, timeout=60)
        self.drain(0.5)
        assert not self._idle_seen(msg_id), "the cell must still be waiting for the click"
        self.click_until_handled(button, msg_id, subshell=subshell)
        result = self.collect(msg_id, timeout=60)
        assert result.ok, result.error_text
        return result

    def comms_subshell(self, *, timeout: float = 30) -> str:
        """The subshell used for widget comms (created once per kernel via the control channel).

        Create it *before* submitting a cell that waits: like JupyterLab does at widget
        manager start-up, not while the main shell is busy.
        """
        if self._comms_subshell:
            return self._comms_subshell
        request = self.kc.session.msg("create_subshell_request", {})
        self.kc.control_channel.send(request)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                reply = self.kc.get_control_msg(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if reply.get("parent_header", {}).get("msg_id") == request["header"]["msg_id"]:
                content = reply["content"]
                if content.get("status", "ok") != "ok" or "subshell_id" not in content:
                    raise RuntimeError(
                        f"Kernel refused create_subshell_request ({content}): subshells need "
                        "ipykernel >= 7"
                    )
                self._comms_subshell = content["subshell_id"]
                return self._comms_subshell
        raise TimeoutError("No create_subshell_reply: subshells need ipykernel >= 7")

    def drain(self, seconds: float = 0.5) -> None:
        """Read whatever iopub messages arrive within ``seconds`` (e.g. after a click)."""
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                self._pump(deadline, "")
        except TimeoutError:
            pass

    # -- internals ---------------------------------------------------------------------
    def _pump(self, deadline: float, what: str) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"Kernel did not produce {what} in time: check the kernel output")
        try:
            msg = self.kc.get_iopub_msg(timeout=min(remaining, 0.5))
        except queue.Empty:
            return
        self.iopub.append(msg)
        mtype, content = msg["msg_type"], msg["content"]
        if mtype == "status" and content.get("execution_state") == "idle":
            self._idle.add(msg.get("parent_header", {}).get("msg_id"))
        if mtype == "comm_open" and content.get("target_name") == "jupyter.widget":
            state = dict(content.get("data", {}).get("state", {}))
            self.widgets[content["comm_id"]] = state
            self.every_widget[content["comm_id"]] = state
        elif mtype == "comm_msg" and content.get("comm_id") in self.widgets:
            data = content.get("data", {})
            if data.get("method") in ("update", "echo_update"):
                self.widgets[content["comm_id"]].update(data.get("state", {}))
        elif mtype == "comm_close":
            self.widgets.pop(content.get("comm_id"), None)
        elif mtype in ("display_data", "update_display_data", "execute_result"):
            view = content.get("data", {}).get(WIDGET_VIEW_MIME)
            if isinstance(view, dict) and view.get("model_id"):
                self.displayed.add(view["model_id"])

    def _idle_seen(self, msg_id: str) -> bool:
        # A set, not a scan of every message: a widget flood brings tens of thousands.
        return msg_id in self._idle

    def _shell_reply(self, msg_id: str, deadline: float) -> dict[str, Any]:
        pending = getattr(self, "_replies", None)
        if pending is None:
            pending = self._replies = {}
        while msg_id not in pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"No execute_reply for {msg_id}: the kernel may be stuck")
            try:
                msg = self.kc.get_shell_msg(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            pending[msg.get("parent_header", {}).get("msg_id")] = msg
        return pending.pop(msg_id)


def tab_titles(state: dict[str, Any]) -> list[str]:
    """A TabModel's titles as the browser gets them: ``titles`` (ipywidgets 8) or the
    ``_titles`` index -> title map (ipywidgets 7, as Colab pins it)."""
    if "titles" in state:
        return list(state["titles"])
    titles = state.get("_titles", {})
    return [titles.get(str(i), "") for i in range(len(state.get("children", [])))]


@contextmanager
def start_kernel(
    python: str | None = None,
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    startup_timeout: float = 90,
    connection_file: str | Path | None = None,
) -> Iterator[KernelSession]:
    """Start a real kernel (``python`` or kernel_python()); always shut it down afterwards."""
    session = KernelSession(
        python, env=env, cwd=cwd, startup_timeout=startup_timeout, connection_file=connection_file
    )
    try:
        yield session.start()
    finally:
        session.shutdown()


@pytest.fixture
def kernel() -> Iterator[KernelSession]:
    """A fresh kernel for one test (kernel_python()); shut down even when the test fails."""
    with start_kernel() as session:
        yield session


@pytest.fixture
def kernel_factory() -> Iterator[Any]:
    """Call ``kernel_factory(env={...}, cwd=...)`` to start kernels; all are shut down after."""
    sessions: list[KernelSession] = []

    def factory(**kwargs: Any) -> KernelSession:
        session = KernelSession(**kwargs)
        sessions.append(session)
        return session.start()

    try:
        yield factory
    finally:
        for session in sessions:
            session.shutdown()
