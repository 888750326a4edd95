"""``/v1/benchmarks`` answers: what an imported benchmark file gave."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated

from msgspec import Meta

from service.api.schemas.common import WireOut
from service.domain.benchmarks import BenchmarkFormat, BenchmarkImport
from service.usecases.benchmarks import ImportOutcome


class BenchmarkImportOut(WireOut, kw_only=True):
    id: int
    content_sha256: Annotated[
        str, Meta(description="SHA-256 of the file's bytes: a file is imported once.")
    ]
    format: BenchmarkFormat
    filename: str | None
    labels: list[str]
    key_id: Annotated[
        str, Meta(description="First 12 hex digits of the SHA-256 of the admin key that sent it.")
    ]
    imported_at: datetime
    runs: Annotated[int, Meta(description="Runs (load levels) the file holds.")]
    measurements: Annotated[int, Meta(description="Measured numbers stored from those runs.")]
    context: Annotated[
        dict[str, str | int],
        Meta(description="What the request stated beside the file (GPU, cards, engine...)."),
    ]
    already_imported: Annotated[
        bool,
        Meta(
            description="True when this content was imported before: nothing was written and "
            "the first import's record is returned."
        ),
    ] = False

    @classmethod
    def from_domain(cls, record: BenchmarkImport, already: bool = False) -> BenchmarkImportOut:
        return cls(
            id=record.id,
            content_sha256=record.content_sha256,
            format=record.format,
            filename=record.filename,
            labels=list(record.labels),
            key_id=record.key_id,
            imported_at=record.imported_at,
            runs=record.runs,
            measurements=record.measurements,
            context={k: v for k, v in asdict(record.context).items() if v is not None},
            already_imported=already,
        )

    @classmethod
    def from_outcome(cls, outcome: ImportOutcome) -> BenchmarkImportOut:
        return cls.from_domain(outcome.record, already=not outcome.created)


class BenchmarkListOut(WireOut, kw_only=True):
    count: int
    imports: list[BenchmarkImportOut]
