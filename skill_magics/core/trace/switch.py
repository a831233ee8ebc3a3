"""Is tracing on? The standard OpenTelemetry variables, a tracer provider someone already set,
or ``%skills trace on|off`` (which wins) decide; nothing here imports OpenTelemetry.

On when any of :data:`ASKING` is set (``OTEL_TRACES_EXPORTER=none`` and
``OTEL_SDK_DISABLED=true`` say off), or when the process already imported
``opentelemetry.trace`` and set a real tracer provider (the API's global, read without
importing anything new).

>>> asked_by_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
True
>>> asked_by_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"})
False
>>> asked_by_env({"OTEL_TRACES_EXPORTER": "none"})
False
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

# The variables that ask for traces (the OpenTelemetry SDK's environment specification).
ASKING = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SERVICE_NAME",
)


def asked_by_env(environ: Mapping[str, str]) -> bool:
    """Do the standard variables ask for traces?"""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return any(environ.get(name, "").strip() for name in ASKING)


def provider_set() -> bool:
    """Has code in this process set a tracer provider (not the API's proxy or no-op)?
    Read from the API's module only when something already imported it."""
    api = sys.modules.get("opentelemetry.trace")
    if api is None:
        return False
    provider = getattr(api, "_TRACER_PROVIDER", None)
    if provider is None:
        return False
    return type(provider).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider")


__all__ = ["ASKING", "asked_by_env", "provider_set"]
