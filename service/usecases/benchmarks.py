"""Import a team's benchmark result files (``POST /v1/benchmarks``, ``gpuplan benchmarks
import``): parse, complete with the caller's context, store all or nothing, once per content.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from service.domain.benchmarks import (
    BenchmarkFormat,
    BenchmarkImport,
    RunContext,
    check_labels,
    read_benchmark_file,
)
from service.domain.catalog import CatalogSnapshot
from service.domain.errors import InvalidInput
from service.store.benchmarks import BenchmarkRepository
from service.usecases.catalog_state import CatalogState

T = TypeVar("T")
FILENAME_MAX = 255
TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class ImportOutcome:
    """The stored record and whether this call stored it (``False``: the same content was
    imported before; nothing was written and the first import's record is returned)."""

    record: BenchmarkImport
    created: bool


def content_sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


async def import_benchmark(
    repo: BenchmarkRepository,
    snapshot: CatalogSnapshot,
    body: bytes,
    *,
    fmt: BenchmarkFormat | None,
    context: RunContext,
    labels: tuple[str, ...],
    filename: str | None,
    key_id: str,
    now: datetime,
) -> ImportOutcome:
    """Parse ``body`` (one result file), complete it with ``context`` and store it with its
    provenance, all or nothing; a file already imported (same bytes) returns the first record
    and writes nothing. Raises ``InvalidInput`` naming what is wrong or missing."""
    labels = check_labels(labels)
    if filename is not None and len(filename) > FILENAME_MAX:
        raise InvalidInput(f"filename: at most {FILENAME_MAX} characters", field="filename")
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"the body is not UTF-8 text ({exc.reason} at byte {exc.start})", field="body"
        ) from None
    digest = content_sha256(body)
    earlier = await repo.find(digest)
    if earlier is not None:
        return ImportOutcome(earlier, False)

    def resolve_gpu(name: str) -> str:
        return snapshot.resolve_gpu(name, field_name="gpu").id

    parsed = await asyncio.to_thread(read_benchmark_file, text, fmt, context, resolve_gpu)
    record, created = await repo.add(
        digest, parsed, filename=filename, labels=labels, key_id=key_id, context=context,
        now=now.replace(microsecond=0),
    )  # fmt: skip
    return ImportOutcome(record, created)


class BenchmarkService:
    def __init__(
        self,
        repo: BenchmarkRepository,
        state: CatalogState,
        clock: Callable[[], datetime],
        *,
        timeout_s: float = 2.0,
    ) -> None:
        self._repo = repo
        self._state = state
        self._clock = clock
        self._timeout = max(timeout_s, TIMEOUT_S)

    async def import_file(
        self,
        body: bytes,
        *,
        fmt: BenchmarkFormat | None,
        context: RunContext,
        labels: tuple[str, ...],
        filename: str | None,
        key_id: str,
    ) -> ImportOutcome:
        """Raises ``InvalidInput`` naming what is wrong or missing; nothing is stored then."""
        view = await self._state.current()
        return await self._db(
            lambda: import_benchmark(
                self._repo, view.snapshot, body, fmt=fmt, context=context, labels=labels,
                filename=filename, key_id=key_id, now=self._clock(),
            ),
            "importing a benchmark file",
        )  # fmt: skip

    async def imports(self) -> list[BenchmarkImport]:
        return await self._db(self._repo.imports, "reading benchmark imports")

    async def _db(self, call: Callable[[], Awaitable[T]], what: str) -> T:
        return await self._state.call_database(call, self._timeout, what)
