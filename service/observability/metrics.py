"""Prometheus metrics of one app instance (own registry, so tests can build many apps)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "gpuplan_http_requests",
            "HTTP requests answered, by route template, method and status code.",
            ("route", "method", "status"),
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "gpuplan_http_request_duration_seconds",
            "Time to answer an HTTP request, by route template and method.",
            ("route", "method"),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.solve_seconds = Histogram(
            "gpuplan_solve_duration_seconds",
            "Time to solve one uncached plan (performance model + MILP), seconds.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.cache = Counter(
            "gpuplan_plan_cache",
            "Plan-cache lookups by outcome (hit, miss, bypass).",
            ("outcome",),
            registry=self.registry,
        )
        self.catalog_revision = Gauge(
            "gpuplan_catalog_revision",
            "Catalog revision of the loaded snapshot.",
            registry=self.registry,
        )
        self.catalog_stale = Gauge(
            "gpuplan_catalog_stale",
            "1 while the catalog database is unreachable and answers use the last snapshot.",
            registry=self.registry,
        )
        self.solver_queue = Gauge(
            "gpuplan_solver_queue_depth",
            "Plan solves waiting for a solver worker.",
            registry=self.registry,
        )
        self.solver_running = Gauge(
            "gpuplan_solver_running",
            "Plan solves running in solver workers.",
            registry=self.registry,
        )
        self.plan_cache_entries = Gauge(
            "gpuplan_plan_cache_entries",
            "Plans held in this process's cache (the in-process cache, or the local tier in "
            "front of Redis).",
            registry=self.registry,
        )
        self.plan_cache_bytes = Gauge(
            "gpuplan_plan_cache_bytes",
            "Bytes of plan bodies held in this process's cache.",
            registry=self.registry,
        )
        # Labelled children looked up once: a label lookup costs more than the increment.
        self._cache_outcomes = {o: self.cache.labels(o) for o in ("hit", "miss", "bypass")}

    # What the planning use case reports (service.usecases.planning.PlanningMetrics).

    def cache_lookup(self, outcome: str) -> None:
        """One plan-cache lookup ended ``hit``, ``miss`` or ``bypass``."""
        self._cache_outcomes[outcome].inc()

    def solve_finished(self, seconds: float) -> None:
        """One uncached plan was solved in ``seconds``."""
        self.solve_seconds.observe(seconds)

    def solver_load(self, running: int, queued: int) -> None:
        """Solves running in solver workers and waiting for one."""
        self.solver_running.set(running)
        self.solver_queue.set(queued)

    def render(self) -> bytes:
        return generate_latest(self.registry)
