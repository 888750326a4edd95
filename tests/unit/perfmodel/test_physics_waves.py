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
from dataclasses import replace

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import RequestShape, estimate
from service.domain.perfmodel.calibration import (
    PUBLIC_PROFILES,
    Calibration,
    default_calibration,
    serving_structure,
)
from service.domain.perfmodel.coefficients import build_setup
from service.domain.perfmodel.iteration import iteration_time
from service.domain.perfmodel.memory import token_budget
from service.domain.perfmodel.queueing import (
    BENCH_NUM_PROMPTS,
    closed_loop_ttft,
    prompt_waves,
    rotating_ttft,
)
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
def test_first_cycle_ttft_follows_the_number_of_prefill_waves(cal: Calibration, l_in: int) -> None:
    """Once ``N L_in`` exceeds the budget, the first cycle's TTFT is between ``(k + 1) / 2``
    iterations of at least half a budget of prompt tokens and ``(k + 1) / 2`` iterations of a
    whole budget plus every client decoding, for ``k`` counted on the budget or on half of it
    respectively; it roughly doubles when the clients double."""
    prof = PUBLIC_PROFILES["vllm"]
    s = build_setup(M, dep("h100-sxm", engine="vllm"), prof, cal)
    budget = token_budget(s, l_in, 512)
    ctx = float(l_in)
    first = {}
    for n in (16, 32, 64):
        assert n * l_in > budget
        w = prompt_waves(s, n, l_in, 512)
        first[n] = w.ttft
        k_lo = math.ceil(n * l_in / budget)
        k_hi = math.ceil(n * l_in / (budget / 2))
        fast = iteration_time(s, 0.0, budget / 2, ctx, ctx)
        slow = iteration_time(s, float(n), budget, ctx, ctx)
        assert w.k >= k_lo
        assert (k_lo + 1) / 2 * fast <= w.ttft - s.ttft_oh_s <= (k_hi + 1) / 2 * slow
    assert 1.5 < first[64] / first[32] < 2.5


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_benchmark_ttft_averages_the_first_cycle_and_the_rotating_waves(cal: Calibration) -> None:
    """After the first cycle the waves return one after another and each is admitted behind
    the iteration in flight: the steady TTFT is about one wave iteration, far below the first
    cycle's; a run of ``BENCH_NUM_PROMPTS`` requests averages the two by request count."""
    prof = PUBLIC_PROFILES["vllm"]
    d = dep("h100-sxm", engine="vllm")
    s = build_setup(M, d, prof, cal)
    for n in (16, 64):
        sh = RequestShape(2048, 512)
        est = estimate_with(M, d, sh, prof, cal, concurrency=n)
        w = prompt_waves(s, n, 2048, 512)
        steady = rotating_ttft(s, w, n, float(est.concurrency), 2048, 512)
        assert steady < w.ttft / 2
        assert steady <= est.ttft_ms / 1e3 <= w.ttft
        mean = closed_loop_ttft(w, steady, n)
        assert mean == pytest.approx((n * w.ttft + (BENCH_NUM_PROMPTS - n) * steady) / 1000)


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


def test_first_cycle_waves_reach_seconds_for_long_prompts() -> None:
    """32 clients of 8k-token prompts on one H100 need ~32 budget-sized prefill iterations to
    start: the mean client of that first cycle waits seconds, not one prefill."""
    d = dep("h100-sxm", engine="vllm")
    s = build_setup(M, d, PUBLIC_PROFILES["vllm"], default_calibration())
    one = estimate(M, d, RequestShape(8000, 256), concurrency=1)
    w = prompt_waves(s, 32, 8000, 256)
    assert one.ttft_ms < 500.0
    assert w.k >= 32
    assert w.ttft * 1e3 > 10 * one.ttft_ms


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


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("engine", ["sglang", "vllm-v0"])
def test_a_prefill_first_engine_repeats_the_first_cycle(cal: Calibration, engine: str) -> None:
    """An engine that admits every waiting prompt before resuming its decodes (SGLang, vLLM V0)
    starts all ``N`` sequences decoding in the same iteration; with equal lengths they finish
    together and return together, so the waves re-form every cycle: the run's TTFT is the
    first cycle's, and it roughly doubles when the clients double (as dstack's SGLang and vLLM
    V0 closed loops show), where vLLM V1's rotating waves keep it far lower."""
    prof = PUBLIC_PROFILES["sglang"]
    if engine == "vllm-v0":  # vLLM V0's structure with the current vLLM constants
        prof = replace(
            serving_structure("vllm", "0.6"), constants=PUBLIC_PROFILES["vllm"].constants
        )
    assert prof.prefill_first
    d = dep("h100-sxm", engine="vllm" if engine == "vllm-v0" else engine)
    s = build_setup(M, d, prof, cal)
    sh = RequestShape(2048, 512)
    ttft = {}
    for n in (16, 32, 64):
        w = prompt_waves(s, n, 2048, 512)
        assert w.k > 1
        est = estimate_with(M, d, sh, prof, cal, concurrency=n)
        assert est.ttft_ms == pytest.approx(w.ttft * 1e3, rel=1e-9)
        ttft[n] = est.ttft_ms
    assert 1.5 < ttft[64] / ttft[32] < 2.5
    v1 = PUBLIC_PROFILES["vllm"]
    assert not v1.prefill_first
    rotating = estimate_with(M, dep("h100-sxm", engine="vllm"), sh, v1, cal, concurrency=64)
    assert rotating.ttft_ms < ttft[64] / 2


def test_which_engines_put_prompts_before_decodes() -> None:
    """The scheduling policy is each engine's documented default, not a fitted constant."""
    assert PUBLIC_PROFILES["sglang"].prefill_first
    assert serving_structure("vllm", "0.6").prefill_first
    assert not PUBLIC_PROFILES["vllm"].prefill_first
    assert not PUBLIC_PROFILES["trtllm"].prefill_first


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("n", [2, 8, 32, 64])
def test_a_wave_locked_cycle_prefills_then_decodes_every_client(cal: Calibration, n: int) -> None:
    """On a prefill-first engine each cycle is all ``N`` prompts (iterations of prompt tokens
    only, the whole budget each), then ``L_out - 1`` decode steps of all ``N`` together. So
    Little's law holds on the cycle (``lambda E2E = N``), the prompt phase is the budget's
    iterations of ``N L_in`` tokens, and the mean TPOT is the decode step at batch ``N`` plus
    the prefill a prompt finished early waits out, spread over its output."""
    prof = PUBLIC_PROFILES["sglang"]
    assert prof.prefill_first
    d = dep("h100-sxm", engine="sglang")
    s = build_setup(M, d, prof, cal)
    l_in, l_out = 2048, 512
    est = estimate_with(M, d, RequestShape(l_in, l_out), prof, cal, concurrency=n)
    n_dec = l_out - 1
    cycle_s = est.e2e_ms / 1e3
    assert est.requests_per_s * cycle_s == pytest.approx(n, rel=1e-9)
    assert est.e2e_ms == pytest.approx(est.ttft_ms + n_dec * est.tpot_ms, rel=1e-9)
    budget = token_budget(s, l_in, l_out)
    tokens = n * l_in
    full, rest = divmod(tokens, int(budget))
    ctx = float(l_in)
    prefill = full * iteration_time(s, 0.0, budget, ctx, ctx)
    if rest:
        prefill += iteration_time(s, 0.0, float(rest), ctx, ctx)
    step = iteration_time(s, float(n), 0.0, l_in + l_out / 2, float(l_in))
    assert cycle_s == pytest.approx(prefill + n_dec * step + s.ttft_oh_s, rel=1e-3)
    waited = prefill - (est.ttft_ms / 1e3 - s.ttft_oh_s)
    assert est.tpot_ms / 1e3 == pytest.approx(step + waited / n_dec, rel=1e-3)
    if tokens <= budget:  # one wave: every prompt completes as the decodes start
        assert waited == pytest.approx(0.0, abs=1e-9)
    else:
        assert waited > 0.0


def test_a_wave_locked_prefill_pause_fades_with_longer_outputs() -> None:
    """The pause a prompt finished early waits is paid once per request, so its share of
    TPOT falls as ``1 / (L_out - 1)``: with 16 times the output the excess over the decode
    step shrinks about 16-fold (the step itself grows with the longer context)."""
    prof = PUBLIC_PROFILES["sglang"]
    d = dep("h100-sxm", engine="sglang")
    cal = default_calibration()
    s = build_setup(M, d, prof, cal)
    excess = {}
    for l_out in (128, 2048):
        est = estimate_with(M, d, RequestShape(4096, l_out), prof, cal, concurrency=32)
        step = iteration_time(s, 32.0, 0.0, 4096 + l_out / 2, 4096.0)
        excess[l_out] = est.tpot_ms / 1e3 - step
    assert excess[128] > 0
    assert excess[128] / excess[2048] == pytest.approx(2047 / 127, rel=0.05)
