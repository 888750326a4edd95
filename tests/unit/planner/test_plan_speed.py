"""What makes an uncached plan cheaper changes no answer: memoised hashes agree with equality,
the offers a snapshot remembers are the offers a fresh scan finds, the single-type solves split
between threads give the plan the sequential path gives, and the capacity search checks the
SLO limits in the order, and with the results, of the full metrics."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import cache

import pytest

from service.domain.catalog import MEMO_ENTRIES, CatalogSnapshot, price_kind_for
from service.domain.llm import resolve_model
from service.domain.perfmodel import Deployment, RequestShape, Slo, max_qps_under_slo
from service.domain.perfmodel.calibration import default_calibration, resolve_profile
from service.domain.planner import PlanConstraints, PlanRequest, WorkloadBucket, plan
from service.domain.planner.candidates import gpu_offers
from service.domain.planner.offers import cheapest_per_shape, offers_for
from service.domain.providers import DEFAULT_PROVIDERS
from service.usecases.seed_catalog import seed_snapshot


@cache
def snapshot() -> CatalogSnapshot:
    return seed_snapshot()


def test_memoised_hashes_follow_equality() -> None:
    h100 = snapshot().gpu_by_id["h100-sxm"]
    a = Deployment(h100, 2, "fp8", "fp8", "vllm")
    b = Deployment(h100, 2, "fp8", "fp8", "vllm")
    c = replace(a, tensor_parallel=4)
    assert a == b and hash(a) == hash(b)
    assert c != a and hash(c) == hash(Deployment(h100, 4, "fp8", "fp8", "vllm"))
    arch = resolve_model("llama-3.1-70b").arch
    assert hash(arch) == hash(replace(arch)) and arch == replace(arch)
    # ``source`` takes no part in equality, so none in the hash either
    assert hash(replace(arch, source="elsewhere")) == hash(arch)
    profile = resolve_profile("vllm").profile
    assert hash(replace(profile)) == hash(profile)
    changed = replace(profile, max_batch=profile.max_batch + 1)
    assert changed != profile and hash(changed) == hash(replace(changed))
    cal = default_calibration()
    assert hash(replace(cal)) == hash(cal)


@pytest.mark.parametrize(
    "constraints",
    [
        PlanConstraints(),
        PlanConstraints(providers=("aws", "vast")),
        PlanConstraints(allow_marketplaces=True),
        PlanConstraints(regions=("us-east-1",)),
        PlanConstraints(pricing="spot"),
        PlanConstraints(pricing="owned"),
    ],
)
def test_remembered_offers_are_the_offers_a_fresh_scan_finds(constraints: PlanConstraints) -> None:
    snap = snapshot()
    for gpu in snap.gpus:
        gap = snap.gap_reason(gpu.id, price_kind_for(constraints.pricing))
        fresh, why = offers_for(gpu, snap.prices, constraints, DEFAULT_PROVIDERS, gap)
        expected = (cheapest_per_shape(fresh), why)
        assert gpu_offers(snap, gpu, constraints, DEFAULT_PROVIDERS) == expected
        assert gpu_offers(snap, gpu, constraints, DEFAULT_PROVIDERS) == expected  # remembered


def test_a_snapshots_memo_is_bounded_and_computes_each_value_once() -> None:
    snap = CatalogSnapshot(revision=1, gpus=snapshot().gpus, prices=())
    calls: list[int] = []

    def compute(i: int) -> int:
        calls.append(i)
        return i * 2

    assert snap.remember(("k", 1), lambda: compute(1)) == 2
    assert snap.remember(("k", 1), lambda: compute(1)) == 2
    assert calls == [1]
    for i in range(MEMO_ENTRIES + 5):
        snap.remember(("n", i), lambda: 0)
    assert len(snap.memo) <= MEMO_ENTRIES


def test_split_single_type_solves_give_the_sequential_plan() -> None:
    rng = random.Random(7)
    snap = snapshot()
    arch = resolve_model("llama-3.1-70b")
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(4):
            shapes = [(rng.randint(100, 6000), rng.randint(50, 800)) for _ in range(4)]
            request = PlanRequest(
                model=arch,
                precision="fp8",
                kv_precision="fp8",
                engine="vllm",
                qps=rng.uniform(5, 80),
                buckets=tuple(
                    WorkloadBucket(f"b{i}", 0.25, p, o) for i, (p, o) in enumerate(shapes)
                ),
                slo=Slo(rng.uniform(800, 4000), rng.uniform(40, 120), None, 95.0),
                constraints=PlanConstraints(headroom=0.2, min_replicas=2),
            )
            assert plan(request, snap, executor=pool) == plan(request, snap)


@pytest.mark.parametrize(
    "slo",
    [
        Slo(ttft_ms=800, tpot_ms=40, e2e_ms=None, percentile=95),
        Slo(ttft_ms=None, tpot_ms=None, e2e_ms=9000, percentile=99),
        Slo(ttft_ms=3000, tpot_ms=None, e2e_ms=20000, percentile=90),
    ],
)
def test_the_capacity_search_honours_every_limit(slo: Slo) -> None:
    """At the capacity found, every limit holds; the percentiles reported are the full ones."""
    arch = resolve_model("llama-3.1-8b").arch
    dep = Deployment(snapshot().gpu_by_id["l40s"], 1, "bf16", "bf16", "vllm")
    cap = max_qps_under_slo(arch, dep, RequestShape(2000, 300), slo)
    assert cap.qps > 0
    for limit, value in ((slo.ttft_ms, cap.ttft_ms), (slo.tpot_ms, cap.tpot_ms)):
        if limit is not None:
            assert value <= limit
    if slo.e2e_ms is not None:
        assert cap.e2e_ms <= slo.e2e_ms
