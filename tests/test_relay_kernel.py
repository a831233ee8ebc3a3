"""The comm relay under attack, in a real kernel (approval/relay.py; issue 39, findings 4, 5);
on ipykernel 6.x (the matrix) the same attacks on the pumping wait (waiting.py).

A blocking wait on ipykernel 7.x (``%autoawait off``; VS Code, whose clicks never carry a
``subshell_id``) gets its click through the relay. Two ways it lost the click:

- a click sent the instant the panel's button comm opens, before the relay knew the panel's
  comms: it went to the main thread the waiting cell blocks;
- 10,000 updates of another widget sent while the cell waits: they filled the main thread's
  pipe, the shell channel thread stopped reading, and the click behind them never came.

Either way the cell waited until ``approval_timeout`` and left the run pending; a cell that
shows the script's output was decided by the click while it waited. One kernel for the
module.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kernel_fixtures import KernelSession, kernel_ipykernel_version, start_kernel

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(600)]

TIMEOUT_S = 20  # approval_timeout: a lost click fails the cell this fast
CELL = '%%skillrun relay-skill.echo -o res\n{"n": 1}'
ECHO = "import json, sys\nprint('echoed', json.dumps(json.load(sys.stdin)))\n"
PUMPS = kernel_ipykernel_version() < (7,)  # ipykernel 6.x (Colab): the cell pumps, no relay
# 6.x handles every message on the pumping cell's thread, one at a time (about 200 a second on
# a busy 2-core machine): 1,000 there (it took 20 s for 500 when it paused after each one).
FLOOD = 1_000 if PUMPS else 10_000


@pytest.fixture(scope="module")
def k(tmp_path_factory: pytest.TempPathFactory, make_skill) -> Iterator[KernelSession]:
    root = tmp_path_factory.mktemp("relay")
    make_skill(
        root / "skills",
        "relay-skill",
        {"name": "relay-skill", "description": "Echoes its input, for the relay tests."},
        {"scripts/echo.py": ECHO},
        executable=False,
    )
    with start_kernel(env={"SKILL_MAGICS_PATH": str(root / "skills")}, cwd=root) as session:
        setup = "%load_ext skill_magics\n%config SkillMagics.approval_timeout = " + str(TIMEOUT_S)
        assert session.execute(setup).ok
        if kernel_ipykernel_version() >= (7, 4):
            assert session.execute("%autoawait off").ok  # the magics block: the relay
        probe = (
            "from skill_magics.notebook.approval import waiting\n"
            "print(waiting.choose(get_ipython(), in_coroutine=False).value)"
        )
        r = session.execute(probe, allow_stdin=True)
        assert r.stdout.strip() == ("pump" if PUMPS else "relay"), (r.stdout, r.error_text)
        yield session


def _decided(k: KernelSession, msg_id: str, what: str) -> None:
    r = k.collect(msg_id, timeout=TIMEOUT_S + 120)
    assert r.ok, r.error_text
    text = r.text()
    assert "Waiting for approval" not in text, f"{what}: no click came within approval_timeout"
    assert 'echoed {"n": 1}' in text, text


def test_click_the_instant_the_comm_opens(k: KernelSession) -> None:
    for attempt in range(20):
        msg_id = k.submit(CELL, allow_stdin=True)
        k.click_when_opened("Yes once")
        _decided(k, msg_id, f"click {attempt + 1} of 20, sent as its comm opened")


def test_flood_of_other_widget_messages(k: KernelSession) -> None:
    import zmq

    setup = (
        "import ipywidgets\n"
        "from skill_magics.notebook.extension import get_magics\n"
        "seen = []\n"
        "def _record(change):\n"
        "    panels = get_magics(get_ipython()).panels\n"
        "    seen.append((change['new'], bool(panels) and panels[-1].decision is None))\n"
        "other = ipywidgets.IntText()\n"
        "other.observe(_record, 'value')\n"
        "print(other.model_id)"
    )
    r = k.execute(setup)
    assert r.ok, r.error_text
    other = r.stdout.strip()
    before = len(k.buttons_all("Yes once"))
    msg_id = k.submit(CELL, allow_stdin=True)
    while len(k.buttons_all("Yes once")) <= before:  # this cell's panel, shown
        k.drain(0.2)
    yes = k.buttons_all("Yes once")[-1]
    socket = k.kc.shell_channel.socket
    socket.setsockopt(zmq.SNDTIMEO, 60_000)  # the kernel stopped reading: fail, do not hang
    try:
        for value in range(1, FLOOD + 1):
            try:
                k.set_state(other, {"value": value})
            except zmq.Again:
                pytest.fail(f"the kernel stopped reading the shell channel after {value} updates")
            if value % 500 == 0:
                k.drain(0.05)  # read iopub as a frontend does
        k.click(yes)
    finally:
        socket.setsockopt(zmq.SNDTIMEO, -1)
    _decided(k, msg_id, f"a click behind {FLOOD} updates of another widget")
    # The other widget's updates are all handled, in order, never dropped. The relay holds
    # them for the main shell and it handles them after the wait (as a blocked main thread
    # would); pumping handles them during the wait. Asked in the shell reply
    # (user_expressions): iopub drops messages under a flood, replies never.
    check = "len(seen), [v for v, _ in seen] == list(range(1, %d)), sum(w for _, w in seen)"
    during = FLOOD if PUMPS else 0  # handled while the panel was undecided
    assert _expression(k, check % (FLOOD + 1)) == f"({FLOOD}, True, {during})"


def _expression(k: KernelSession, expr: str, timeout: float = 600) -> str:
    """The value of ``expr`` in the kernel, from the execute_reply alone."""
    msg_id = k.kc.execute("", user_expressions={"v": expr})
    reply = k._shell_reply(msg_id, time.monotonic() + timeout)["content"]
    assert reply["status"] == "ok", reply
    value = reply["user_expressions"]["v"]
    assert value.get("status") == "ok", value
    return value["data"]["text/plain"]
