"""Checks on the seed catalog in service/data (gpus.csv, prices.csv, calibration.csv).

The files are read straight from disk so that a broken seed fails here, before any loader,
migration or API test has a chance to hide it. Provenance of every value is in
service/data/README.md; the spot checks below repeat a few datasheet figures from it.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from service.domain.errors import InvalidInput
from service.domain.vocabulary import PRICE_KIND_NAMES
from service.store import csv_format

DATA = Path(__file__).parents[2] / "service" / "data"

GPU_IDS = [
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200-sxm",
    "h200-nvl",
    "b200",
    "gb200",
    "a100-sxm-80gb",
    "a100-sxm-40gb",
    "a100-pcie-80gb",
    "a100-pcie-40gb",
    "rtx-a6000",
    "rtx-a4000",
    "rtx-6000-ada",
    "rtx-4000-ada",
    "rtx-pro-6000-blackwell",
    "quadro-rtx-4000",
    "quadro-p6000",
    "l40s",
    "l40",
    "l4",
    "a10g",
    "a10",
    "t4",
    "v100-sxm2-32gb",
    "v100-pcie-16gb",
    "mi300x",
    "mi325x",
    "gaudi3",
    # added for the SkyPilot price import (every priced accelerator has a spec)
    "a40",
    "rtx-3090",
    "rtx-4090",
    "rtx-a4500",
    "rtx-a5000",
    "quadro-rtx-6000",
    "gh200",
    "p100-pcie-16gb",
    "p4",
]

# The header is the domain's: one column per stored GpuSpec / PricePoint field.
GPU_COLUMNS = list(csv_format.GPU_COLUMNS)
PRICE_COLUMNS = list(csv_format.PRICE_COLUMNS)

REQUIRED_FLOAT = ("memory_gb", "memory_bandwidth_gbps", "interconnect_bandwidth_gbps")
OPTIONAL_FLOAT = (
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "fp8_tflops",
    "fp4_tflops",
    "int8_tops",
    "tdp_w",
)
REQUIRED_INT = ("launch_year", "nvlink_domain", "pcie_gen", "mig_instances")

FP4_PARTS = {"b200", "gb200", "rtx-pro-6000-blackwell"}
NO_FP8 = {
    "a100-sxm-80gb",
    "a100-sxm-40gb",
    "a100-pcie-80gb",
    "a100-pcie-40gb",
    "rtx-a6000",
    "rtx-a4000",
    "quadro-rtx-4000",
    "quadro-p6000",
    "a10g",
    "a10",
    "t4",
    "v100-sxm2-32gb",
    "v100-pcie-16gb",
    "a40",
    "rtx-3090",
    "rtx-a4500",
    "rtx-a5000",
    "quadro-rtx-6000",
    "p100-pcie-16gb",
    "p4",
}
# Every blank outside fp4/fp8 is listed, with its reason in service/data/README.md.
DOCUMENTED_BLANKS = {
    ("quadro-rtx-4000", "tf32_tflops"),  # Turing: no TF32
    ("t4", "tf32_tflops"),  # Turing: no TF32
    ("v100-sxm2-32gb", "tf32_tflops"),  # Volta: no TF32
    ("v100-pcie-16gb", "tf32_tflops"),  # Volta: no TF32
    ("v100-sxm2-32gb", "int8_tops"),  # Volta tensor cores have no INT8 mode
    ("v100-pcie-16gb", "int8_tops"),
    ("quadro-p6000", "tf32_tflops"),  # Pascal: no tensor cores
    ("quadro-p6000", "fp16_tflops"),  # no tensor cores; planner falls back to fp32
    ("quadro-p6000", "int8_tops"),
    ("gaudi3", "int8_tops"),  # supported, not published
    ("rtx-pro-6000-blackwell", "tf32_tflops"),  # published figure unlabelled (dense/sparse)
    ("rtx-pro-6000-blackwell", "int8_tops"),  # not published
    ("quadro-rtx-6000", "tf32_tflops"),  # Turing: no TF32
    ("p100-pcie-16gb", "tf32_tflops"),  # Pascal: no tensor cores
    ("p100-pcie-16gb", "fp16_tflops"),  # FP16 on CUDA cores only; planner uses fp32
    ("p100-pcie-16gb", "int8_tops"),  # no tensor cores (GP100 has no DP4A either)
    ("p4", "tf32_tflops"),  # Pascal: no tensor cores
    ("p4", "fp16_tflops"),
    ("p4", "int8_tops"),  # INT8 via DP4A on CUDA cores, not a tensor rate
}

REQUIRED_ALIASES = {
    "H100": "h100-sxm",
    "H100 SXM": "h100-sxm",
    "H100 SXM5 80GB": "h100-sxm",
    "A100": "a100-sxm-80gb",
    "A100 40GB": "a100-sxm-40gb",
    "A100-SXM4-40GB": "a100-sxm-40gb",
    "A6000": "rtx-a6000",
    "A4000": "rtx-a4000",
    "V100": "v100-sxm2-32gb",
    "V100 16GB": "v100-pcie-16gb",
    "P6000": "quadro-p6000",
    "RTX 4000": "quadro-rtx-4000",
    "L40S": "l40s",
    "L4": "l4",
    "H200": "h200-sxm",
    "B200": "b200",
    "GB200": "gb200",
    "MI300X": "mi300x",
    "Instinct MI300X": "mi300x",
    "Gaudi 3": "gaudi3",
    "A10G": "a10g",
    "T4": "t4",
    "RTX 6000 Ada": "rtx-6000-ada",
    "RTX PRO 6000": "rtx-pro-6000-blackwell",
    "A40": "a40",
    "RTX 3090": "rtx-3090",
    "RTX 4090": "rtx-4090",
    "RTX A4500": "rtx-a4500",
    "RTX A5000": "rtx-a5000",
    "RTX 6000": "quadro-rtx-6000",
    "GH200": "gh200",
    "P100": "p100-pcie-16gb",
    "P4": "p4",
}

KINDS = set(PRICE_KIND_NAMES)
PROVIDERS = {
    "aws",
    "gcp",
    "azure",
    "lambda",
    "runpod",
    "vast",
    "digitalocean",
    "paperspace",
    "coreweave",
    "street",
}
UNDATED_NOTE = "(undated snapshot; observed_at is a placeholder, see service/data/README.md)"


def _read(name: str) -> tuple[list[str], list[dict[str, str]]]:
    with (DATA / name).open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


@pytest.fixture(scope="module")
def gpus() -> dict[str, dict[str, str]]:
    _, rows = _read("gpus.csv")
    return {r["id"]: r for r in rows}


@pytest.fixture(scope="module")
def gpu_rows() -> list[dict[str, str]]:
    return _read("gpus.csv")[1]


@pytest.fixture(scope="module")
def prices() -> list[dict[str, str]]:
    return _read("prices.csv")[1]


def _aliases(row: dict[str, str]) -> list[str]:
    return [a for a in row["aliases"].split("|") if a]


# --- gpus.csv -------------------------------------------------------------------------------


def test_gpu_columns_in_order() -> None:
    header, _ = _read("gpus.csv")
    assert header == GPU_COLUMNS


def test_exactly_the_38_ids(gpu_rows: list[dict[str, str]]) -> None:
    ids = [r["id"] for r in gpu_rows]
    assert len(ids) == 38
    assert sorted(ids) == sorted(GPU_IDS)
    assert len(set(ids)) == len(ids)


def test_numeric_cells_parse(gpu_rows: list[dict[str, str]]) -> None:
    for row in gpu_rows:
        for col in REQUIRED_FLOAT:
            assert float(row[col]) >= 0, (row["id"], col)
        for col in REQUIRED_INT:
            assert int(row[col]) >= 0, (row["id"], col)
        for col in OPTIONAL_FLOAT:
            if row[col] != "":
                assert float(row[col]) > 0, (row["id"], col)
        assert int(row["nvlink_domain"]) >= 1
        assert float(row["memory_gb"]) > 0
        assert float(row["memory_bandwidth_gbps"]) > 0


def test_blanks_are_only_the_documented_ones(gpu_rows: list[dict[str, str]]) -> None:
    blanks = {(r["id"], c) for r in gpu_rows for c in OPTIONAL_FLOAT if r[c] == ""}
    fp4_blanks = {(i, c) for i, c in blanks if c == "fp4_tflops"}
    fp8_blanks = {(i, c) for i, c in blanks if c == "fp8_tflops"}
    assert {i for i, _ in fp4_blanks} == set(GPU_IDS) - FP4_PARTS
    assert {i for i, _ in fp8_blanks} == NO_FP8
    assert blanks - fp4_blanks - fp8_blanks == DOCUMENTED_BLANKS


def test_fp4_only_on_blackwell(gpus: dict[str, dict[str, str]]) -> None:
    for gid in FP4_PARTS:
        assert float(gpus[gid]["fp4_tflops"]) > float(gpus[gid]["fp8_tflops"])
    for gid in ("h100-sxm", "h200-sxm", "mi300x", "mi325x", "gaudi3", "l40s"):
        assert gpus[gid]["fp4_tflops"] == ""


def test_memory_type_and_architecture_vocabulary(gpu_rows: list[dict[str, str]]) -> None:
    mem_types = {"HBM2", "HBM2e", "HBM3", "HBM3e", "GDDR5", "GDDR5X", "GDDR6", "GDDR6X", "GDDR7"}
    generations = (
        "Volta",
        "Turing",
        "Pascal",
        "Ampere",
        "Ada Lovelace",
        "Hopper",
        "Blackwell",
        "CDNA 3",
        "Gaudi 3",
    )
    for row in gpu_rows:
        assert row["memory_type"] in mem_types, row["id"]
        assert row["architecture"].startswith(generations), row["id"]


def test_scale_up_link_consistency(gpu_rows: list[dict[str, str]]) -> None:
    for row in gpu_rows:
        domain = int(row["nvlink_domain"])
        bw = float(row["interconnect_bandwidth_gbps"])
        assert (domain > 1) == (bw > 0), row["id"]
        if domain == 1:
            assert row["interconnect"] == "PCIe", row["id"]


@pytest.mark.parametrize(
    ("gid", "domain"),
    [
        ("h100-sxm", 8),
        ("b200", 8),
        ("gb200", 72),
        ("h100-pcie", 2),
        ("h100-nvl", 2),
        ("h200-nvl", 4),
        ("rtx-a6000", 2),
        ("v100-sxm2-32gb", 8),
        ("mi300x", 8),
        ("gaudi3", 8),
        ("l40s", 1),
        ("rtx-pro-6000-blackwell", 1),
        ("a40", 2),
        ("gh200", 256),
        ("rtx-4090", 1),
    ],
)
def test_nvlink_domain(gpus: dict[str, dict[str, str]], gid: str, domain: int) -> None:
    assert int(gpus[gid]["nvlink_domain"]) == domain


def test_no_alias_collisions(gpu_rows: list[dict[str, str]]) -> None:
    owner: dict[str, str] = {}
    ids = {r["id"].casefold(): r["id"] for r in gpu_rows}
    for row in gpu_rows:
        aliases = _aliases(row)
        assert aliases, row["id"]
        assert row["name"] in aliases, row["id"]
        for alias in aliases:
            key = alias.strip().casefold()
            assert key == alias.casefold(), f"alias {alias!r} has surrounding whitespace"
            assert owner.setdefault(key, row["id"]) == row["id"], (alias, owner[key], row["id"])
            assert ids.get(key, row["id"]) == row["id"], f"alias {alias!r} is another GPU's id"


def test_required_aliases(gpu_rows: list[dict[str, str]]) -> None:
    lookup = {a.casefold(): r["id"] for r in gpu_rows for a in _aliases(r)}
    for alias, gid in REQUIRED_ALIASES.items():
        assert lookup.get(alias.casefold()) == gid, alias
        assert lookup.get(alias.lower()) == gid, alias


@pytest.mark.parametrize(
    ("gid", "col", "value"),
    [
        ("h100-sxm", "memory_gb", 80),
        ("h100-sxm", "memory_bandwidth_gbps", 3350),
        ("h100-sxm", "fp16_tflops", 989.5),
        ("h100-sxm", "fp8_tflops", 1979),
        ("l40s", "fp16_tflops", 362.05),
        ("l40s", "memory_bandwidth_gbps", 864),
        ("rtx-a6000", "memory_bandwidth_gbps", 768),
        ("a100-sxm-80gb", "memory_bandwidth_gbps", 2039),
        ("a100-sxm-80gb", "fp16_tflops", 312),
        ("a100-sxm-40gb", "memory_bandwidth_gbps", 1555),
        ("a100-sxm-40gb", "tdp_w", 400),
        ("mi300x", "memory_gb", 192),
        ("mi300x", "memory_bandwidth_gbps", 5300),
        ("b200", "fp4_tflops", 9000),
        ("gb200", "fp16_tflops", 2500),
        ("gb200", "memory_gb", 186),
        ("h200-nvl", "fp8_tflops", 1670.5),
        ("h200-nvl", "interconnect_bandwidth_gbps", 900),
        ("rtx-pro-6000-blackwell", "memory_bandwidth_gbps", 1597),
        ("rtx-pro-6000-blackwell", "fp4_tflops", 2000),
        ("t4", "fp16_tflops", 65),
        ("a40", "memory_bandwidth_gbps", 696),
        ("a40", "fp16_tflops", 149.7),
        ("rtx-3090", "fp16_tflops", 71),
        ("rtx-4090", "memory_bandwidth_gbps", 1008),
        ("rtx-a5000", "fp16_tflops", 111.1),
        ("quadro-rtx-6000", "fp16_tflops", 130.5),
        ("gh200", "memory_gb", 96),
        ("gh200", "memory_bandwidth_gbps", 4000),
        ("p100-pcie-16gb", "memory_bandwidth_gbps", 732),
        ("p4", "memory_gb", 8),
    ],
)
def test_datasheet_spot_checks(
    gpus: dict[str, dict[str, str]], gid: str, col: str, value: float
) -> None:
    assert float(gpus[gid][col]) == pytest.approx(value)


def test_every_row_is_sourced(gpu_rows: list[dict[str, str]]) -> None:
    tag = re.compile(r"^\[(DS|2nd|cat|derived)\] ")
    for row in gpu_rows:
        entries = row["sources"].split("|")
        assert any(tag.match(e) for e in entries), row["id"]
        assert any(e.startswith("[DS] ") or e.startswith("[2nd] ") for e in entries), row["id"]


# --- prices.csv -----------------------------------------------------------------------------


def test_price_columns_in_order() -> None:
    header, _ = _read("prices.csv")
    assert header == PRICE_COLUMNS


def test_price_row_count(prices: list[dict[str, str]]) -> None:
    assert len(prices) == 961


def test_every_gpu_has_a_purchase_price_or_a_documented_reason(
    prices: list[dict[str, str]], gpus: dict[str, dict[str, str]]
) -> None:
    """Each GPU has a dated purchase observation in prices.csv, or a row in
    purchase_gaps.csv saying why none exists; never both, so a gap closed by a new price is
    removed from the gaps file."""
    header, gaps = _read("purchase_gaps.csv")
    assert header == ["gpu_id", "reason"]
    purchased = {r["gpu_id"] for r in prices if r["kind"] == "purchase"}
    explained = {r["gpu_id"]: r["reason"].strip() for r in gaps}
    assert len(explained) == len(gaps), "a GPU is listed twice in purchase_gaps.csv"
    assert set(explained) <= set(gpus), set(explained) - set(gpus)
    assert not purchased & set(explained), purchased & set(explained)
    assert set(gpus) == purchased | set(explained), set(gpus) - purchased - set(explained)
    for gpu_id, reason in explained.items():
        assert len(reason) > 40, (gpu_id, reason)


def test_the_gaps_parser_gives_each_reason_as_a_purchase_gap() -> None:
    """What migration 0011 stores and plans quote: one purchase gap per row, text as written."""
    _, rows = _read("purchase_gaps.csv")
    parsed = csv_format.parse_purchase_gaps_csv((DATA / "purchase_gaps.csv").read_text("utf-8"))
    assert [(g.gpu_id, g.kind, g.reason) for g in parsed] == [
        (r["gpu_id"], "purchase", r["reason"].strip()) for r in rows
    ]
    with pytest.raises(InvalidInput, match="line 2: reason: must not be empty"):
        csv_format.parse_purchase_gaps_csv("gpu_id,reason\nh100-nvl,\n")
    with pytest.raises(InvalidInput, match="missing columns reason"):
        csv_format.parse_purchase_gaps_csv("gpu_id\nh100-nvl\n")


def test_price_rows_are_valid(
    prices: list[dict[str, str]], gpus: dict[str, dict[str, str]]
) -> None:
    for row in prices:
        assert row["gpu_id"] in gpus, row
        assert row["provider"] in PROVIDERS, row
        assert row["kind"] in KINDS, row
        assert float(row["usd"]) > 0, row
        assert int(row["gpus_per_instance"]) >= 1, row
        assert row["region"].strip(), row
        assert row["instance_type"].strip(), row
        assert not re.search(r"\(\w+-az\d+\)", row["region"]), row
        assert row["source"].strip(), row
        if row["kind"] == "purchase":
            assert row["provider"] == "street"
            assert row["region"] == "global"
            assert row["instance_type"].startswith("card")
            assert row["gpus_per_instance"] == "1"


def test_observed_at_is_utc(prices: list[dict[str, str]]) -> None:
    for row in prices:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T00:00:00Z", row["observed_at"]), row
        ts = datetime.fromisoformat(row["observed_at"])
        assert ts.utcoffset() is not None
        assert ts.tzinfo == UTC, row


def test_idempotency_keys_unique(prices: list[dict[str, str]]) -> None:
    keys = [
        (r["gpu_id"], r["provider"], r["region"], r["kind"], r["instance_type"], r["observed_at"])
        for r in prices
    ]
    assert len(set(keys)) == len(keys)


def test_per_gpu_price_matches_instance_price(prices: list[dict[str, str]]) -> None:
    pattern = re.compile(r"\(instance \$([0-9.]+)/h(?:, (\d+) GPU|\s*/\s*(\d+) GPUs?)")
    checked = 0
    for row in prices:
        m = pattern.search(row["source"])
        if not m:
            continue
        n = int(m.group(2) or m.group(3))
        assert n == int(row["gpus_per_instance"]), row
        assert float(m.group(1)) / n == pytest.approx(float(row["usd"]), rel=5e-3, abs=1e-4)
        checked += 1
    assert checked >= 100


NOT_IN_GOOGLES_PRICE_LIST = {("a3-megagpu-8g", "us-central1")}
"""GCP offers the catalog has on demand (SkyPilot's 2026-06-03 file) for which Google's price list
of 2026-07-30 gives no price of any kind, so no committed use price either."""

GCP_COMMITTED = re.compile(r"on demand ([0-9.]+)/h\) \(instance \$([0-9.]+)/h / (\d+) GPUs?\)$")


def _gcp_on_demand_regions(prices: list[dict[str, str]]) -> dict[str, set[str]]:
    """Regions where the seed catalog offers each GCP machine type on demand: the SkyPilot
    snapshot's GCP file and the on-demand rows of prices.csv."""
    regions: dict[str, set[str]] = defaultdict(set)
    with (DATA / "skypilot" / "gcp" / "vms.csv").open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            regions[r["InstanceType"]].add(r["Region"])
    for r in prices:
        if r["provider"] == "gcp" and r["kind"] == "on_demand":
            regions[r["instance_type"]].add(r["region"])
    return regions


def test_gcp_committed_use_prices_sit_below_on_demand_wherever_the_machine_is_offered(
    prices: list[dict[str, str]],
) -> None:
    # A committed use discount only lowers the machine's on-demand rate, and the longer term
    # lowers it further; and a machine type with committed use prices has them in every region
    # where the catalog offers it on demand (a reserved plan may be restricted to any of them).
    committed = [r for r in prices if r["provider"] == "gcp" and r["kind"].startswith("reserved")]
    by_offer: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for row in committed:
        m = GCP_COMMITTED.search(row["source"])
        assert m, row
        on_demand, instance = float(m.group(1)), float(m.group(2))
        assert instance < on_demand, row
        by_offer[(row["instance_type"], row["region"])][row["kind"]] = instance
    assert len(by_offer) >= 170
    for offer, terms in by_offer.items():
        assert set(terms) == {"reserved_1y", "reserved_3y"}, offer
        assert terms["reserved_3y"] < terms["reserved_1y"], offer
    offered = _gcp_on_demand_regions(prices)
    machine_types = {machine for machine, _ in by_offer}
    for machine in machine_types:
        missing = {region for region in offered[machine] if (machine, region) not in by_offer}
        assert not missing - {r for m, r in NOT_IN_GOOGLES_PRICE_LIST if m == machine}, machine
    # Europe and Asia are covered, not only the two US regions first recorded
    assert {"europe-west4", "asia-southeast1"} <= {region for _, region in by_offer}


def test_every_reference_gpu_keeps_a_price(prices: list[dict[str, str]]) -> None:
    priced = {r["gpu_id"] for r in prices}
    expected = {
        "t4",
        "a10g",
        "l4",
        "l40s",
        "h100-sxm",
        "h200-sxm",
        "b200",
        "a100-sxm-40gb",
        "a100-sxm-80gb",
        "v100-pcie-16gb",
        "v100-sxm2-32gb",
        "a10",
        "a100-pcie-80gb",
        "h100-nvl",
        "rtx-a6000",
        "a100-pcie-40gb",
        "h100-pcie",
        "l40",
        "rtx-4000-ada",
        "rtx-6000-ada",
        "rtx-a4000",
        "mi300x",
        "quadro-rtx-4000",
    }
    assert expected <= priced


def test_undated_snapshots_keep_their_order(prices: list[dict[str, str]]) -> None:
    for row in prices:
        if "/catalogs/v6/" in row["source"] or "/catalogs/v8/" in row["source"]:
            assert UNDATED_NOTE in row["source"], row
    v6 = {r["observed_at"] for r in prices if "/catalogs/v6/runpod/" in r["source"]}
    v8 = {r["observed_at"] for r in prices if "/catalogs/v8/runpod/" in r["source"]}
    assert v6
    assert v8
    assert max(v6) < min(v8)
    dated = [r["observed_at"] for r in prices if "/catalogs/v9/" in r["source"]]
    assert max(v6 | v8) < min(dated)


def test_latest_runpod_a100_price_is_the_newer_snapshot(prices: list[dict[str, str]]) -> None:
    latest: dict[tuple[str, ...], dict[str, str]] = {}
    offers: dict[tuple[str, ...], int] = defaultdict(int)
    for row in prices:
        key = (row["gpu_id"], row["provider"], row["region"], row["kind"], row["instance_type"])
        offers[key] += 1
        if key not in latest or row["observed_at"] > latest[key]["observed_at"]:
            latest[key] = row
    key = ("a100-pcie-80gb", "runpod", "global", "on_demand", "1x_A100-80GB_SECURE")
    assert offers[key] == 2
    assert latest[key]["usd"] == "1.39"


# --- calibration.csv ------------------------------------------------------------------------


def test_calibration_row_count() -> None:
    header, rows = _read("calibration.csv")
    assert header[:3] == ["gpu", "gpu_count", "tp"]
    assert len(rows) == 3378
