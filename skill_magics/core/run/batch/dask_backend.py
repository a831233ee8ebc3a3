"""Dask as a batch backend: a ``distributed.Client`` or a scheduler address.

Imported only when a batch is given one (``dask[distributed]``, the ``[dask]`` extra): nothing
here imports ``distributed`` at module level. docs/architecture.md, *Batch runs*: the shared
part of the batch (the packed skill, the settings) is scattered to every worker once; each item
is one task running :func:`~skill_magics.core.run.batch.ship.run_shipped_item`; a
``distributed.Event`` named after the batch is the cancel signal the workers poll.

Example (not run as a doctest: it needs a Dask cluster)::

    from distributed import Client
    manager.map("unit-converter", "convert", rows, pool=Client("tcp://sched:8786"))
"""

from __future__ import annotations

from typing import Any

from skill_magics.core.base.errors import SkillMagicsError


def is_dask_client(obj: Any) -> bool:
    """A ``distributed.Client``, recognised without importing distributed."""
    cls = type(obj)
    return cls.__name__ == "Client" and cls.__module__.split(".")[0] == "distributed"


def connect(address: str) -> Any:
    """A Client for a scheduler address (``tcp://host:8786``); one-line error without Dask."""
    try:
        from distributed import Client
    except ImportError:
        raise SkillMagicsError(
            f"pool={address!r} needs Dask: pip install 'dask[distributed]'"
        ) from None
    try:
        return Client(address, timeout="10s")
    except OSError as exc:
        raise SkillMagicsError(
            f"Could not connect to the Dask scheduler at {address}: {exc}; check the address "
            "(e.g. tcp://host:8786) and that the scheduler runs"
        ) from None


class DaskCancel:
    """The batch's cancel signal on the cluster (a ``distributed.Event``); picklable."""

    def __init__(self, name: str, client: Any = None) -> None:
        self.name = name
        self._client = client  # the batch's Client (None: the default one); never pickled
        self._event: Any = None

    def _get(self) -> Any:
        if self._event is None:
            from distributed import Event

            # On the batch's own cluster: the default client is the newest one, which may
            # be another cluster's (two clients in one process).
            self._event = Event(self.name, client=self._client)
        return self._event

    def bind(self) -> None:
        """Create the Event now (in a task's thread, where the worker's client is known),
        so a watcher thread can poll it afterwards."""
        from distributed import Event, get_client

        self._event = Event(self.name, client=get_client())

    def is_set(self) -> bool:
        try:
            return bool(self._get().is_set())
        except Exception:  # noqa: BLE001 - scheduler gone: treat as cancelled, fail safe
            return True

    def wait(self, timeout: float) -> bool:
        try:
            return bool(self._get().wait(timeout))
        except Exception:  # noqa: BLE001
            return True

    def set(self) -> None:
        self._get().set()

    def clear(self) -> None:
        try:
            self._get().clear()
        except Exception:  # noqa: BLE001 - best effort cleanup on the scheduler
            pass

    def __reduce__(self) -> Any:
        return (DaskCancel, (self.name,))


class DaskSubmitter:
    """Submits shipped items to a Client; futures support ``add_done_callback``."""

    def __init__(self, client: Any) -> None:
        self.client = client

    @property
    def slots(self) -> int:
        """Threads across the cluster's workers (how many items can run at once)."""
        try:
            return max(1, sum(self.client.nthreads().values()))
        except Exception:  # noqa: BLE001
            return 1

    def describe(self) -> str:
        try:
            n = len(self.client.nthreads())
        except Exception:  # noqa: BLE001
            n = 0
        return f"dask ({n} workers)"

    def scatter(self, value: Any) -> Any:
        return self.client.scatter(value, broadcast=True, hash=False)

    def submit(self, fn: Any, *args: Any, key: str) -> Any:
        return self.client.submit(fn, *args, key=key, pure=False, retries=0)


__all__ = ["DaskCancel", "DaskSubmitter", "connect", "is_dask_client"]
