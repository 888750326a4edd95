"""Response headers shared by endpoints that answer from the catalog snapshot."""

from __future__ import annotations

from service.domain.planner import PriceAge

REVISION_HEADER = "X-Catalog-Revision"
STALE_HEADER = "X-Catalog-Stale"
PRICE_AGE_HEADER = "X-Prices-Age-Days"
PRICES_STALE_HEADER = "X-Prices-Stale"


def catalog_headers(revision: int, stale: bool) -> dict[str, str]:
    """``X-Catalog-Revision`` always; ``X-Catalog-Stale: true`` when the database could not be
    reached and the answer comes from the last loaded snapshot."""
    headers = {REVISION_HEADER: str(revision)}
    if stale:
        headers[STALE_HEADER] = "true"
    return headers


def price_age_headers(age: PriceAge | None) -> dict[str, str]:
    """``X-Prices-Age-Days``: how many days ago, today, the oldest price the plan's fleet is
    costed at was observed; ``X-Prices-Stale: true`` when that is beyond the service's
    limit. Neither without a fleet, or for a plan pinned to a past ``as_of``."""
    if age is None:
        return {}
    headers = {PRICE_AGE_HEADER: str(age.days)}
    if age.stale:
        headers[PRICES_STALE_HEADER] = "true"
    return headers
