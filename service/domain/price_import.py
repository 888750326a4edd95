"""What importing a cloud provider's price catalog produced: the observations, and every row (or
price) left out or adjusted, counted by reason.

The parser of a source format (``store/skypilot_format.py``) builds these; the use case
(``usecases/price_import.py``) adds what the write did. Reasons are stable slugs with a sentence
each, so an operator can script on the slug and read the sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from service.domain.catalog import PricePoint

ImportScope = Literal["row", "price"]
"""``row``: the whole source row added nothing. ``price``: one of the row's two prices
(on-demand, spot) was left out; the other was used."""

ImportFormat = Literal["skypilot"]
"""Price-catalog formats ``gpuplan catalog import --format`` and ``POST /v1/prices/import``
read (besides gpuplan's own ``prices.csv``)."""
IMPORT_FORMATS: tuple[ImportFormat, ...] = get_args(ImportFormat)
SkyPilotCloud = Literal["aws", "azure", "gcp", "lambda", "runpod"]
"""Clouds whose SkyPilot ``vms.csv`` layout the importer reads."""
SKYPILOT_CLOUDS: tuple[SkyPilotCloud, ...] = get_args(SkyPilotCloud)


@dataclass(frozen=True, slots=True)
class ImportTally:
    """How many rows (or prices) one reason applied to."""

    reason: str
    scope: ImportScope
    count: int
    detail: str


@dataclass(frozen=True, slots=True)
class ParsedCatalog:
    """One provider's catalog file turned into observations.

    ``offers`` counts observations per kind; ``skipped`` what was left out, ``adjusted`` what was
    used after a correction (each by reason, most frequent first).
    """

    provider: str
    rows: int
    points: tuple[PricePoint, ...]
    skipped: tuple[ImportTally, ...]
    adjusted: tuple[ImportTally, ...]

    @property
    def offers(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for point in self.points:
            counts[point.kind] = counts.get(point.kind, 0) + 1
        return dict(sorted(counts.items()))

    @property
    def skipped_rows(self) -> int:
        return sum(t.count for t in self.skipped if t.scope == "row")


@dataclass(frozen=True, slots=True)
class PriceImportResult:
    """A parsed catalog and what writing it did. ``observed_at`` is the date every observation
    carries; ``repeated`` is true when it was taken from an earlier import of the same file
    (same provider and content hash), which is what makes a plain re-import insert nothing."""

    parsed: ParsedCatalog
    content_sha256: str
    observed_at: datetime
    repeated: bool
    inserted: int
    already_present: int
    revision: int
