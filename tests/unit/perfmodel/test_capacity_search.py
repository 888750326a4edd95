"""The capacity search finds the largest running batch whose percentiles hold, to within its
tolerance, whichever way it steps (regula falsi, Illinois, bisection as a safeguard)."""

from __future__ import annotations

import math
import random

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import Deployment, RequestShape, Slo, max_qps_under_slo_many
from service.domain.perfmodel.capacity import (
    TOLERANCE,
    engine_setup,
    excess,
    next_batch,
)
from service.domain.perfmodel.queueing import e2e_q, operating_point, tpot_q, ttft_q
from service.domain.perfmodel.serving import batch_caps
from tests.unit.perfmodel.gpu_fixtures import GPUS

LATENCY_LIMITS = ("ttft", "tpot", "e2e")


def _metrics(
    dep: Deployment, model: str, shape: RequestShape, b: float, q: float
) -> tuple[float, float, float]:
    s = engine_setup(PRESETS[model], dep)
    op = operating_point(s, b, shape.prompt_tokens, shape.output_tokens)
    return ttft_q(s, op, q), tpot_q(op, q), e2e_q(s, op, q)


@pytest.mark.parametrize("seed", range(4))
def test_the_batch_found_holds_and_a_hair_above_it_does_not(seed: int) -> None:
    rng = random.Random(seed)
    model = ("llama-3.1-70b", "llama-3.1-8b", "mixtral-8x7b", "qwen2.5-7b")[seed]
    engine = ("vllm", "sglang", "trtllm", "vllm")[seed]
    deps = [
        Deployment(gpu, tp, "fp8" if gpu.fp8_tflops else "bf16", "fp8", engine)  # type: ignore[arg-type]
        for gpu in GPUS.values()
        for tp in (1, 2, 4)
    ]
    shapes = [RequestShape(rng.randint(50, 7000), rng.randint(20, 900)) for _ in range(3)]
    slo = Slo(
        ttft_ms=rng.uniform(300, 4000), tpot_ms=rng.uniform(15, 120), e2e_ms=None, percentile=95
    )
    checked = 0
    for dep, row in zip(
        deps, max_qps_under_slo_many(PRESETS[model], deps, shapes, slo), strict=True
    ):
        for shape, cap in zip(shapes, row, strict=True):
            if cap.qps <= 0.0 or cap.limited_by not in LATENCY_LIMITS:
                continue
            m = _metrics(dep, model, shape, cap.concurrency, 0.95)
            assert excess(m, slo) <= 0.0
            s = engine_setup(PRESETS[model], dep)
            b_max = float(batch_caps(s, shape.prompt_tokens, shape.output_tokens).b_max)
            above = min(cap.concurrency / (1.0 - 1.01 * TOLERANCE), b_max)
            assert excess(_metrics(dep, model, shape, above, 0.95), slo) > 0.0, (dep, shape)
            checked += 1
    assert checked >= 10


def test_a_step_stays_inside_the_bracket_and_away_from_its_ends() -> None:
    lo, hi = 10.0, 20.0
    for f_lo, f_hi in ((-1.0, 1.0), (-1e-9, 5.0), (-5.0, 1e-9)):
        b = next_batch(lo, hi, f_lo, f_hi, math.inf)
        assert lo + 0.4 * TOLERANCE * hi <= b <= hi - 0.4 * TOLERANCE * hi
    # regula falsi lands on the crossing of a straight line
    assert next_batch(lo, hi, -1.0, 3.0, math.inf) == pytest.approx(12.5)
    # a bracket that has not halved in the last steps is bisected
    assert next_batch(lo, hi, -1.0, 3.0, 15.0) == pytest.approx(15.0)
