"""The SkyPilot catalog snapshot bundled with gpuplan (``service/data/skypilot/``).

Two snapshots of the public catalog: the v7 (Azure v6) file of each of the five clouds the
importer reads, seeded by migration 0005, and the newer v9 files of Lambda (migration 0013) and
of AWS's GPU instances (migration 0015); together they are part of the reference catalog the
OpenAPI examples and the benchmarks read. The v7 files carry no dates; their ``observed_at`` is
a placeholder chosen to keep the known order of snapshots (``service/data/skypilot/README.md``
explains it): they are older than the v9 prices (AWS v7 still lists p5.48xlarge at $98.32/h,
the price before AWS's June 2025 cut; every Lambda v9 price is higher than its v7 price), so
where both price the same offer the v9 observation is the current one.
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
    """One bundled file: the cloud, where it comes from (commit and path in the public
    catalog), the date its observations get, what that date is, and where it lies under
    ``service/data``."""

    cloud: str
    commit: str
    path: str
    observed_at: datetime
    dating: str = UNDATED_NOTE
    folder: str = "skypilot"

    @property
    def source(self) -> str:
        return f"{REPOSITORY}/blob/{self.commit}/{self.path} {self.dating}"

    def text(self) -> str:
        return bundled_text(f"{self.folder}/{self.cloud}/vms.csv")


_V7 = datetime(2025, 4, 1, tzinfo=UTC)  # between RunPod v6 (2025-01-01) and v8 (2025-07-01)
_AZURE_V6 = datetime(2025, 1, 1, tzinfo=UTC)  # the same file prices.csv's Azure rows come from

_V9 = datetime(2026, 6, 3, tzinfo=UTC)  # the date prices.csv gives the v9 rows of this commit
V9_DATING = (
    "(observed_at 2026-06-03: a lower bound, the date of an image in the same commit's GCP "
    "images.csv; see service/data/README.md)"
)

FIRST_SNAPSHOT = (
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
"""The five v7 (Azure v6) files, seeded by migration 0005."""

V9_FILES = (
    SeedFile(
        "lambda",
        "2c3d7ea7d76bf84cf80d382e946c1609571485fd",
        "catalogs/v9/lambda/vms.csv",
        _V9,
        dating=V9_DATING,
        folder="skypilot/v9",
    ),
)
"""Newer observations of the same offers, seeded by migration 0013: Lambda's v9 file (every
price of the v7 file rose; it adds B200 and more instance sizes)."""

V9_AWS_FILES = (
    SeedFile(
        "aws",
        "2c3d7ea7d76bf84cf80d382e946c1609571485fd",
        "catalogs/v9/aws/vms.csv",
        _V9,
        dating=V9_DATING,
        folder="skypilot/v9",
    ),
)
"""Newer observations of the AWS offers, seeded by migration 0015: the GPU rows of AWS's v9 file
(g4dn, g5, g6, g6e, g7e, gr6 and the p instances), dated as the Lambda file of the same commit. The
v7 file predates AWS's June 2025 cut of P4 and P5 prices (p5.48xlarge $98.32/h in us-east-2,
$55.04/h in v9)."""

BUNDLED_FILES = FIRST_SNAPSHOT + V9_FILES + V9_AWS_FILES
"""Every bundled file, oldest snapshot first."""


def content_sha256(text: str) -> str:
    """The content hash an import is recorded under (of the UTF-8 text as read)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class BundledImport:
    file: SeedFile
    parsed: ParsedCatalog
    content_sha256: str


def bundled_imports(
    gpus: Mapping[str, GpuSpec], files: tuple[SeedFile, ...] = BUNDLED_FILES
) -> list[BundledImport]:
    """The bundled ``files`` (all of them by default) parsed against ``gpus`` (the catalog by
    id)."""
    result = []
    for seed in files:
        text = seed.text()
        parsed = parse_skypilot_csv(
            text, seed.cloud, gpus, observed_at=seed.observed_at, source=seed.source
        )
        result.append(BundledImport(seed, parsed, content_sha256(text)))
    return result
