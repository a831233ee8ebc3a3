"""The real spans: the one module of the package that imports OpenTelemetry (the ``[otel]``
extra), loaded only when tracing turns on (core/trace/__init__.py).

The tracer comes from the provider given, else the process's own when code already set one,
else a provider of ours: resource ``service.name`` from ``OTEL_SERVICE_NAME`` (default
``skill-magics``), a batch span processor and the exporters ``OTEL_TRACES_EXPORTER`` names
(``otlp``, the default: OTLP over HTTP/protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``, read by
the exporter itself; ``console``). A provider of ours is shut down when tracing turns off.

Every text that goes into a span (attributes, status messages) has every known secret value
masked first (core/base/secrets.py: ``redact_known``), its control and bidi characters shown
as escapes (core/base/visible.py) and is cut to :data:`MAX_TEXT`.

A collector never holds the kernel up: spans are exported on the SDK's own thread; what
waits for it here (:meth:`Backend.flush`, turning tracing off, the process's exit) waits on a
daemon thread for a bounded time (:data:`CLOSE_S`, :data:`EXIT_S`) and gives up, whatever
the collector does (hangs, trickles its answer); a provider of ours reads at most
:data:`MAX_REPLY` bytes of each answer.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from skill_magics.core.base.namelist import name_list
from skill_magics.core.base.secrets import redact_known
from skill_magics.core.base.version import VERSION
from skill_magics.core.base.visible import visible
from skill_magics.core.trace.switch import provider_set

logger = logging.getLogger("skill_magics.trace")

T = TypeVar("T")
MAX_TEXT = 512  # characters of one text attribute (names, paths, one-line messages)
MAX_CONTENT = 8192  # characters of argument or output content, when a run opts in
SERVICE = "skill-magics"
CLOSE_S = 3.0  # turning tracing off: how long to wait for the last spans to be taken
EXIT_S = 3.0  # the process's exit (a kernel shutting down): the same, for a provider of ours
MAX_REPLY = 64 * 1024  # bytes of a collector's answer read; the rest is not (the connection closes)
# Variables naming a requests session of the user's own for the OTLP exporter (left as it is).
CREDENTIAL_VARS = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)
_PROPAGATOR = TraceContextTextMapPropagator()


def clean(value: Any) -> Any:
    """An attribute value OpenTelemetry takes, with secrets masked; None: leave it out."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, Sequence):
        items = [clean(v) for v in value]
        kept = [v for v in items if v is not None]
        if all(isinstance(v, str) for v in kept) or all(type(v) is int for v in kept):
            return kept
        return [str(v) for v in kept]
    return one_line(str(value))


def content(text: str) -> str:
    """Argument or output content for a run that opted in: ``text`` redacted of every known
    secret value FIRST, its control and bidi characters made visible (lines and tabs kept),
    then cut to MAX_CONTENT."""
    shown = visible(redact_known(text), keep="\n\t")
    return shown if len(shown) <= MAX_CONTENT else shown[: MAX_CONTENT - 1] + "…"


def one_line(text: str) -> str:
    """``text`` redacted, its first line with control and bidi characters made visible
    (a terminal escape, a U+202E), cut to MAX_TEXT (redaction before everything)."""
    masked = redact_known(text).strip()
    line = visible(masked.split("\n", 1)[0].strip()) if masked else ""
    return line if len(line) <= MAX_TEXT else line[: MAX_TEXT - 1] + "…"


class OtelSpan:
    """An OpenTelemetry span behind the facade's API (noop.NoSpan's methods)."""

    __slots__ = ("_span", "_token", "_ended", "_on_end")
    recording = True

    def __init__(self, span: Any) -> None:
        self._span = span
        self._token: Any = None
        self._ended = False
        self._on_end: Callable[[], None] | None = None

    def __enter__(self) -> OtelSpan:
        self._token = context_api.attach(trace_api.set_span_in_context(self._span))
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        if error is not None:
            self.fail(failure(error))
        if self._token is not None:
            context_api.detach(self._token)
            self._token = None
        self.end()

    def set(self, key: str, value: Any) -> None:
        value = clean(value)
        if value is not None and not self._ended:
            self._span.set_attribute(key, value)

    def update(self, attributes: Mapping[str, Any]) -> None:
        for key, value in attributes.items():
            self.set(key, value)

    def fail(self, message: str) -> None:
        if not self._ended:  # an ended span keeps the status it ended with
            self._span.set_status(Status(StatusCode.ERROR, one_line(message)))

    def set_content(self, key: str, text: str) -> None:
        """Content (an argument, an output) a run opted into: redacted, then cut."""
        if not self._ended:
            self._span.set_attribute(key, content(text))

    def end(self) -> None:
        if not self._ended:
            self._ended = True
            self._span.end()
            if self._on_end is not None:
                self._on_end()

    def within(self, work: Callable[[], T]) -> Callable[[], T]:
        def run() -> T:
            token = context_api.attach(trace_api.set_span_in_context(self._span))
            try:
                return work()
            except BaseException as exc:
                self.fail(failure(exc))
                self.end()
                raise
            finally:
                context_api.detach(token)

        return run

    def traceparent(self) -> dict[str, str]:
        return traceparent_of(trace_api.set_span_in_context(self._span))


def failure(error: BaseException) -> str:
    """The one-line status message of an exception (its type and first line)."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def traceparent_of(context: Any) -> dict[str, str]:
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=context)
    out = {}
    if carrier.get("traceparent"):
        out["TRACEPARENT"] = carrier["traceparent"]
        if carrier.get("tracestate"):
            out["TRACESTATE"] = carrier["tracestate"]
    return out


class Backend:
    """The tracer the facade uses while tracing is on."""

    def __init__(self, provider: Any = None) -> None:
        self.owned = False
        if provider is not None:
            self.source = "the provider given"
        elif provider_set():
            provider = trace_api.get_tracer_provider()
            self.source = "the process's tracer provider"
        else:
            provider, self.source = _own_provider()
            self.owned = True
        self.provider = provider
        self.tracer = provider.get_tracer("skill_magics", VERSION)
        # Trace ids of calls that opted into content (argument values, output) while they run.
        self.content_traces: set[int] = set()
        # The one thread flushing now (a collector that hangs holds it: never a second one).
        self._flushing: threading.Thread | None = None
        self._flushed = False
        self._flush_lock = threading.Lock()
        if self.owned:  # our provider's last spans at exit, for a bounded time (not the SDK's 30 s)
            atexit.register(self._at_exit)

    def describe(self) -> str:
        return self.source

    def start(
        self,
        name: str,
        attributes: Mapping[str, Any] | None,
        *,
        client: bool,
        parent: Any = None,
    ) -> OtelSpan:
        kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
        span = OtelSpan(self.tracer.start_span(one_line(name), context=parent, kind=kind))
        if attributes:
            span.update(attributes)
        return span

    def capture(self) -> Any:
        """The current context (a span's parent for work started later, elsewhere)."""
        return context_api.get_current()

    def want_content(self, span: OtelSpan) -> None:
        """The spans of ``span``'s trace may hold content until ``span`` ends."""
        trace_id = span._span.get_span_context().trace_id
        self.content_traces.add(trace_id)
        span._on_end = lambda: self.content_traces.discard(trace_id)

    def content_here(self) -> bool:
        """Did the call the current span belongs to opt into content?"""
        if not self.content_traces:
            return False
        return trace_api.get_current_span().get_span_context().trace_id in self.content_traces

    def attach_remote(self, carrier: Mapping[str, str]) -> Any:
        """Make the W3C context in ``carrier`` (TRACEPARENT, TRACESTATE) current; a token."""
        found = {k.lower(): v for k, v in carrier.items()}
        return context_api.attach(_PROPAGATOR.extract(found))

    def detach(self, token: Any) -> None:
        context_api.detach(token)

    def bind(
        self, work: Callable[..., T], name: str, attributes: Mapping[str, Any] | None
    ) -> Callable[..., T]:
        parent = context_api.get_current()

        def run(*args: Any, **kwargs: Any) -> T:
            token = context_api.attach(parent)
            try:
                if not name:
                    return work(*args, **kwargs)
                with self.start(name, attributes, client=False):
                    return work(*args, **kwargs)
            finally:
                context_api.detach(token)

        return run

    def current_traceparent(self) -> dict[str, str]:
        if not trace_api.get_current_span().get_span_context().is_valid:
            return {}
        return traceparent_of(context_api.get_current())

    def flush(self, timeout_s: float) -> bool:
        """Export what has ended, waiting at most ``timeout_s`` (the SDK's own flush waits
        for its exporter, however long a collector takes): True when it was all taken."""
        force = getattr(self.provider, "force_flush", None)
        if not callable(force):
            return True
        with self._flush_lock:
            flushing = self._flushing
            if flushing is None or not flushing.is_alive():

                def run() -> None:
                    self._flushed = False
                    try:
                        self._flushed = bool(force(int(timeout_s * 1000)))
                    except Exception:  # noqa: BLE001 - a collector's trouble is not the caller's
                        logger.debug("flushing spans failed", exc_info=True)

                flushing = self._flushing = threading.Thread(
                    target=run, name="skill-magics-trace-flush", daemon=True
                )
                flushing.start()
        flushing.join(max(timeout_s, 0.0))
        if flushing.is_alive():
            logger.warning(
                "tracing: the collector did not take the spans within %g s (spans may be "
                "lost); check OTEL_EXPORTER_OTLP_ENDPOINT",
                timeout_s,
            )
            return False
        return self._flushed

    def close(self, timeout_s: float = CLOSE_S) -> None:
        """Stop: the spans that ended flushed and a provider of ours shut down, together
        within ``timeout_s`` (what is not exported by then is dropped)."""
        atexit.unregister(self._at_exit)
        deadline = time.monotonic() + timeout_s
        self.flush(timeout_s)
        if not self.owned:
            return
        # Its worker stops retrying at once; a request under way is left to its daemon thread.
        stop = threading.Thread(
            target=self.provider.shutdown, name="skill-magics-trace-shutdown", daemon=True
        )
        stop.start()
        stop.join(max(deadline - time.monotonic(), 0.0))

    def _at_exit(self) -> None:
        self.close(EXIT_S)


def _own_provider() -> tuple[Any, str]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    service = os.environ.get("OTEL_SERVICE_NAME", "").strip() or SERVICE
    # shutdown_on_exit=False: the SDK's exit handler waits up to 30 s for a collector;
    # Backend registers its own, bounded (EXIT_S).
    provider = TracerProvider(
        resource=Resource.create({"service.name": service}), shutdown_on_exit=False
    )
    names = [n.lower() for n in name_list(os.environ.get("OTEL_TRACES_EXPORTER") or "otlp")]
    said = []
    for name in names:
        if name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
            said.append("console")
        elif name == "otlp":
            protocol = (
                os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf"
            )
            if protocol.strip() != "http/protobuf":
                logger.warning(
                    "OTLP protocol %r is not installed with skill-magics[otel]: sending "
                    "http/protobuf (point OTEL_EXPORTER_OTLP_ENDPOINT at port 4318)",
                    protocol,
                )
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(session=_capped_session())
            provider.add_span_processor(BatchSpanProcessor(exporter))
            said.append("OTLP/HTTP")
        else:
            logger.warning(
                "OTEL_TRACES_EXPORTER %r is not one skill-magics makes (otlp, console)", name
            )
    return provider, f"service {service!r}, exporting to {', '.join(said) or 'nothing'}"


def _capped_session() -> Any:
    """A requests session reading at most :data:`MAX_REPLY` bytes of each answer (an OTLP
    answer is a few bytes; a collector answering gigabytes is not read into the kernel);
    None (the exporter's own) when a credential provider variable names a session."""
    if any(os.environ.get(name, "").strip() for name in CREDENTIAL_VARS):
        return None
    import requests

    session = requests.Session()
    session.hooks["response"].append(_cap_reply)
    return session


def _cap_reply(response: Any, *args: Any, **kwargs: Any) -> Any:
    """A response hook (it runs before requests reads the body): read the body here, at
    most MAX_REPLY bytes; more than that closes the connection instead of reading it."""
    raw = getattr(response, "raw", None)
    if raw is None or getattr(response, "_content", None) is not False:
        return response
    try:
        body = raw.read(MAX_REPLY + 1, decode_content=True) or b""
    except Exception:  # noqa: BLE001 - a broken answer is an empty one
        body = b""
    if len(body) > MAX_REPLY:
        raw.close()  # the rest is never read
    else:
        release = getattr(raw, "release_conn", None)
        if callable(release):
            release()
    response._content = body[:MAX_REPLY]
    response._content_consumed = True
    return response


__all__ = ["Backend", "OtelSpan", "clean", "content", "failure", "one_line"]
