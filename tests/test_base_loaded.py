"""``loaded(name)``: a module another thread is still importing is handed over whole.

The seam: the side panel's thread lists MCP skills (``core/mcp/listed.py``) while a cell's
thread imports the MCP host; ``sys.modules.get`` gave the first a module whose body had not
run yet ("partially initialized module ... has no attribute 'servers_of'").
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from skill_magics.core.base.loaded import loaded


def test_a_module_being_imported_is_waited_for(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "slow_to_load.py").write_text("import time\ntime.sleep(0.5)\nWHOLE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_to_load", raising=False)
    importer = threading.Thread(target=__import__, args=("slow_to_load",))
    importer.start()
    try:
        deadline = time.monotonic() + 10
        while "slow_to_load" not in sys.modules:  # its body runs now
            assert time.monotonic() < deadline, "the import never started"
            time.sleep(0.001)
        half = sys.modules["slow_to_load"]
        assert not hasattr(half, "WHOLE")  # what sys.modules.get would have handed over
        module = loaded("slow_to_load")
        assert module is not None and module.WHOLE is True
    finally:
        importer.join(10)
        sys.modules.pop("slow_to_load", None)


def test_a_module_never_imported_is_not_imported() -> None:
    assert loaded("skill_magics.core.mcp.serving_nonexistent") is None
    name = "json.tool"
    was = sys.modules.pop(name, None)
    try:
        assert loaded(name) is None and name not in sys.modules
    finally:
        if was is not None:
            sys.modules[name] = was
