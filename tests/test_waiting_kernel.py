"""waiting.choose() and waiting.subshell_count() inside real kernels (the matrix runs each
ipykernel version): the subshell probe reads ipykernel internals, so check it on the real thing.

On ipykernel 7.0-7.3 a click reaches a waiting cell only through a subshell, so without one
the cell must not block (DESIGN.md section 4); with one (what JupyterLab >= 4.4 creates for
widget comms) the thread wait is used.
"""

from __future__ import annotations

import pytest
from kernel_fixtures import kernel_ipykernel_version, start_kernel

pytestmark = pytest.mark.kernel

PROBE = (
    "from skill_magics.notebook import waiting\n"
    "print(waiting.subshell_count(get_ipython().kernel),"
    " waiting.choose(get_ipython(), in_coroutine=False).value)"
)


def test_strategy_follows_whether_a_subshell_exists() -> None:
    version = kernel_ipykernel_version()
    with start_kernel() as k:
        r = k.execute(PROBE, allow_stdin=True)
        assert r.ok, r.error_text
        before = r.stdout.split()
        if version < (7,):
            assert before == ["None", "pump"], "ipykernel 6.x: no subshells; pumping"
            return
        k.comms_subshell()  # as JupyterLab's widget manager does at start-up
        r = k.execute(PROBE, allow_stdin=True)
        assert r.ok, r.error_text
        after = r.stdout.split()
        assert (before[0], after[0]) == ("0", "1")
        if version < (7, 4):
            assert (before[1], after[1]) == ("nonblocking", "thread")
        else:  # >= 7.4 waits by awaiting; a synchronous call never blocks
            assert (before[1], after[1]) == ("nonblocking", "nonblocking")
