"""Response headers shared by endpoints that answer from the catalog snapshot."""

from __future__ import annotations

REVISION_HEADER = "X-Catalog-Revision"
STALE_HEADER = "X-Catalog-Stale"


def catalog_headers(revision: int, stale: bool) -> dict[str, str]:
    """``X-Catalog-Revision`` always; ``X-Catalog-Stale: true`` when the database could not be
    reached and the answer comes from the last loaded snapshot."""
    headers = {REVISION_HEADER: str(revision)}
    if stale:
        headers[STALE_HEADER] = "true"
    return headers
