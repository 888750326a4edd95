"""The searches run in lockstep on arrays give each (deployment, shape) the answer of its own
scalar search: capacities (same limit, same reason, same numbers) and latencies at a rate."""

from __future__ import annotations

import math
import random

import pytest

from service.domain.catalog import GpuSpec
from service.domain.errors import InvalidInput
from service.domain.llm import PRESETS
from service.domain.perfmodel import (
    Capacity,
    Deployment,
    Engine,
    Precision,
    RequestShape,
    Slo,
    estimate,
    max_qps_under_slo,
    max_qps_under_slo_many,
    percentiles_at_rates,
)
from service.domain.perfmodel.calibration import default_calibration, resolve_profile
from service.domain.perfmodel.capacity import max_qps_under_slo_with
from service.domain.perfmodel.correction import with_correction
from service.domain.perfmodel.engine_limits import card_profile
from tests.unit.perfmodel.gpu_fixtures import GPUS

MODELS = ("llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-120b")
ENGINES: tuple[Engine, ...] = ("vllm", "sglang", "trtllm", "tgi")


def dep_for(gpu: GpuSpec, tp: int, engine: Engine) -> Deployment:
    """``tp`` cards of ``gpu``, fp8 weights where the card has fp8, fp8 KV."""
    precision: Precision = "fp8" if gpu.fp8_tflops else "bf16"
    return Deployment(gpu, tp, precision, "fp8", engine)


def scalar(model: str, dep: Deployment, shape: RequestShape, slo: Slo) -> Capacity:
    """The one-at-a-time search, not memoised."""
    arch = PRESETS[model]
    build = resolve_profile(dep.engine, dep.engine_version).profile
    cal = with_correction(default_calibration(), dep, build.constants)
    profile = card_profile(arch, dep, build, cal)
    return max_qps_under_slo_with(arch, dep, shape, slo, profile, cal)


def same(a: Capacity, b: Capacity) -> bool:
    if (a.limited_by, a.reason) != (b.limited_by, b.reason):
        return False
    pairs = zip(
        (a.qps, a.ttft_ms, a.tpot_ms, a.e2e_ms, a.concurrency),
        (b.qps, b.ttft_ms, b.tpot_ms, b.e2e_ms, b.concurrency),
        strict=True,
    )
    return all(x == pytest.approx(y, rel=1e-12, abs=1e-15) for x, y in pairs)


@pytest.mark.parametrize("seed", range(6))
def test_lockstep_matches_the_scalar_search(seed: int) -> None:
    rng = random.Random(seed)
    model = MODELS[seed % len(MODELS)]
    engine = ENGINES[seed % len(ENGINES)]
    deps = [dep_for(gpu, tp, engine) for gpu in GPUS.values() for tp in (1, 2, 4, 8)]
    shapes = [RequestShape(rng.randint(1, 9000), rng.randint(1, 1500)) for _ in range(4)]
    slo = Slo(
        ttft_ms=rng.choice([None, rng.uniform(50, 5000)]),
        tpot_ms=rng.choice([None, rng.uniform(5, 150)]),
        e2e_ms=rng.choice([None, rng.uniform(2000, 90000)]),
        percentile=rng.choice([50.0, 90.0, 95.0, 99.0, 99.9]),
    )
    rows = max_qps_under_slo_many(PRESETS[model], deps, shapes, slo)
    assert len(rows) == len(deps)
    kinds = set()
    for dep, row in zip(deps, rows, strict=True):
        assert len(row) == len(shapes)
        for shape, cap in zip(shapes, row, strict=True):
            ref = scalar(model, dep, shape, slo)
            assert same(cap, ref), (dep.gpu.id, dep.tensor_parallel, shape, slo, cap, ref)
            kinds.add(cap.limited_by)
    # the cases exercise more than one way a search ends
    assert len(kinds) >= 2, kinds


def test_every_way_a_search_ends_is_covered() -> None:
    """Across seeds the lanes end in a zero-load failure, at the cap and inside the bisection."""
    arch = PRESETS["llama-3.1-70b"]
    deps = [
        Deployment(GPUS[g], tp, "fp8", "fp8", "vllm")
        for g in ("h100-sxm", "l4")
        for tp in (1, 2, 4)
    ]
    shapes = [RequestShape(200, 100), RequestShape(4000, 300)]
    found: set[str] = set()
    for slo in (
        Slo(ttft_ms=1e6, tpot_ms=1e6, e2e_ms=None, percentile=95),  # the cap binds
        Slo(ttft_ms=400, tpot_ms=30, e2e_ms=None, percentile=95),  # a latency limit binds
        Slo(ttft_ms=1.0, tpot_ms=None, e2e_ms=None, percentile=95),  # nothing serves
    ):
        for dep, row in zip(deps, max_qps_under_slo_many(arch, deps, shapes, slo), strict=True):
            for shape, cap in zip(shapes, row, strict=True):
                assert same(cap, scalar("llama-3.1-70b", dep, shape, slo))
                found.add(cap.limited_by if cap.qps > 0 else f"zero:{cap.limited_by}")
    assert {"ttft", "zero:ttft", "zero:does_not_fit"} <= found
    assert found & {"kv_capacity", "engine_batch_cap", "token_budget"}


def test_the_memo_is_shared_with_the_single_search() -> None:
    arch = PRESETS["llama-3.1-8b"]
    dep = Deployment(GPUS["l40s"], 1, "fp8", "fp8", "vllm")
    shape = RequestShape(777, 333)
    slo = Slo(ttft_ms=987.0, tpot_ms=55.5, e2e_ms=None, percentile=90)
    (row,) = max_qps_under_slo_many(arch, [dep], [shape], slo)
    assert max_qps_under_slo(arch, dep, shape, slo) is row[0]


def test_bad_input_names_the_field() -> None:
    arch = PRESETS["llama-3.1-8b"]
    dep = Deployment(GPUS["l40s"], 1, "fp8", "fp8", "vllm")
    with pytest.raises(InvalidInput) as bad_shape:
        max_qps_under_slo_many(arch, [dep], [RequestShape(0, 10)], Slo(1000, 50, None, 95))
    assert bad_shape.value.field == "prompt_tokens"
    with pytest.raises(InvalidInput) as bad_slo:
        max_qps_under_slo_many(arch, [dep], [RequestShape(10, 10)], Slo(1000, 50, None, 20))
    assert bad_slo.value.field == "slo.percentile"


@pytest.mark.parametrize("seed", range(4))
def test_percentiles_at_rates_match_the_estimate(seed: int) -> None:
    """Each load's TTFT and TPOT are those of ``estimate(qps=...)`` at the same percentile:
    below capacity, far above it (infinite) and for a model that does not fit (zeros)."""
    rng = random.Random(100 + seed)
    model = MODELS[seed % len(MODELS)]
    engine = ENGINES[seed % len(ENGINES)]
    percentile = (50.0, 90.0, 95.0, 99.0)[seed]
    loads = []
    for gpu in GPUS.values():
        dep = dep_for(gpu, rng.choice([1, 2, 4, 8]), engine)
        shape = RequestShape(rng.randint(1, 8000), rng.randint(1, 1200))
        top = estimate(PRESETS[model], dep, shape)
        peak = top.requests_per_s if top.fits else 1.0
        for share in (1e-4, 0.3, 0.97, 3.0):
            loads.append((dep, shape, max(peak * share, 1e-6)))
    got = percentiles_at_rates(PRESETS[model], loads, percentile)
    names = (f"ttft_p{percentile:.0f}_ms", f"tpot_p{percentile:.0f}_ms")
    seen = set()
    for (dep, shape, rate), (ttft, tpot) in zip(loads, got, strict=True):
        est = estimate(PRESETS[model], dep, shape, qps=rate)
        if est.latency is None:
            want = (est.ttft_ms, est.tpot_ms)
            seen.add("does_not_fit")
        else:
            want = (getattr(est.latency, names[0]), getattr(est.latency, names[1]))
            seen.add("overloaded" if math.isinf(want[0]) else "served")
        assert (ttft, tpot) == pytest.approx(want, rel=1e-12), (dep.gpu.id, shape, rate)
    assert {"served", "overloaded"} <= seen
