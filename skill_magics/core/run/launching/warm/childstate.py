"""The state a cold child would inherit from this process now, which a warm run's spec
carries to its forked child (the server's own is that of when it started): the umask, the
resource limits, the nice value and CPU affinity; :func:`run_spec` is the whole spec."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skill_magics.core.run.launching.prepared import PreparedRun
    from skill_magics.core.run.launching.warm.eligible import Target


def run_spec(prepared: PreparedRun, target: Target, env: Mapping[str, str]) -> dict[str, Any]:
    argv = [target.target if not target.is_module else "-m", *prepared.argv]
    spec = {
        "argv": argv,
        "orig_argv": list(prepared.command),
        "cwd": os.fspath(prepared.cwd),
        "env": dict(env),
        "module": target.is_module,
        "target": target.target,
        "umask": current_umask(),
        "rlimits": current_rlimits(),
        "sched": current_sched(),
    }
    return spec


def current_umask() -> int:
    """This process's umask, read without changing it (a cold child inherits it)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # pragma: no cover - kernels before 4.7
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


_UMASK_LOCK = threading.Lock()


def current_rlimits() -> list[tuple[int, int, int]]:
    """This process's resource limits now, which a cold child inherits: (which, soft,
    hard) for each (the server's are those of when it started)."""
    import resource

    out = []
    for which in _RLIMITS:
        try:
            soft, hard = resource.getrlimit(which)
        except (OSError, ValueError):
            continue
        out.append((which, soft, hard))
    return out


def current_sched() -> dict[str, Any]:
    """This process's nice value and CPU affinity now (a cold child inherits them; a
    notebook or a Dask worker may have changed them since the server started)."""
    out: dict[str, Any] = {}
    try:
        out["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    except OSError:
        pass
    try:
        out["cpus"] = sorted(os.sched_getaffinity(0))
    except OSError:
        pass
    return out


def _rlimit_ids() -> tuple[int, ...]:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return ()
    return tuple(sorted({getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_")}))


_RLIMITS = _rlimit_ids()


__all__ = ["current_rlimits", "current_sched", "current_umask", "run_spec"]
