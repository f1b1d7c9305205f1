"""Sending spans to an OpenTelemetry collector over OTLP, configured as OpenTelemetry is.

The standard environment variables decide: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_ENDPOINT`` (set: export; ``subagents run --otel`` exports to the default
``http://localhost:4318`` without them), ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL``
(``http/protobuf``, the default, or ``grpc``), ``OTEL_EXPORTER_OTLP_(TRACES_)HEADERS``,
``OTEL_SERVICE_NAME`` (default ``subagents``) and ``OTEL_SDK_DISABLED``. Message content
(tool arguments and results) is captured only with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (or ``--otel-content``), redacted.

There is no ``config.toml`` key on purpose: a project's file could otherwise send every run
(its content too) to a collector of its choosing.

The exporters are the official ones (``opentelemetry-exporter-otlp-proto-http`` / ``-grpc``,
``pip install 'subagents[otel]'``), imported only when exporting; they send from their own
thread, so a slow collector never holds up the run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from subagents.errors import TracingError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from subagents.redaction import Redactor
    from subagents.runtime.events import EventBus
    from subagents.tracing.otel_live import LiveSpans

__all__ = ["LiveExport", "OTLPExport", "capture_content", "otlp_provider", "start_live_export"]

_PROTOCOLS = ("http/protobuf", "grpc")
_DEFAULT_HTTP = "http://localhost:4318"
_DEFAULT_GRPC = "http://localhost:4317"
_EXPORT_TIMEOUT_SECONDS = 5.0  # a collector that is down delays the end of a run this long at most
_INSTALL_HINT = "run: pip install 'subagents[otel]'"


def _setting(environ: Mapping[str, str], name: str) -> str:
    """``OTEL_EXPORTER_OTLP_TRACES_{name}``, else ``OTEL_EXPORTER_OTLP_{name}``, else ""."""
    return (
        environ.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}")
        or environ.get(f"OTEL_EXPORTER_OTLP_{name}")
        or ""
    ).strip()


def capture_content(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    value = env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    return value.strip().lower() in ("1", "true", "yes")


@dataclass(slots=True)
class OTLPExport:
    """A tracer provider that exports over OTLP, and what became of its exports."""

    provider: TracerProvider
    endpoint: str
    sent: int = 0
    failed: int = 0

    def problem(self) -> str | None:
        """What to tell the person when spans did not get through, else ``None``."""
        if not self.failed:
            return None
        return (
            f"{self.failed} of {self.sent + self.failed} spans did not reach the OpenTelemetry "
            f"collector at {self.endpoint} - check that it runs and that "
            "OTEL_EXPORTER_OTLP_ENDPOINT (and OTEL_EXPORTER_OTLP_PROTOCOL) name it"
        )

    def shutdown(self) -> None:
        self.provider.shutdown()


def otlp_provider(
    environ: Mapping[str, str] | None = None, *, force: bool = False
) -> OTLPExport | None:
    """A tracer provider exporting over OTLP as the environment says; ``None`` when nothing
    asks for export (no endpoint and not ``force``) or ``OTEL_SDK_DISABLED`` is true."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if not _setting(env, "ENDPOINT") and not force:
        return None
    protocol = _setting(env, "PROTOCOL") or "http/protobuf"
    if protocol not in _PROTOCOLS:
        raise TracingError(
            f"OTLP protocol {protocol!r} is not supported here.",
            hint="set OTEL_EXPORTER_OTLP_PROTOCOL to http/protobuf or grpc",
        )
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        exporter = _exporter(protocol, env)
    except ImportError as error:
        raise TracingError(
            f"OTLP export ({protocol}) needs the OpenTelemetry exporter, which is not "
            f"installed ({error.name}).",
            hint=_INSTALL_HINT,
        ) from None
    import logging

    from subagents._sdk_logs import route_to_debug

    route_to_debug("opentelemetry", logging.getLogger("subagents.otel"))
    service = env.get("OTEL_SERVICE_NAME") or "subagents"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    shown = _setting(env, "ENDPOINT") or (_DEFAULT_GRPC if protocol == "grpc" else _DEFAULT_HTTP)
    export = OTLPExport(provider, shown)
    provider.add_span_processor(BatchSpanProcessor(_counting(exporter, export)))
    return export


def _counting_class() -> type:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Counting(SpanExporter):
        """The real exporter, counting what it got through and what it did not."""

        def __init__(self, inner: SpanExporter, export: OTLPExport) -> None:
            self.inner = inner
            self.export_state = export

        def export(self, spans: Any) -> SpanExportResult:
            result = self.inner.export(spans)
            if result is SpanExportResult.SUCCESS:
                self.export_state.sent += len(spans)
            else:
                self.export_state.failed += len(spans)
            return result

        def shutdown(self) -> None:
            self.inner.shutdown()

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return self.inner.force_flush(timeout_millis)

    return Counting


def _counting(inner: SpanExporter, export: OTLPExport) -> SpanExporter:
    exporter: SpanExporter = _counting_class()(inner, export)
    return exporter


def _exporter(protocol: str, env: Mapping[str, str]) -> SpanExporter:
    """The official exporter, told the endpoint, headers and timeout ``env`` gives (it would
    read only the process's environment otherwise)."""
    timeout = float(env.get("OTEL_EXPORTER_OTLP_TIMEOUT") or _EXPORT_TIMEOUT_SECONDS)
    headers = _headers(_setting(env, "HEADERS"))
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        endpoint = _setting(env, "ENDPOINT") or _DEFAULT_GRPC
        return OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HTTPSpanExporter,
    )

    return HTTPSpanExporter(endpoint=_http_endpoint(env), headers=headers, timeout=timeout)


def _http_endpoint(env: Mapping[str, str]) -> str:
    """The URL spans are posted to: the traces endpoint as given, else the general one
    with ``/v1/traces`` (as the OTLP specification says)."""
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or _DEFAULT_HTTP
    return f"{base.rstrip('/')}/v1/traces"


def _headers(text: str) -> dict[str, str]:
    """``key=value,key2=value2`` (values URL-encoded), as OTEL_EXPORTER_OTLP_HEADERS is."""
    from urllib.parse import unquote

    found = {}
    for pair in text.split(","):
        key, separator, value = pair.partition("=")
        if separator and key.strip():
            found[unquote(key.strip()).lower()] = unquote(value.strip())
    return found


@dataclass(slots=True)
class LiveExport:
    """A run's spans on their way to the collector; :meth:`close` when the run is over (it
    returns what to tell the person if spans did not get through)."""

    spans: LiveSpans
    otlp: OTLPExport

    def close(self) -> str | None:
        self.spans.close()
        self.otlp.shutdown()
        return self.otlp.problem()


def start_live_export(
    events: EventBus,
    *,
    redactor: Redactor,
    force: bool = False,
    include_content: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> LiveExport | None:
    """Export the spans of what ``events`` reports, live, when OTLP is configured (or
    ``force``); ``None`` when it is not."""
    otlp = otlp_provider(environ, force=force)
    if otlp is None:
        return None
    from subagents.tracing.otel_live import LiveSpans

    content = capture_content(environ) if include_content is None else include_content
    spans = LiveSpans(otlp.provider, include_content=content, redactor=redactor)
    return LiveExport(spans.attach(events), otlp)
