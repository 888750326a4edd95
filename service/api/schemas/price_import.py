"""``POST /v1/prices/import`` answer: what the imported file gave and what was written."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from msgspec import Meta

from service.api.schemas.common import WireOut
from service.domain.price_import import ImportScope, ImportTally, PriceImportResult


class ImportTallyOut(WireOut, kw_only=True):
    reason: Annotated[str, Meta(description="Stable slug, e.g. no_spot_price.")]
    scope: Annotated[
        ImportScope,
        Meta(
            description="row: the source row added nothing. price: one of its two prices "
            "(on-demand, spot) was left out, the other used."
        ),
    ]
    count: int
    detail: str

    @classmethod
    def from_domain(cls, tally: ImportTally) -> ImportTallyOut:
        return cls(reason=tally.reason, scope=tally.scope, count=tally.count, detail=tally.detail)


class PriceImportOut(WireOut, kw_only=True):
    format: str
    provider: str
    content_sha256: str
    observed_at: Annotated[
        datetime, Meta(description="The date every observation of this import carries.")
    ]
    observed_at_reused: Annotated[
        bool,
        Meta(
            description="True when no observed_at was given and this file (same provider and "
            "content) was imported before: its date is reused, so nothing is inserted twice."
        ),
    ]
    rows: Annotated[int, Meta(description="Data rows read from the file.")]
    offers: Annotated[
        dict[str, int], Meta(description="Observations made from the file, per price kind.")
    ]
    inserted: int
    already_present: int
    catalog_revision: int
    skipped: Annotated[
        list[ImportTallyOut], Meta(description="Rows or prices left out, by reason.")
    ]
    adjusted: Annotated[
        list[ImportTallyOut], Meta(description="Rows used after a correction, by reason.")
    ]

    @classmethod
    def from_domain(cls, fmt: str, result: PriceImportResult) -> PriceImportOut:
        parsed = result.parsed
        return cls(
            format=fmt,
            provider=parsed.provider,
            content_sha256=result.content_sha256,
            observed_at=result.observed_at,
            observed_at_reused=result.repeated,
            rows=parsed.rows,
            offers=parsed.offers,
            inserted=result.inserted,
            already_present=result.already_present,
            catalog_revision=result.revision,
            skipped=[ImportTallyOut.from_domain(t) for t in parsed.skipped],
            adjusted=[ImportTallyOut.from_domain(t) for t in parsed.adjusted],
        )
