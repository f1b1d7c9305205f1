"""Trace records of a run, secret redaction, and OpenTelemetry export."""
