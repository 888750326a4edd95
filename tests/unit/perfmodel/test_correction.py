"""A calibration profile's corrections (``perfmodel.correction``): identity is the reference,
each multiplier moves the estimate the way its physics says, and the public estimate and the
fit's evaluation agree."""

from __future__ import annotations

import dataclasses

from service.domain.llm import resolve_model
from service.domain.perfmodel import Deployment, RequestShape, estimate
from service.domain.perfmodel.serving import estimate_fresh
from service.domain.perfmodel.values import Correction, Estimate
from tests.unit.perfmodel.gpu_fixtures import GPUS

A100_SXM = GPUS["a100-sxm-80gb"]

MODEL = resolve_model("qwen3-14b").arch
SHAPE = RequestShape(2000, 100)


def dep(corr: Correction | None) -> Deployment:
    return Deployment(A100_SXM, 1, "bf16", "bf16", "vllm", False, "0.11", corr)


def corr(**scale: float) -> Correction:
    return Correction("team v1", "vllm", "ampere-hbm", **scale)


def comparable(est: Estimate) -> dict[str, object]:
    values: dict[str, object] = dataclasses.asdict(est)
    values.pop("assumptions")
    return values


def test_identity_corrections_are_the_reference() -> None:
    for load in ({"concurrency": 16}, {"qps": 0.5}, {}):
        ref = estimate(MODEL, dep(None), SHAPE, **load)
        same = estimate(MODEL, dep(corr()), SHAPE, **load)
        assert comparable(same) == comparable(ref)


def test_each_multiplier_moves_the_estimate_its_way() -> None:
    ref = estimate(MODEL, dep(None), SHAPE, concurrency=16)
    faster_memory = estimate(MODEL, dep(corr(memory=1.5)), SHAPE, concurrency=16)
    faster_compute = estimate(MODEL, dep(corr(compute=1.5)), SHAPE, concurrency=16)
    more_overhead = estimate(MODEL, dep(corr(overhead=3.0)), SHAPE, concurrency=16)
    assert faster_memory.tpot_ms < ref.tpot_ms  # decode streams weights and KV
    assert faster_compute.ttft_ms < ref.ttft_ms  # prefill is GEMM-bound
    assert more_overhead.tpot_ms > ref.tpot_ms
    assert faster_memory.output_tokens_per_s > ref.output_tokens_per_s


def test_a_correction_for_another_family_changes_nothing() -> None:
    other = Correction("team v1", "vllm", "hopper-hbm", 2.0, 2.0, 2.0)
    ref = estimate(MODEL, dep(None), SHAPE, concurrency=16)
    assert comparable(estimate(MODEL, dep(other), SHAPE, concurrency=16)) == comparable(ref)


def test_the_fit_evaluates_what_the_public_estimate_answers() -> None:
    c = corr(compute=1.3, memory=0.9, overhead=1.2)
    assert comparable(estimate_fresh(MODEL, dep(c), SHAPE, 16)) == comparable(
        estimate(MODEL, dep(c), SHAPE, concurrency=16)
    )


def test_a_correction_measured_on_borrowed_constants_stays_on_its_own_cards() -> None:
    """MI300X cards run on the hopper-hbm constants; a team's MI300X correction corrects MI300X
    estimates only, and a Hopper correction never moves an MI300X one."""
    model = resolve_model("llama-3.1-70b").arch

    def on(card: str, tp: int, c: Correction | None) -> dict[str, object]:
        d = Deployment(GPUS[card], tp, "fp8", "fp8", "vllm", False, None, c)
        return comparable(estimate(model, d, SHAPE, concurrency=16))

    amd = Correction("team v1", "vllm", "cdna3-hbm", 1.5, 1.5, 1.0)
    hopper = Correction("team v1", "vllm", "hopper-hbm", 1.5, 1.5, 1.0)
    assert on("mi300x", 1, amd) != on("mi300x", 1, None)
    assert on("mi300x", 1, hopper) == on("mi300x", 1, None)
    assert on("h100-sxm", 4, amd) == on("h100-sxm", 4, None)
    assert on("h100-sxm", 4, hopper) != on("h100-sxm", 4, None)
