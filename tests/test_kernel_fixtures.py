"""The kernel test harness acts like a browser: it clicks a widget only once it is shown.

A Button's comm opens (the frontend learns its state) before the Button takes clicks: its
``on_msg`` and its owner's ``on_click`` come after, and the owner displays it later still. A
browser draws nothing before the display, so nobody can click earlier. A click sent on the
comm_open alone raced that and, under load, was dropped: the approval cell waited for ever
(test_click_while_cell_waits, test_env_install_waits_for_the_click, ...). Here the gap is made
wide on purpose, so the race is no longer a matter of luck.
"""

from __future__ import annotations

import pytest
from kernel_fixtures import kernel_ipykernel_version, start_kernel

pytestmark = pytest.mark.kernel

OPENED_THEN_SHOWN = (
    "import asyncio, ipywidgets as w\n"
    "from IPython.display import display\n"
    "b = w.Button(description='Later')\n"
    "await asyncio.sleep(2)  # the model is on the frontend; no view, no click handler yet\n"
    "clicks = []\n"
    "b.on_click(lambda _b: clicks.append(1))\n"
    "display(w.VBox([w.HBox([b])]))  # shown inside boxes, as the approval panel is\n"
    "for _ in range(300):\n"
    "    if clicks:\n"
    "        break\n"
    "    await asyncio.sleep(0.05)\n"
    "print(clicks)"
)


@pytest.mark.skipif(
    kernel_ipykernel_version() < (7, 4),
    reason="a click on the main shell reaches an awaiting cell from ipykernel 7.4",
)
def test_wait_for_button_returns_once_the_button_is_shown() -> None:
    with start_kernel() as k:
        msg_id = k.submit(OPENED_THEN_SHOWN, allow_stdin=True)
        button = k.wait_for_button("Later", timeout=60)
        assert k.shown(button)
        k.click(button)
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        assert r.stdout.strip() == "[1]", "the click must reach the handler"


def test_a_widget_opened_but_never_displayed_is_not_shown() -> None:
    with start_kernel() as k:
        r = k.execute(
            "import ipywidgets as w\nfrom IPython.display import display\n"
            "hidden = w.Button(description='Hidden')\n"
            "display(w.VBox([w.Button(description='Shown')]))",
            allow_stdin=True,
        )
        assert r.ok, r.error_text
        assert k.shown(k.wait_for_button("Shown", timeout=10))
        hidden = k.buttons()["Hidden"]
        assert not k.shown(hidden)
        with pytest.raises(TimeoutError):
            k.wait_for_button("Hidden", timeout=2)
