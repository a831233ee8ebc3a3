"""Traces of what skills did, through the OpenTelemetry API: a no-op facade the rest of the
package calls (docs/tracing.md; docs/architecture.md, *Traces*).

The instrumentation style of opentelemetry-python-contrib: call sites call this facade (and
the span helpers of :mod:`.hooks`), which returns one shared do-nothing span while tracing is
off, so the package imports no ``opentelemetry`` module and pays a function call per traced
site. Tracing turns on:

- when the standard variables ask for it (``OTEL_EXPORTER_OTLP_ENDPOINT``,
  ``OTEL_TRACES_EXPORTER``, ... : :mod:`.switch`), or code in the process already set a
  tracer provider; looked at again at every root span (a run, a batch, an install);
- with :func:`turn` (``%skills trace on|off|auto``), which wins over the variables.

Then :mod:`.otel` (the only module that imports OpenTelemetry; the ``[otel]`` extra) makes
real spans: the process's tracer provider when one is set, else one of its own exporting
OTLP/HTTP (or ``console``) as the variables say. Every text attribute and status message is
redacted of known secret values before it is recorded (core/base/secrets.py).

Example (tracing off: nothing is recorded, nothing imported)::

    with span("work", {"gen_ai.skill.name": "csv-profiler"}) as s:
        s.set("skill_magics.status", "completed")
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from skill_magics.core.base.errors import TracingUnavailable
from skill_magics.core.base.extras import install_hint
from skill_magics.core.trace.noop import NOOP, NoSpan
from skill_magics.core.trace.switch import asked_by_env, provider_set

logger = logging.getLogger("skill_magics.trace")

T = TypeVar("T")
Span = NoSpan  # the API every span has (.otel.OtelSpan has the same methods)

# The environment variables a script gets for its run's span (W3C Trace Context).
RUN_VARS = frozenset({"TRACEPARENT", "TRACESTATE"})


_lock = threading.Lock()
_mode: bool | None = None  # %skills trace on (True), off (False), auto (None)
_backend: Any = None  # the live .otel.Backend while tracing is on, else None
_auto_failed = False  # the variables asked, but the SDK is missing: said once, not again
# Reading the variables costs tens of microseconds (os.environ under load): a root span
# reads them again only when this long has passed since the last look.
RECHECK_S = 1.0
_checked_at = -RECHECK_S


def enabled() -> bool:
    """Is tracing on now?"""
    return _backend is not None


def refresh(*, now: bool = False) -> bool:
    """Decide again whether tracing is on (each root span calls it; the variables are read
    again at most every :data:`RECHECK_S` seconds, ``now``: at once); True when on."""
    global _backend, _auto_failed, _checked_at
    if _mode is not None:
        return _backend is not None
    moment = time.monotonic()
    if not now and moment - _checked_at < RECHECK_S:
        return _backend is not None
    _checked_at = moment
    wanted = asked_by_env(os.environ) or provider_set()
    if wanted == (_backend is not None):
        return wanted
    with _lock:
        if wanted and _backend is None and not _auto_failed:
            try:
                _backend = _make_backend(None)
            except TracingUnavailable as exc:
                _auto_failed = True
                logger.warning("%s", exc)
        elif not wanted and _backend is not None:
            _drop(wait=False)  # a run is starting: it never waits for a collector
    return _backend is not None


def turn(state: str | bool | None, *, provider: Any = None) -> str:
    """``"on"`` (True), ``"off"`` (False) or ``"auto"`` (None: the variables decide);
    ``provider``: an OpenTelemetry TracerProvider to use (tests, a caller's own). Returns
    :func:`status`. Raises TracingUnavailable (one line, the fix) when the SDK is missing."""
    global _mode, _backend, _auto_failed
    words = {"on": True, "off": False, "auto": None, True: True, False: False, None: None}
    if state not in words:
        raise ValueError(f"tracing is 'on', 'off' or 'auto', not {state!r}")
    mode = words[state]
    backend = _make_backend(provider) if mode else None  # raises before anything changed
    with _lock:
        _drop()
        _mode, _backend, _auto_failed = mode, backend, False
    if _mode is None:
        refresh(now=True)
    return status()


def status() -> str:
    """One line: on or off, and why."""
    how = {True: "turned on", False: "turned off", None: "auto"}[_mode]
    if _backend is None:
        return (
            f"tracing is off ({how}; on when OTEL_EXPORTER_OTLP_ENDPOINT or "
            "OTEL_TRACES_EXPORTER is set, or with %skills trace on)"
        )
    return f"tracing is on ({how}): {_backend.describe()}"


def flush(timeout_s: float = 10.0) -> bool:
    """Export every finished span now, waiting at most ``timeout_s`` whatever the collector
    does (tests, before a kernel ends); True when all were taken."""
    backend = _backend
    return True if backend is None else bool(backend.flush(timeout_s))


def span(
    name: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    client: bool = False,
    parent: Any = None,
) -> Any:
    """A span, child of the current one (``with span(...) as s:`` makes it current), or
    of ``parent`` (a context from :func:`capture`); the shared no-op span while tracing is
    off. ``client``: a call to another service (a model API, an MCP server)."""
    backend = _backend
    if backend is None:
        return NOOP
    return backend.start(name, attributes, client=client, parent=parent)


def capture() -> Any:
    """The current context, to parent spans started later on another thread (None: off)."""
    backend = _backend
    return None if backend is None else backend.capture()


def content_wanted() -> bool:
    """May the current span hold content (argument values, output)? Only while a call
    that opted in runs (``trace_content=True``, ``--trace-content``); never by default."""
    backend = _backend
    return backend is not None and backend.content_here()


@contextlib.contextmanager
def joined(carrier: Mapping[str, str] | None) -> Iterator[None]:
    """Spans made inside are children of the W3C context in ``carrier`` (``TRACEPARENT``
    from another process: a batch item on a process pool or a Dask worker)."""
    backend = _backend
    if backend is None or not carrier:
        yield
        return
    token = backend.attach_remote(carrier)
    try:
        yield
    finally:
        backend.detach(token)


def root(name: str, attributes: Mapping[str, Any] | None = None) -> Any:
    """The span of a call (a run, a batch, an install): :func:`span` after :func:`refresh`.
    A child of the current span when there is one (an agent's turn, the caller's own)."""
    if _mode is False:
        return NOOP
    if not refresh():
        return NOOP
    return span(name, attributes)


def bind(
    work: Callable[..., T], name: str = "", attributes: Mapping[str, Any] | None = None
) -> Callable[..., T]:
    """``work`` for another thread, run in the current span's context (in a span ``name``
    of its own when given): a batch item in a pool. ``work`` itself while off."""
    backend = _backend
    if backend is None:
        return work
    return backend.bind(work, name, attributes)


def child_env(env: Mapping[str, str]) -> Mapping[str, str]:
    """``env`` with the current span's ``TRACEPARENT`` (and ``TRACESTATE``) for a child
    process, so a script's own spans join the run's trace; ``env`` itself while off."""
    backend = _backend
    if backend is None:
        return env
    found = backend.current_traceparent()
    if not found:
        return env
    return {**{k: v for k, v in env.items() if k not in RUN_VARS}, **found}


def _forked() -> None:
    """In a process forked from this one (a process pool's worker): the tracer came along
    but its exporter's thread did not, and a forked worker may end without flushing, so
    spans made there could be lost while a script points at them. The child starts with
    tracing decided again by its own variables (``off`` stays off)."""
    global _backend, _mode, _auto_failed, _checked_at
    _backend = None
    _mode = None if _mode is True else _mode
    _auto_failed = False
    _checked_at = -RECHECK_S


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def _make_backend(provider: Any) -> Any:
    try:
        from skill_magics.core.trace import otel

        return otel.Backend(provider)
    except ImportError as exc:  # the API, the SDK or the exporter is missing
        hint = install_hint("otel", "opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http")
        raise TracingUnavailable(
            f"Traces need OpenTelemetry's SDK, which is not installed ({exc.name or exc}): "
            f"{hint}, then %skills trace on"
        ) from None


def _drop(wait: bool = True) -> None:
    """Stop tracing: flush and shut down a provider of our own (called under _lock), for
    at most ``otel.CLOSE_S`` whatever the collector does; ``wait=False``: in the background."""
    global _backend
    backend, _backend = _backend, None
    if backend is None:
        return
    if wait:
        backend.close()
    else:
        threading.Thread(target=backend.close, name="skill-magics-trace-close", daemon=True).start()


__all__ = [
    "NOOP",
    "RUN_VARS",
    "Span",
    "bind",
    "capture",
    "child_env",
    "content_wanted",
    "enabled",
    "flush",
    "joined",
    "refresh",
    "root",
    "span",
    "status",
    "turn",
]
