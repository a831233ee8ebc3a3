"""The real spans: the one module of the package that imports OpenTelemetry (the ``[otel]``
extra), loaded only when tracing turns on (core/trace/__init__.py).

The tracer comes from the provider given, else the process's own when code already set one,
else a provider of ours: resource ``service.name`` from ``OTEL_SERVICE_NAME`` (default
``skill-magics``), a batch span processor and the exporters ``OTEL_TRACES_EXPORTER`` names
(``otlp``, the default: OTLP over HTTP/protobuf to ``OTEL_EXPORTER_OTLP_ENDPOINT``, read by
the exporter itself; ``console``). A provider of ours is shut down when tracing turns off.

Every text that goes into a span (attributes, status messages) has every known secret value
masked first (core/base/secrets.py: ``redact_known``) and is cut to :data:`MAX_TEXT`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from skill_magics.core.base.namelist import name_list
from skill_magics.core.base.secrets import redact_known
from skill_magics.core.base.version import VERSION
from skill_magics.core.trace.switch import provider_set

logger = logging.getLogger("skill_magics.trace")

T = TypeVar("T")
MAX_TEXT = 512  # characters of one text attribute (names, paths, one-line messages)
MAX_CONTENT = 8192  # characters of argument or output content, when a run opts in
SERVICE = "skill-magics"
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
    secret value FIRST, then cut to MAX_CONTENT (lines kept)."""
    masked = redact_known(text)
    return masked if len(masked) <= MAX_CONTENT else masked[: MAX_CONTENT - 1] + "…"


def one_line(text: str) -> str:
    """``text`` redacted, its first line, cut to MAX_TEXT (redaction before the cut)."""
    masked = redact_known(text)
    line = masked.strip().splitlines()[0] if masked.strip() else ""
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
        if value is not None:
            self._span.set_attribute(key, value)

    def update(self, attributes: Mapping[str, Any]) -> None:
        for key, value in attributes.items():
            self.set(key, value)

    def fail(self, message: str) -> None:
        self._span.set_status(Status(StatusCode.ERROR, one_line(message)))

    def set_content(self, key: str, text: str) -> None:
        """Content (an argument, an output) a run opted into: redacted, then cut."""
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
        force = getattr(self.provider, "force_flush", None)
        return bool(force(int(timeout_s * 1000))) if callable(force) else True

    def close(self) -> None:
        self.flush(5.0)
        if self.owned:
            self.provider.shutdown()


def _own_provider() -> tuple[Any, str]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    service = os.environ.get("OTEL_SERVICE_NAME", "").strip() or SERVICE
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
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

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            said.append("OTLP/HTTP")
        else:
            logger.warning(
                "OTEL_TRACES_EXPORTER %r is not one skill-magics makes (otlp, console)", name
            )
    return provider, f"service {service!r}, exporting to {', '.join(said) or 'nothing'}"


__all__ = ["Backend", "OtelSpan", "clean", "content", "failure", "one_line"]
