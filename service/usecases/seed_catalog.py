"""The reference catalog bundled with gpuplan, read without a database.

``service/data/gpus.csv`` and ``prices.csv`` (parsed by ``store.csv_format``, the same code that
seeds a new database): the GPUs and prices a fresh install serves. The OpenAPI document builds
its GPU examples from it, so an example always carries every ``GpuSpec`` field with the seed
row's values.
"""

from __future__ import annotations

from functools import cache

from service.domain.catalog import CatalogSnapshot, cheapest_by_provider, latest_per_offer
from service.store.csv_format import bundled_text, parse_gpus_csv, parse_prices_csv
from service.usecases.catalog import GpuListing


@cache
def seed_snapshot() -> CatalogSnapshot:
    """The bundled GPUs and the newest bundled observation of every offer. The revision is 1,
    the seed's own; a database moves on from it with every migration that fills a GPU field."""
    gpus = tuple(parse_gpus_csv(bundled_text("gpus.csv")))
    prices = latest_per_offer(parse_prices_csv(bundled_text("prices.csv")))
    return CatalogSnapshot(revision=1, gpus=gpus, prices=prices)


def seed_listing(gpu_id: str) -> GpuListing:
    """One bundled GPU with its cheapest on-demand offer per provider (USD per GPU-hour), as
    ``GET /v1/gpus/{gpu_id}`` answers it on a freshly seeded catalog."""
    snapshot = seed_snapshot()
    gpu = snapshot.resolve_gpu(gpu_id, field_name="id")
    return GpuListing(gpu=gpu, cheapest_on_demand=cheapest_by_provider(snapshot.prices, gpu.id))
