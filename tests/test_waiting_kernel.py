"""waiting.choose() and the comm relay's probe inside real kernels (the matrix runs each
ipykernel version): ``relay.available`` reads ipykernel internals, so check it on the real
thing.

A blocking wait on ipykernel 7.x gets the click through the relay whether or not the
frontend opened a subshell (JupyterLab does, VS Code never does), so the strategy must not
change when one appears.
"""

from __future__ import annotations

import pytest
from kernel_fixtures import kernel_ipykernel_version, start_kernel

pytestmark = pytest.mark.kernel

PROBE = (
    "from skill_magics.notebook.approval import relay, waiting\n"
    "print(relay.available(get_ipython().kernel),"
    " waiting.choose(get_ipython(), in_coroutine=False).value,"
    " waiting.choose(get_ipython(), in_coroutine=True).value)"
)


def test_strategy_does_not_depend_on_subshells() -> None:
    version = kernel_ipykernel_version()
    with start_kernel() as k:
        r = k.execute(PROBE, allow_stdin=True)
        assert r.ok, r.error_text
        before = r.stdout.split()
        if version < (7,):
            assert before == ["False", "pump", "pump"], "ipykernel 6.x: no relay; pumping"
            return
        k.comms_subshell()  # as JupyterLab does when its widget manager starts
        r = k.execute(PROBE, allow_stdin=True)
        assert r.ok, r.error_text
        assert r.stdout.split() == before
        awaited = "await" if version >= (7, 4) else "relay"
        assert before == ["True", "relay", awaited]
