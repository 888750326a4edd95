"""Which offers are current when a provider states some prices for all regions at once.

``latest_per_offer`` (``domain/catalog.py``) keeps the newest observation of each offer, where an
offer is (GPU, provider, region, kind, instance type). A ``global`` offer and the same instance
in a named region are different offers to it, yet they describe the same thing at different
times; ``without_superseded`` keeps only the newer description. The repository's snapshot, the
bundled seed snapshot and the benchmarks apply it to the latest offers.
"""

from __future__ import annotations

from datetime import datetime

from service.domain.catalog import PricePoint

GLOBAL_REGION = "global"
"""The region of a price its provider states for every region (and of purchase prices)."""


def without_superseded(latest: tuple[PricePoint, ...]) -> tuple[PricePoint, ...]:
    """Current offers (the newest observation of each) minus those a later observation of the
    same GPU, provider, kind and instance type in the other kind of region replaces.

    A ``global`` observation says the provider charges that price in every region, so an
    observation of the same instance in a named region made before it is out of date, and a
    named-region observation made after a ``global`` one is newer than it. (Lambda priced
    ``gpu_8x_h100_sxm5`` at $23.92 in each region of an older catalog and at $31.92 "in all
    regions" in a newer one: only $31.92 is current.) Order is kept.
    """
    newest_global: dict[tuple[str, str, str, str], datetime] = {}
    newest_regional: dict[tuple[str, str, str, str], datetime] = {}
    for p in latest:
        key = (p.gpu_id, p.provider, p.kind, p.instance_type)
        seen = newest_global if p.region == GLOBAL_REGION else newest_regional
        held = seen.get(key)
        if held is None or p.observed_at > held:
            seen[key] = p.observed_at
    if not newest_global or not newest_regional:
        return latest
    kept = []
    for p in latest:
        key = (p.gpu_id, p.provider, p.kind, p.instance_type)
        other = newest_regional if p.region == GLOBAL_REGION else newest_global
        later = other.get(key)
        if later is None or later <= p.observed_at:
            kept.append(p)
    return tuple(kept)
