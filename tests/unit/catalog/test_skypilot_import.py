"""The SkyPilot importer on the bundled snapshot (service/data/skypilot/): every defect its
README lists is a case here, on the real rows that show it."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache

import pytest

from service.domain.catalog import GpuSpec, PricePoint
from service.domain.errors import InvalidInput
from service.domain.price_import import SKYPILOT_CLOUDS, ParsedCatalog
from service.store.csv_format import bundled_text, parse_gpus_csv
from service.store.skypilot_format import parse_skypilot_csv
from service.store.skypilot_seed import (
    BUNDLED_FILES,
    FIRST_SNAPSHOT,
    V9_AWS_FILES,
    V9_FILES,
    SeedFile,
    bundled_imports,
)
from service.usecases.seed_catalog import seed_snapshot

WHEN = datetime(2026, 12, 1, 6, tzinfo=UTC)


@cache
def gpus() -> dict[str, GpuSpec]:
    return {g.id: g for g in parse_gpus_csv(bundled_text("gpus.csv"))}


def bundled(cloud: str) -> str:
    return bundled_text(f"skypilot/{cloud}/vms.csv")


def rows_of(cloud: str, keep: Callable[[str], bool]) -> str:
    """The bundled file's header and the data lines ``keep`` accepts (real rows, unedited)."""
    header, *lines = bundled(cloud).splitlines(keepends=True)
    chosen = [line for line in lines if keep(line)]
    assert chosen, "the fixture selects no row"
    return header + "".join(chosen)


def regions_with(cloud: str, prefix: str, keep: Callable[[dict[str, str]], bool]) -> set[str]:
    """Regions of the bundled rows of instance type ``prefix`` that ``keep`` accepts."""
    rows = csv.DictReader(bundled(cloud).splitlines())
    return {r["Region"] for r in rows if r["InstanceType"] == prefix.rstrip(",") and keep(r)}


def parse(text: str, cloud: str) -> ParsedCatalog:
    return parse_skypilot_csv(text, cloud, gpus(), observed_at=WHEN, source="test")


def tally(parsed: ParsedCatalog, reason: str) -> int:
    return sum(t.count for t in (*parsed.skipped, *parsed.adjusted) if t.reason == reason)


def offers(parsed: ParsedCatalog, **match: object) -> list[PricePoint]:
    return [p for p in parsed.points if all(getattr(p, k) == v for k, v in match.items())]


def instance_price(point: PricePoint) -> float:
    return point.usd * point.gpus_per_instance


# ---- AWS ------------------------------------------------------------------------------------


def test_aws_p5e_has_no_on_demand_price_so_only_spot_offers_are_made() -> None:
    parsed = parse(rows_of("aws", lambda line: line.startswith("p5e.48xlarge,")), "aws")
    assert offers(parsed, kind="on_demand") == []
    spot = offers(parsed, kind="spot")
    assert spot and {p.gpu_id for p in spot} == {"h200-sxm"}
    assert tally(parsed, "no_on_demand_price") == 4  # rows with a spot price only
    assert tally(parsed, "no_price") == 3  # rows with neither price add nothing
    assert {p.region for p in spot} == regions_with(
        "aws", "p5e.48xlarge,", lambda row: row["SpotPrice"] != ""
    )


def test_aws_zone_rows_without_spot_keep_their_on_demand_price() -> None:
    parsed = parse(rows_of("aws", lambda line: line.startswith("g6.xlarge,")), "aws")
    assert tally(parsed, "no_spot_price") == 1
    every = regions_with("aws", "g6.xlarge,", lambda row: True)
    assert {p.region for p in offers(parsed, kind="on_demand")} == every
    spot = regions_with("aws", "g6.xlarge,", lambda row: row["SpotPrice"] != "")
    assert {p.region for p in offers(parsed, kind="spot")} == spot


def test_aws_p4de_zones_listed_twice_make_one_80gb_offer_with_both_prices() -> None:
    text = rows_of("aws", lambda line: line.startswith("p4de.24xlarge,"))
    assert "'Name': 'A100'," in text and "'Name': 'A100-80GB'," in text
    parsed = parse(text, "aws")
    assert {p.gpu_id for p in parsed.points} == {"a100-sxm-80gb"}
    east = {p.kind: p for p in offers(parsed, region="us-east-1")}
    assert set(east) == {"on_demand", "spot"}
    assert instance_price(east["on_demand"]) == pytest.approx(40.96575)
    assert instance_price(east["spot"]) == pytest.approx(4.6629)  # lowest of the spot zones
    assert east["on_demand"].gpus_per_instance == 8
    assert tally(parsed, "zone_listed_twice") == 5
    assert "lowest of 6 zones" in east["on_demand"].source


def test_zones_merge_into_one_offer_per_region_at_the_lowest_price() -> None:
    parsed = parse(rows_of("aws", lambda line: line.startswith("g4dn.12xlarge,")), "aws")
    regions = [p.region for p in offers(parsed, kind="on_demand")]
    assert len(regions) == len(set(regions))
    east = offers(parsed, region="ap-east-1", kind="spot")[0]
    assert instance_price(east) == pytest.approx(2.4607)  # min of 3.0287 and 2.4607
    assert east.usd == pytest.approx(2.4607 / 4)
    assert tally(parsed, "zones_merged") > 0


def test_aws_spot_equal_to_on_demand_within_rounding_is_no_spot_offer() -> None:
    parsed = parse(rows_of("aws", lambda line: line.startswith("g5.48xlarge,")), "aws")
    seoul = {p.kind: instance_price(p) for p in offers(parsed, region="ap-northeast-2")}
    # on-demand 20.02809 in three zones; "spot" 20.0281 in two of them is no discount, so the
    # spot offer is the one real discount (18.6657 in apne2-az1)
    assert seoul == {"on_demand": pytest.approx(20.02809), "spot": pytest.approx(18.6657)}
    assert tally(parsed, "spot_equals_on_demand") >= 2
    assert tally(parsed, "spot_above_on_demand") == 0


def test_a_v9_header_with_more_columns_is_read_by_name() -> None:
    v9 = (
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,"
        "Region,AvailabilityZone,Arch,LocalDiskType,NVMeSupported,LocalDiskSize,LocalDiskCount\n"
        "g6e.xlarge,L40S,1.0,4.0,32.0,\"{'Gpus': [{'Name': 'L40S', 'MemoryInfo': "
        "{'SizeInMiB': 45776}}]}\",1.861,0.6521,us-east-1,use1-az1,x86_64,nvme-ssd,True,250,1\n"
    )
    (on_demand, spot) = parse(v9, "aws").points
    assert (on_demand.gpu_id, on_demand.usd, spot.usd) == ("l40s", 1.861, 0.6521)


# ---- GCP ------------------------------------------------------------------------------------


def test_gcp_h100_rows_with_spot_above_on_demand_are_left_out() -> None:
    text = rows_of(
        "gcp",
        lambda line: (
            ("asia-northeast1-b" in line or "us-east4-a" in line)
            and (",H100," in line or "a3-" in line)
        ),
    )
    parsed = parse(text, "gcp")
    # asia-northeast1-b: H100 at 6.67635 on-demand and 10.01876 spot (1 GPU), alike for 2, 4, 8
    assert tally(parsed, "spot_above_on_demand") == 4
    assert offers(parsed, gpu_id="h100-sxm", region="asia-northeast1") == []
    assert {p.gpus_per_instance for p in offers(parsed, region="us-east4")} == {1, 2, 4, 8}


def test_gcp_adds_the_host_vm_to_the_accelerator_price() -> None:
    text = rows_of(
        "gcp",
        lambda line: "us-central1-a" in line and (",A100," in line or "a2-highgpu-8g" in line),
    )
    parsed = parse(text, "gcp")
    (on_demand,) = offers(parsed, kind="on_demand", instance_type="a2-highgpu-8g")
    assert on_demand.gpu_id == "a100-sxm-40gb"
    assert on_demand.gpus_per_instance == 8
    gpu_part = 8 * 2.93391  # the accelerator row's price for 8 A100 in us-central1
    host = 5.91582
    assert instance_price(on_demand) == pytest.approx(gpu_part + host, rel=1e-4)
    assert "+ host 5.91582" in on_demand.source
    assert tally(parsed, "gcp_host_added") >= 1


def test_gcp_a100_sizes_price_each_gpu_alike_and_16_needs_its_mega_host() -> None:
    text = rows_of(
        "gcp", lambda line: "asia-northeast1-a" in line and (",A100," in line or "a2-" in line)
    )
    parsed = parse(text, "gcp")
    host = re.compile(r"\+ host ([0-9.]+)")
    gpu_only = {}
    for p in offers(parsed, kind="on_demand", gpu_id="a100-sxm-40gb"):
        found = host.search(p.source)
        assert found is not None
        gpu_only[p.gpus_per_instance] = (instance_price(p) - float(found[1])) / p.gpus_per_instance
    assert set(gpu_only) == {1, 2, 4, 8}  # no a2-megagpu-16g host row in asia-northeast1-a
    assert max(gpu_only.values()) == pytest.approx(min(gpu_only.values()), rel=1e-4)
    assert tally(parsed, "gcp_no_host_row") == 1


def test_gcp_accelerators_without_host_rows_in_the_source_are_priced_gpu_only() -> None:
    text = rows_of("gcp", lambda line: ",T4," in line and "us-central1-a" in line)
    parsed = parse(text, "gcp")
    names = {p.instance_type for p in parsed.points}
    assert "n1 + 4x T4 (GPU only, host VM extra)" in names
    assert tally(parsed, "gcp_gpu_only") == 3


def test_gcp_h100_mega_is_the_h100_sxm_of_a3_megagpu() -> None:
    parsed = parse(rows_of("gcp", lambda line: ",H100-MEGA," in line), "gcp")
    assert {(p.gpu_id, p.instance_type) for p in parsed.points} == {
        ("h100-sxm", "a3-megagpu-8g (GPU only, host VM extra)")
    }


def test_gpu_memory_picks_the_variant_of_a_name() -> None:
    header = bundled("lambda").splitlines(keepends=True)[0]
    row = "gpu_8x_a100,A100,8.0,124.0,1800.0,10.32,us-east-1,"
    row += "\"{'Gpus': [{'Name': 'A100', 'Count': 8.0, 'MemoryInfo': {'SizeInMiB': %d}}]}\",\n"
    forty = parse(header + row % 40960, "lambda")
    eighty = parse(header + row % 81920, "lambda")
    assert {p.gpu_id for p in forty.points} == {"a100-sxm-40gb"}
    assert {p.gpu_id for p in eighty.points} == {"a100-sxm-80gb"}
    with pytest.raises(InvalidInput, match="GPU memory in GpuInfo matches no catalog variant"):
        parse(header + row % 8192, "lambda")


# ---- Azure ----------------------------------------------------------------------------------


def test_azure_h100_spot_equal_to_on_demand_is_not_a_spot_offer() -> None:
    parsed = parse(rows_of("azure", lambda line: ",H100," in line), "azure")
    assert offers(parsed, kind="spot") == []
    assert tally(parsed, "spot_equals_on_demand") == 11


def test_azure_nd96isr_h100_v5_is_priced_as_its_8_gpus_not_12() -> None:
    parsed = parse(
        rows_of("azure", lambda line: line.startswith("Standard_ND96isr_H100_v5,")), "azure"
    )
    east = offers(parsed, region="eastus")[0]
    assert (east.gpu_id, east.gpus_per_instance) == ("h100-sxm", 8)
    assert east.usd == pytest.approx(98.32 / 8)
    assert tally(parsed, "gpu_count_corrected") == 3


def test_azure_promo_rows_lack_spot_and_keep_their_on_demand_price() -> None:
    promo = rows_of("azure", lambda line: "_Promo," in line)
    assert promo.count("\n") > 1
    # every promo row in the snapshot is a K80 or M60: refused before prices are read
    parsed_k80 = parse(
        promo
        + rows_of("azure", lambda line: line.startswith("Standard_NC4as_T4_v3,")).split("\n", 1)[1],
        "azure",
    )
    assert tally(parsed_k80, "cannot_serve_llms") == promo.count("\n") - 1
    same_shape = (
        promo.splitlines()[0] + "\n" + "Standard_NC4as_T4_v3_Promo,T4,1,4.0,28,T4,0.4,,eastus,V2\n"
    )
    parsed = parse(same_shape, "azure")
    assert [(p.kind, p.usd) for p in parsed.points] == [("on_demand", 0.4)]
    assert tally(parsed, "no_spot_price") == 1


def test_k80_m60_and_radeon_mi25_are_refused_as_unable_to_serve_llms() -> None:
    old = rows_of(
        "azure", lambda line: any(f",{n}," in line for n in ("K80", "M60", "Radeon MI25"))
    )
    unpriced = [line for line in old.splitlines() if ",Radeon MI25," in line and ",westus," in line]
    assert unpriced and all(",,," in line for line in unpriced)  # no price in westus
    with pytest.raises(InvalidInput, match="cannot serve current LLMs"):
        parse(old, "azure")
    mixed = parse(old + rows_of("azure", lambda line: ",T4," in line).split("\n", 1)[1], "azure")
    assert tally(mixed, "cannot_serve_llms") == old.count("\n") - 1
    assert {p.gpu_id for p in mixed.points} == {"t4"}


def test_azure_nc_a100_and_h100_are_the_pcie_and_nvl_cards_and_nd_the_sxm() -> None:
    parsed = parse(rows_of("azure", lambda line: "A100" in line or "H100" in line), "azure")
    by_type = {p.instance_type: p.gpu_id for p in parsed.points}
    assert by_type["Standard_NC24ads_A100_v4"] == "a100-pcie-80gb"
    assert by_type["Standard_ND96amsr_A100_v4"] == "a100-sxm-80gb"
    assert by_type["Standard_ND96asr_v4"] == "a100-sxm-40gb"
    assert by_type["Standard_NC40ads_H100_v5"] == "h100-nvl"
    assert by_type["Standard_NC80adis_H100_v5"] == "h100-nvl"
    assert by_type["Standard_ND96isr_H100_v5"] == "h100-sxm"


# ---- RunPod ---------------------------------------------------------------------------------


def test_runpod_l40s_spot_twice_on_demand_is_swapped() -> None:
    parsed = parse(rows_of("runpod", lambda line: line.startswith("1x_L40S_SECURE,")), "runpod")
    us = {p.kind: p.usd for p in offers(parsed, region="US")}
    assert us == {"on_demand": 0.86, "spot": 0.43}
    assert tally(parsed, "spot_swapped") == 25


def test_runpod_repeated_2x_b200_rows_count_once() -> None:
    parsed = parse(rows_of("runpod", lambda line: line.startswith("2x_B200_SECURE,")), "runpod")
    assert tally(parsed, "duplicate_row") == 14
    (us,) = offers(parsed, region="US")
    assert "lowest of 14 zones" in us.source


def test_runpod_8x_rtxa6000_has_no_us_offer_because_the_source_has_none() -> None:
    parsed = parse(rows_of("runpod", lambda line: "x_RTXA6000_SECURE," in line), "runpod")
    shapes_in_us = {p.gpus_per_instance for p in offers(parsed, region="US")}
    assert shapes_in_us == {1, 2, 4}
    assert 8 in {p.gpus_per_instance for p in parsed.points}


def test_runpod_bare_h100_and_a100_80gb_are_pcie() -> None:
    parsed = parse(
        rows_of("runpod", lambda line: line.startswith(("1x_H100", "1x_A100"))), "runpod"
    )
    by_type = {p.instance_type: p.gpu_id for p in parsed.points}
    assert by_type["1x_H100_SECURE"] == "h100-pcie"
    assert by_type["1x_H100-SXM_SECURE"] == "h100-sxm"
    assert by_type["1x_H100-NVL_SECURE"] == "h100-nvl"
    assert by_type["1x_A100-80GB_SECURE"] == "a100-pcie-80gb"
    assert by_type["1x_A100-80GB-SXM_SECURE"] == "a100-sxm-80gb"


# ---- Lambda ---------------------------------------------------------------------------------


def test_lambda_total_memory_equal_to_per_gpu_memory_is_not_divided() -> None:
    text = rows_of("lambda", lambda line: line.startswith("gpu_8x_a100_80gb_sxm4,"))
    assert "'TotalGpuMemoryInMiB': 81920" in text  # 8 GPUs, total given as one GPU's
    parsed = parse(text, "lambda")
    assert {(p.gpu_id, p.gpus_per_instance) for p in parsed.points} == {("a100-sxm-80gb", 8)}
    assert tally(parsed, "memory_mismatch") == 0


def test_lambda_identical_a100_rows_are_two_offers_of_two_parts() -> None:
    text = rows_of("lambda", lambda line: line.startswith(("gpu_1x_a100,", "gpu_1x_a100_sxm4,")))
    parsed = parse(text, "lambda")
    by_type = {p.instance_type: p.gpu_id for p in parsed.points}
    assert by_type == {"gpu_1x_a100": "a100-pcie-40gb", "gpu_1x_a100_sxm4": "a100-sxm-40gb"}
    assert tally(parsed, "duplicate_row") == 0
    assert tally(parsed, "no_spot_price") == len(parsed.points)  # Lambda has no spot prices


# ---- bad files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cloud", "message", "field"),
    [
        ("", "aws", "missing columns", "header"),
        ("gpu_id,provider,region\nh100,x,y\n", "aws", "not a SkyPilot aws vms.csv", "header"),
        (bundled("lambda").splitlines(keepends=True)[0], "lambda", "holds no rows", "csv"),
        (
            bundled("lambda").splitlines(keepends=True)[0]
            + "gpu_1x_a10,A10,1.0,30.0,200.0,cheap,us-east-1,,\n",
            "lambda",
            "line 2: Price: 'cheap' is not a number",
            "Price",
        ),
        (
            bundled("lambda").splitlines(keepends=True)[0]
            + "gpu_1x_a10,A10,1.0,30.0,200.0,nan,us-east-1,,\n",
            "lambda",
            "not a finite number",
            "Price",
        ),
        (bundled("lambda"), "oracle", "unknown cloud 'oracle'", "cloud"),
        (bundled("lambda"), "aws", "missing columns AvailabilityZone", "header"),
    ],
)
def test_a_bad_file_is_refused_naming_the_problem(
    text: str, cloud: str, message: str, field: str
) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        parse(text, cloud)
    assert caught.value.field == field


def test_an_unknown_accelerator_is_skipped_and_named() -> None:
    header = bundled("lambda").splitlines(keepends=True)[0]
    text = header + "gpu_1x_x9,X9000,1.0,8,64,1.0,us-east-1,X9000,\n"
    text += "gpu_1x_a10,A10,1.0,30.0,200.0,0.75,us-east-1,A10,\n"
    parsed = parse(text, "lambda")
    (unknown,) = [t for t in parsed.skipped if t.reason == "unknown_accelerator"]
    assert unknown.count == 1 and "X9000 (1)" in unknown.detail


def test_a_fractional_gpu_count_is_skipped() -> None:
    header = bundled("lambda").splitlines(keepends=True)[0]
    text = header + "gpu_half_a10,A10,0.5,8,64,0.4,us-east-1,A10,\n"
    text += "gpu_1x_a10,A10,1.0,30.0,200.0,0.75,us-east-1,A10,\n"
    assert tally(parse(text, "lambda"), "bad_gpu_count") == 1


# ---- the whole snapshot ---------------------------------------------------------------------


def test_every_bundled_file_is_read_and_every_accelerator_is_priced_or_refused() -> None:
    imports = bundled_imports(gpus())
    assert [f.cloud for f in FIRST_SNAPSHOT] == sorted(SKYPILOT_CLOUDS)
    assert BUNDLED_FILES == FIRST_SNAPSHOT + V9_FILES + V9_AWS_FILES
    assert [i.file for i in imports] == list(BUNDLED_FILES)
    total = 0
    for item in imports:
        parsed = item.parsed
        reasons = {t.reason for t in parsed.skipped}
        unknown = [t.detail for t in parsed.skipped if t.reason == "unknown_accelerator"]
        # AWS's v9 file has one B300 instance, a GPU the catalog does not hold yet (below)
        assert unknown in ([], ["accelerator not in the catalog: B300 (1)"]), item.file
        assert "memory_mismatch" not in reasons, item.file.cloud
        keys = [p.offer_key for p in parsed.points]
        assert len(keys) == len(set(keys)), item.file.cloud
        for p in parsed.points:
            assert p.gpu_id in gpus()
            assert p.usd > 0 and p.gpus_per_instance >= 1
            assert p.observed_at == item.file.observed_at
            assert p.source.startswith("https://github.com/skypilot-org/skypilot-catalog/blob/")
            assert len(p.instance_type) <= 128 and len(p.region) <= 64
        spot = {
            (p.gpu_id, p.region, p.instance_type): p.usd for p in parsed.points if p.kind == "spot"
        }
        on_demand = {
            (p.gpu_id, p.region, p.instance_type): p.usd
            for p in parsed.points
            if p.kind == "on_demand"
        }
        assert all(spot[k] < on_demand[k] for k in spot.keys() & on_demand.keys())
        total += len(parsed.points)
    assert total > 3000
    priced = {p.gpu_id for i in imports for p in i.parsed.points}
    for new in ("a40", "rtx-3090", "rtx-4090", "rtx-a4500", "rtx-a5000", "quadro-rtx-6000"):
        assert new in priced
    assert {"gh200", "p100-pcie-16gb", "p4"} <= priced


# ---- the newer v9 Lambda file ---------------------------------------------------------------


def lambda_prices(files: tuple[SeedFile, ...]) -> dict[tuple[str, str, str], float]:
    """On-demand USD per GPU-hour of each (GPU, region, instance type) in ``files``."""
    (item,) = bundled_imports(gpus(), files)
    return {
        (p.gpu_id, p.region, p.instance_type): p.usd
        for p in item.parsed.points
        if p.kind == "on_demand"
    }


def test_the_v9_lambda_file_is_a_newer_observation_of_every_v7_lambda_offer() -> None:
    """Every offer of the v7 Lambda file is priced again by the v9 file, later and higher (the
    source's own prices, not figures written here); the v9 file adds instance sizes."""
    (v7_file,) = [f for f in FIRST_SNAPSHOT if f.cloud == "lambda"]
    (v9_file,) = V9_FILES
    assert v9_file.cloud == "lambda" and v9_file.observed_at > v7_file.observed_at
    v7, v9 = lambda_prices((v7_file,)), lambda_prices(V9_FILES)
    assert v7.keys() < v9.keys()
    assert all(v9[key] > v7[key] for key in v7)
    assert {gpu for gpu, _, _ in v9.keys() - v7.keys()} >= {"b200"}


def test_the_bundled_catalog_prices_lambda_offers_at_their_v9_price() -> None:
    """The seed catalog's current Lambda offers are the v9 observations (or the
    ``prices.csv`` rows of the same date): no v7 price is current any more."""
    (v9_file,) = V9_FILES
    v9 = lambda_prices(V9_FILES)
    current = [
        p for p in seed_snapshot().prices if p.provider == "lambda" and p.kind == "on_demand"
    ]
    assert current
    assert all(p.observed_at == v9_file.observed_at for p in current)
    regional = [p for p in current if p.region != "global"]
    assert {(p.gpu_id, p.region, p.instance_type) for p in regional} == v9.keys()
    assert all(p.usd == v9[(p.gpu_id, p.region, p.instance_type)] for p in regional)


# ---- the newer v9 AWS file ------------------------------------------------------------------


def aws_on_demand(files: tuple[SeedFile, ...]) -> dict[tuple[str, str], float]:
    """On-demand USD per instance-hour of each (instance type, region) in ``files``."""
    (item,) = bundled_imports(gpus(), files)
    return {
        (p.instance_type, p.region): p.usd * p.gpus_per_instance
        for p in item.parsed.points
        if p.kind == "on_demand"
    }


# AWS's price cut of June 2025 ("up to 45%"), per family: P4d/P4de 33%, P5 44%, P5en 25%.
JUNE_2025_CUT = {"p4d.24xlarge": 0.33, "p4de.24xlarge": 0.33, "p5.48xlarge": 0.44}
JUNE_2025_CUT["p5en.48xlarge"] = 0.25


def test_the_v9_aws_file_prices_every_v7_aws_offer_again_after_the_june_2025_cut() -> None:
    """Every AWS on-demand offer of the v7 file is priced again by the v9 file (which adds
    regions, the 1-GPU p5.4xlarge, B200 and RTX PRO 6000): the P4 and P5 families by AWS's
    announced cut, in every region alike, and the p3 and g families unchanged. Both sides are
    the source's own prices; the cut is AWS's."""
    (v7_file,) = [f for f in FIRST_SNAPSHOT if f.cloud == "aws"]
    (v9_file,) = V9_AWS_FILES
    assert v9_file.observed_at > v7_file.observed_at
    v7, v9 = aws_on_demand((v7_file,)), aws_on_demand(V9_AWS_FILES)
    assert v7.keys() <= v9.keys()
    for (instance, region), old in v7.items():
        ratio = v9[(instance, region)] / old
        expected = 1.0 - JUNE_2025_CUT.get(instance, 0.0)
        assert ratio == pytest.approx(expected, abs=0.006), (instance, region, ratio)
    added = {instance for instance, _ in v9.keys() - v7.keys()}
    assert {"p5.4xlarge", "p6-b200.48xlarge", "g7e.2xlarge", "g7e.48xlarge"} <= added


def test_the_v9_aws_file_counts_the_accelerator_the_catalog_lacks() -> None:
    """The B300 instance of the v9 file is counted as an unknown accelerator, not priced."""
    (item,) = bundled_imports(gpus(), V9_AWS_FILES)
    (unknown,) = [t for t in item.parsed.skipped if t.reason == "unknown_accelerator"]
    assert unknown.count == 1 and "B300" in unknown.detail
    assert not any(p.instance_type.startswith("p6-b300") for p in item.parsed.points)


def test_the_bundled_catalog_prices_every_aws_offer_of_the_v9_file_at_that_date_or_later() -> None:
    """The seed catalog's current observation of every offer the v9 AWS file prices is the v9
    one, or a dated ``prices.csv`` row as new or newer (p5.48xlarge in us-east-1, 2026-08-22)."""
    (v9_file,) = V9_AWS_FILES
    (item,) = bundled_imports(gpus(), V9_AWS_FILES)
    current = {p.offer_key: p for p in seed_snapshot().prices if p.provider == "aws"}
    for point in item.parsed.points:
        held = current[point.offer_key]
        assert held.observed_at >= v9_file.observed_at, point.offer_key
        if held.observed_at == v9_file.observed_at and "region as listed" not in held.source:
            assert held.usd == pytest.approx(point.usd, rel=1e-4), point.offer_key
