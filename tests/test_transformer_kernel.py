"""%%skillrun as the body of another cell magic, in a real kernel (the await rewrite must not
apply there: IPython runs such a body outside the kernel's coroutine)."""

from __future__ import annotations

import pytest
from kernel_fixtures import start_kernel

from skill_magics.core.manager import examples_dir

pytestmark = pytest.mark.kernel

CONVERT = "%%skillrun unit-converter.convert -o {out} -- --value 3 --from km --to mi\n"


def test_skillrun_inside_capture_and_time_runs(tmp_path):
    env = {"SKILL_MAGICS_PATH": str(examples_dir()), "SKILL_MAGICS_AUTO_APPROVE": "*"}
    with start_kernel(env=env, cwd=tmp_path) as k:
        assert k.execute("%load_ext skill_magics", allow_stdin=True).ok
        r = k.execute("%%capture cap\n" + CONVERT.format(out="a"), allow_stdin=True)
        assert r.ok, r.error_text
        r = k.execute("%%time\n" + CONVERT.format(out="b"), allow_stdin=True)
        assert r.ok, r.error_text
        assert "Wall time" in r.stdout
        r = k.execute("print(a.status, b.status, a.json()['result'], len(cap.outputs))")
        assert r.ok, r.error_text
        assert r.stdout.split() == ["completed", "completed", "1.864114", "1"]
