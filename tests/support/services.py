"""Where integration tests find real Postgres and Redis.

Order: ``GPUPLAN_TEST_DATABASE_URL`` / ``GPUPLAN_TEST_REDIS_URL`` when set (CI sets them to the
machine's servers); else testcontainers when a Docker engine answers; else the tests are skipped
with a loud reason, except under ``CI=true``, where a missing service fails the run.

Each run creates its own databases (``gpuplan_t_<run>_*``) and drops them at the end, and uses its
own Redis key prefix, deleting only its own keys (never FLUSHALL).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import pytest

RUN_ID = secrets.token_hex(4)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def unavailable(what: str, why: str) -> None:
    """Fail under CI, skip loudly otherwise."""
    message = (
        f"{what} is not available ({why}). Set GPUPLAN_TEST_DATABASE_URL / "
        "GPUPLAN_TEST_REDIS_URL or start a Docker engine for testcontainers."
    )
    if in_ci():
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(f"SKIPPED INTEGRATION: {message}")


@dataclass(frozen=True)
class Endpoints:
    postgres_admin_url: str | None
    redis_url: str | None
    why_missing: str


def _docker_answers() -> bool:
    try:
        import docker  # type: ignore[import-untyped]  # docker-py ships no type hints

        client = docker.from_env(timeout=3)
        client.ping()
        return True
    except Exception:  # noqa: BLE001 - any failure means "no engine"
        return False


@contextmanager
def discover() -> Iterator[Endpoints]:
    """Yield the endpoints for this run; containers (if started) stop when the run ends."""
    pg = os.environ.get("GPUPLAN_TEST_DATABASE_URL") or None
    redis = os.environ.get("GPUPLAN_TEST_REDIS_URL") or None
    why = "GPUPLAN_TEST_DATABASE_URL / GPUPLAN_TEST_REDIS_URL unset"
    with ExitStack() as stack:
        if (pg is None or redis is None) and _docker_answers():
            if pg is None:
                from testcontainers.postgres import PostgresContainer

                container = stack.enter_context(PostgresContainer("postgres:16-alpine"))
                pg = container.get_connection_url(driver="asyncpg")
            if redis is None:
                from testcontainers.redis import RedisContainer

                rc = stack.enter_context(RedisContainer("redis:7-alpine"))
                redis = f"redis://{rc.get_container_host_ip()}:{rc.get_exposed_port(6379)}/0"
        elif pg is None or redis is None:
            why += " and no Docker engine answers"
        yield Endpoints(pg, redis, why)
