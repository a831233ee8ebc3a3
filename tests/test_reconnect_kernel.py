"""A frontend that connects while a cell waits for a click is answered (issue 44, Deliver 4).

A reloaded JupyterLab page, or a second client, starts with ``kernel_info_request`` on the
main shell. On ipykernel 7 that request used to wait behind the cell waiting for the
approval: the page read "Unknown" and no reply came until the cell ended. Here a second
client connects to the kernel while the panel waits, gets its kernel_info reply, and the
cell still takes the click afterwards and runs (approval/reconnect.py). On ipykernel 6.x the
pumping wait answers it itself; the matrix runs this module there too.
"""

from __future__ import annotations

import json
import queue
import time
from pathlib import Path

import pytest
from kernel_fixtures import kernel_ipykernel_version, start_kernel

pytestmark = pytest.mark.kernel

REPLY_WITHIN_S = 20  # a kernel_info reply; with the bug none came while the cell waited


def _kernel_info_from_a_new_client(k) -> dict:
    """What a reloaded page does first: connect, send kernel_info_request, wait for it."""
    client = k.km.blocking_client()
    client.start_channels()
    try:
        msg_id = client.kernel_info()
        deadline = time.monotonic() + REPLY_WITHIN_S
        while time.monotonic() < deadline:
            try:
                reply = client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply
        raise AssertionError(f"no kernel_info_reply within {REPLY_WITHIN_S} s while a cell waits")
    finally:
        client.stop_channels()


@pytest.mark.parametrize("subshells", [True, False], ids=["subshells", "main-shell"])
def test_a_new_connection_gets_kernel_info_while_a_cell_waits(
    tmp_path: Path, subshells: bool
) -> None:
    version = kernel_ipykernel_version()
    if subshells and version < (7,):
        subshells = False  # no subshells before ipykernel 7: the main-shell case is the one
    marker = tmp_path / "ran"
    with start_kernel(cwd=tmp_path) as k:
        r = k.execute("%load_ext skill_magics\n%skills add --examples", allow_stdin=True)
        assert r.ok, r.error_text
        if subshells:
            k.comms_subshell()  # as JupyterLab's widget manager does on start
        cell = "%%skillrun demo-behaviours.touch_marker -o res\n" + json.dumps(
            {"path": str(marker)}
        )
        msg_id = k.submit(cell, allow_stdin=True)
        yes = k.wait_for_button("Yes once", timeout=60)
        reply = _kernel_info_from_a_new_client(k)
        assert reply["content"]["status"] == "ok"
        assert reply["content"]["implementation"] == "ipython"
        assert not marker.exists(), "nothing ran: the question is still open"
        k.click(yes, subshell=subshells)
        r = k.collect(msg_id, timeout=120)
        assert r.ok, r.error_text
        assert marker.exists()
        r = k.execute("print(res.status)")
        assert r.stdout.strip() == "completed"


def _send(client, msg_type: str, content: dict, metadata: dict | None = None) -> None:
    client.session.send(
        client.shell_channel.socket, client.session.msg(msg_type, content, metadata=metadata)
    )


def test_a_new_page_restores_the_waiting_panel_and_its_click_decides(tmp_path: Path) -> None:
    """What a reloaded JupyterLab page's widget manager does first (``_loadFromKernel``):
    open the control comm on the main shell (its subshell does not exist yet) and ask for
    every widget's state. Held behind the waiting cell, the page drew no widget, so the
    panel shown again in its cell (labextension/src/reattach.ts) said "Loading widget..."; the
    waiting thread answers it now, and the new page's click on the panel decides the cell."""
    marker = tmp_path / "ran"
    with start_kernel(cwd=tmp_path) as k:
        r = k.execute("%load_ext skill_magics\n%skills add --examples", allow_stdin=True)
        assert r.ok, r.error_text
        if kernel_ipykernel_version() >= (7, 4):
            assert k.execute("%autoawait off").ok  # the cell blocks its main thread
        cell = "%%skillrun demo-behaviours.touch_marker -o res\n" + json.dumps(
            {"path": str(marker)}
        )
        msg_id = k.submit(cell, allow_stdin=True)
        yes = k.wait_for_button("Yes once", timeout=60)
        page = k.km.blocking_client()
        page.start_channels()
        try:
            control = "control-" + str(time.monotonic_ns())
            _send(
                page,
                "comm_open",
                {"comm_id": control, "target_name": "jupyter.widget.control", "data": {}},
                {"version": "1.0.0"},
            )
            _send(page, "comm_msg", {"comm_id": control, "data": {"method": "request_states"}})
            deadline = time.monotonic() + REPLY_WITHIN_S
            states: dict = {}
            while not states:
                try:
                    msg = page.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    raise AssertionError(
                        f"no widget states within {REPLY_WITHIN_S} s while a cell waits"
                    ) from None
                data = msg["content"].get("data") or {}
                if msg["msg_type"] == "comm_msg" and msg["content"].get("comm_id") == control:
                    assert data.get("method") == "update_states", data
                    states = data["states"]
            assert yes in states, "the panel's button is among the restored widgets"
            _send(page, "comm_close", {"comm_id": control, "data": {}})
            assert not marker.exists(), "nothing ran: the question is still open"
            _send(
                page,
                "comm_msg",
                {"comm_id": yes, "data": {"method": "custom", "content": {"event": "click"}}},
            )
            r = k.collect(msg_id, timeout=120)
        finally:
            page.stop_channels()
        assert r.ok, r.error_text
        assert marker.exists()
