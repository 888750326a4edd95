"""The reference catalog bundled with gpuplan, read without a database.

``service/data/gpus.csv``, ``prices.csv``, ``purchase_gaps.csv`` and the SkyPilot snapshot in
``service/data/skypilot`` (parsed by ``store.csv_format`` and ``store.skypilot_format``, the
same code that seeds a new database): the GPUs, prices and price gaps a fresh install serves.
The OpenAPI document builds its GPU examples from it, so an example always carries every
``GpuSpec`` field with the seed row's values.
"""

from __future__ import annotations

from functools import cache

from service.domain.catalog import CatalogSnapshot, cheapest_by_provider, latest_per_offer
from service.domain.superseded import without_superseded
from service.store.csv_format import (
    bundled_text,
    parse_gpus_csv,
    parse_prices_csv,
    parse_purchase_gaps_csv,
)
from service.store.skypilot_seed import bundled_imports
from service.usecases.catalog import GpuListing


@cache
def seed_snapshot() -> CatalogSnapshot:
    """The bundled GPUs, the newest bundled observation of every offer and the documented price
    gaps. The revision is 1, the seed's own; a database moves on from it with every migration
    that writes the catalog."""
    gpus = tuple(parse_gpus_csv(bundled_text("gpus.csv")))
    points = parse_prices_csv(bundled_text("prices.csv"))
    for item in bundled_imports({g.id: g for g in gpus}):
        points.extend(item.parsed.points)
    return CatalogSnapshot(
        revision=1,
        gpus=gpus,
        prices=without_superseded(latest_per_offer(points)),
        gaps=tuple(parse_purchase_gaps_csv(bundled_text("purchase_gaps.csv"))),
    )


def seed_listing(gpu_id: str) -> GpuListing:
    """One bundled GPU with its cheapest on-demand offer per provider (USD per GPU-hour), as
    ``GET /v1/gpus/{gpu_id}`` answers it on a freshly seeded catalog."""
    snapshot = seed_snapshot()
    gpu = snapshot.resolve_gpu(gpu_id, field_name="id")
    return GpuListing(gpu=gpu, cheapest_on_demand=cheapest_by_provider(snapshot.prices, gpu.id))
