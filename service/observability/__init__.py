"""Structured logs, request context and Prometheus metrics."""
