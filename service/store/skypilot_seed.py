"""The SkyPilot catalog snapshot bundled with gpuplan (``service/data/skypilot/<cloud>/vms.csv``).

Seeded by migration 0005 and part of the reference catalog the OpenAPI examples and the
benchmarks read. The files carry no dates; ``observed_at`` is a placeholder chosen to keep the
known order of snapshots (``service/data/skypilot/README.md`` explains it): the v7 files are
older than the v9 prices already in ``prices.csv`` (AWS v7 still lists p5.48xlarge at $98.32/h,
the price before AWS's June 2025 cut; every Lambda v9 price is higher than its v7 price), so
where both price the same offer the v9 observation stays the current one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from service.domain.catalog import GpuSpec
from service.domain.price_import import ParsedCatalog
from service.store.csv_format import bundled_text
from service.store.skypilot_format import parse_skypilot_csv

REPOSITORY = "https://github.com/skypilot-org/skypilot-catalog"
UNDATED_NOTE = (
    "(undated snapshot; observed_at is a placeholder, see service/data/skypilot/README.md)"
)


@dataclass(frozen=True, slots=True)
class SeedFile:
    cloud: str
    commit: str
    path: str
    observed_at: datetime

    @property
    def source(self) -> str:
        return f"{REPOSITORY}/blob/{self.commit}/{self.path} {UNDATED_NOTE}"

    def text(self) -> str:
        return bundled_text(f"skypilot/{self.cloud}/vms.csv")


_V7 = datetime(2025, 4, 1, tzinfo=UTC)  # between RunPod v6 (2025-01-01) and v8 (2025-07-01)
_AZURE_V6 = datetime(2025, 1, 1, tzinfo=UTC)  # the same file prices.csv's Azure rows come from

BUNDLED_FILES = (
    SeedFile("aws", "27f67dd4e1bc0d35fa0ec075180ad54b230882c4", "catalogs/v7/aws/vms.csv", _V7),
    SeedFile(
        "azure", "098741e70562f65d7af1cceb81e33b284f742604", "catalogs/v6/azure/vms.csv", _AZURE_V6
    ),
    SeedFile("gcp", "6f65ab58724c0a5b17dbb81ee124e7d7dee0d4a5", "catalogs/v7/gcp/vms.csv", _V7),
    SeedFile(
        "lambda", "11580132cea293395776b033c8533714d42abb4e", "catalogs/v7/lambda/vms.csv", _V7
    ),
    SeedFile(
        "runpod", "0727c2bd9e77f91cb1377127c5f793a28cf01384", "catalogs/v7/runpod/vms.csv", _V7
    ),
)


def content_sha256(text: str) -> str:
    """The content hash an import is recorded under (of the UTF-8 text as read)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class BundledImport:
    file: SeedFile
    parsed: ParsedCatalog
    content_sha256: str


def bundled_imports(gpus: Mapping[str, GpuSpec]) -> list[BundledImport]:
    """Every bundled file parsed against ``gpus`` (the catalog by id)."""
    result = []
    for seed in BUNDLED_FILES:
        text = seed.text()
        parsed = parse_skypilot_csv(
            text, seed.cloud, gpus, observed_at=seed.observed_at, source=seed.source
        )
        result.append(BundledImport(seed, parsed, content_sha256(text)))
    return result
