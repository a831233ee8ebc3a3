"""waiting.choose() and waiting.subshell_count() inside real kernels (the matrix runs each
ipykernel version): the subshell probe reads ipykernel internals, so check it on the real thing.

On ipykernel 7.0-7.3 a click reaches a waiting cell only through a subshell. JupyterLab opens
one when a widget comm opens (the approval panel's), so the thread wait is chosen up front and
gives up early only when, after the panel is shown, no subshell has appeared
(``no_click_can_arrive``).
"""

from __future__ import annotations

import pytest
from kernel_fixtures import kernel_ipykernel_version, start_kernel

pytestmark = pytest.mark.kernel

PROBE = (
    "from skill_magics.notebook.approval import waiting\n"
    "print(waiting.subshell_count(get_ipython().kernel),"
    " waiting.choose(get_ipython(), in_coroutine=False).value,"
    " waiting.no_click_can_arrive(get_ipython()))"
)


def test_strategy_follows_whether_a_subshell_exists() -> None:
    version = kernel_ipykernel_version()
    with start_kernel() as k:
        r = k.execute(PROBE, allow_stdin=True)
        assert r.ok, r.error_text
        before = r.stdout.split()
        if version < (7,):
            assert before == ["None", "pump", "False"], "ipykernel 6.x: no subshells; pumping"
            return
        k.comms_subshell()  # as JupyterLab does when a widget comm opens
        r = k.execute(PROBE, allow_stdin=True)
        assert r.ok, r.error_text
        after = r.stdout.split()
        assert (before[0], after[0]) == ("0", "1")
        if version < (7, 4):
            assert before[1:] == ["thread", "True"] and after[1:] == ["thread", "False"]
        else:  # >= 7.4 waits by awaiting; a synchronous call never blocks
            assert before[1:] == after[1:] == ["nonblocking", "False"]
