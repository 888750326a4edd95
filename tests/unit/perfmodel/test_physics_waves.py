"""Closed-loop clients with fixed lengths are admitted in waves of the token budget.

``N`` clients that start together send ``N`` prompts at once; an engine with a per-iteration
budget of ``T`` tokens needs ``k = ceil(N L_in / T)`` prefill iterations to admit them, and the
prompt completed in iteration ``j`` sees its first token after ``j`` of them. So the mean TTFT
is about ``(k + 1) / 2`` wave iterations: it grows with ``N`` once ``N L_in > T``, and at
``N = 1`` it is the batch-1 TTFT.
"""

from __future__ import annotations

import itertools
import math

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import RequestShape, estimate
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, Calibration, default_calibration
from service.domain.perfmodel.coefficients import build_setup
from service.domain.perfmodel.iteration import iteration_time
from service.domain.perfmodel.memory import token_budget
from service.domain.perfmodel.serving import estimate_with
from tests.unit.perfmodel.physics import dep, perturbed

M = PRESETS["llama-3.1-8b"]
CALS = perturbed()
NS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048)


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "sglang"])
@pytest.mark.parametrize("shape", [(128, 256), (2048, 256), (12000, 64)])
def test_one_client_gets_the_batch_one_ttft(engine: str, shape: tuple[int, int]) -> None:
    d = dep("h100-sxm", engine=engine)
    sh = RequestShape(*shape)
    alone = estimate(M, d, sh, concurrency=1)
    lone = estimate(M, d, sh, qps=1e-5)
    assert alone.ttft_ms == pytest.approx(lone.ttft_ms, rel=0.02)


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("shape", [(128, 256), (2048, 256), (8000, 512)])
def test_ttft_grows_with_the_number_of_clients(cal: Calibration, shape: tuple[int, int]) -> None:
    for engine in ("vllm", "trtllm"):
        d = dep("h100-sxm", engine=engine)
        prof = PUBLIC_PROFILES[engine]
        sh = RequestShape(*shape)
        ttfts = [estimate_with(M, d, sh, prof, cal, concurrency=n).ttft_ms for n in NS]
        assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(ttfts)), ttfts


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("l_in", [1024, 2048, 4000])
def test_ttft_follows_the_number_of_prefill_waves(cal: Calibration, l_in: int) -> None:
    """Once ``N L_in`` exceeds the budget, TTFT is between ``(k + 1) / 2`` iterations of at
    least half a budget of prompt tokens and ``(k + 1) / 2`` iterations of a whole budget plus
    every client decoding, for ``k`` counted on the budget or on half of it respectively."""
    prof = PUBLIC_PROFILES["vllm"]
    d = dep("h100-sxm", engine="vllm")
    s = build_setup(M, d, prof, cal)
    sh = RequestShape(l_in, 512)
    budget = token_budget(s, l_in, 512)
    ctx = float(l_in)
    for n in (16, 32, 64):
        assert n * l_in > budget
        est = estimate_with(M, d, sh, prof, cal, concurrency=n)
        assert est.max_concurrency >= n
        handling = s.ttft_oh_s * 1e3
        k_lo = math.ceil(n * l_in / budget)
        k_hi = math.ceil(n * l_in / (budget / 2))
        fast = iteration_time(s, 0.0, budget / 2, ctx, ctx) * 1e3
        slow = iteration_time(s, float(n), budget, ctx, ctx) * 1e3
        assert (k_lo + 1) / 2 * fast <= est.ttft_ms - handling <= (k_hi + 1) / 2 * slow


def test_one_wave_is_one_iteration_of_all_prompts() -> None:
    """While ``N L_in`` fits the budget every prompt is in the first iteration: TTFT is that
    iteration (``N L_in`` prompt tokens, nothing decoding yet) plus request handling."""
    cal = default_calibration()
    prof = PUBLIC_PROFILES["trtllm"]
    d = dep("h200-sxm", engine="trtllm")
    s = build_setup(M, d, prof, cal)
    for n in (1, 2, 8, 32):
        est = estimate_with(M, d, RequestShape(200, 300), prof, cal, concurrency=n)
        first = iteration_time(s, 0.0, n * 200.0, 200.0, 200.0)
        assert est.ttft_ms == pytest.approx((first + s.ttft_oh_s) * 1e3, rel=1e-9)


def test_waves_reach_seconds_for_long_prompts() -> None:
    """128 clients of 8k-token prompts on one H100 need ~128 budget-sized prefill iterations
    per cycle: the mean client waits tens of seconds, not the few hundred ms of one prefill."""
    d = dep("h100-sxm", engine="vllm")
    sh = RequestShape(8000, 256)
    one = estimate(M, d, sh, concurrency=1)
    many = estimate(M, d, sh, concurrency=128)
    assert one.ttft_ms < 500.0
    assert many.ttft_ms > 40 * one.ttft_ms


def test_saturated_loop_obeys_littles_law() -> None:
    """Beyond the batch cap the extra clients wait for admission: requests/s times the cycle
    (TTFT + decode) is the number of clients, and throughput stops growing."""
    d = dep("h100-sxm", engine="vllm")
    sh = RequestShape(2048, 2048)
    cap = estimate(M, d, sh).max_concurrency
    at = estimate(M, d, sh, concurrency=cap)
    over = estimate(M, d, sh, concurrency=3 * cap)
    assert over.output_tokens_per_s == pytest.approx(at.output_tokens_per_s, rel=1e-9)
    cycle_s = (over.ttft_ms + (sh.output_tokens - 1) * over.tpot_ms) / 1e3
    assert over.requests_per_s * cycle_s == pytest.approx(3 * cap, rel=1e-6)
    assert over.ttft_ms > at.ttft_ms
