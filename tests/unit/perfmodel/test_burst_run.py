"""A burst: ``n`` identical requests sent at once (``vllm bench serve`` with no request rate).

A burst is a rate run at an unbounded rate: ``bench._finite_run.finite_rate_run`` plays it out
iteration by iteration, and a burst's measured throughput (output tokens over the time from the
sends to the last completion) is scored against that play-out. ``bench._predict.burst_point``
reads the same run in closed form, which a fit uses between play-outs (the ratio of the two held
fixed, as for rate runs). Once the last request is admitted no prompt is left to prefill, so
the run's last requests decode in decode-only iterations, far shorter than the steady state's
iterations that carry prefill chunks beside the decodes: reading the tail at the steady
iteration time stretched a prefill-heavy burst by the prefill share of its last requests'
decode steps (25-30% longer than its play-out).
"""

from __future__ import annotations

import math
from typing import cast

import pytest

from bench._calibration_data import Row, load_gpus, load_rows
from bench._finite_run import finite_rate_run
from bench._predict import (
    burst_point,
    default_profile_for,
    deployment,
    finite_factors,
    measured_gpu,
    predict_run,
)
from service.domain.llm import PRESETS
from service.domain.perfmodel import RequestShape
from service.domain.perfmodel.calibration import (
    PUBLIC_PROFILES,
    Calibration,
    default_calibration,
)
from service.domain.perfmodel.coefficients import Setup, build_setup
from service.domain.perfmodel.iteration import iteration_time, mean_context
from service.domain.perfmodel.serving import estimate_with
from service.domain.perfmodel.values import Engine, Estimate
from tests.unit.perfmodel.physics import dep, perturbed

CALS = perturbed()
MODEL = "llama-3.1-8b"
# prefill-heavy (prompts 20-40x their outputs: the steady iterations carry prefill chunks, and
# admissions a few prompts per iteration spread the requests over their lifetimes); bursts of
# decode-heavy requests stay in synchronised waves, which only the play-out follows
SHAPES = [(2000, 100), (4000, 200), (8000, 200)]
SLACK = 0.1


def _setup(cal: Calibration, engine: str) -> Setup:
    return build_setup(
        PRESETS[MODEL], dep("h100-sxm", engine=engine), PUBLIC_PROFILES[cast(Engine, engine)], cal
    )


def _peak(cal: Calibration, engine: str, shape: tuple[int, int]) -> Estimate:
    return estimate_with(
        PRESETS[MODEL], dep("h100-sxm", engine=engine), RequestShape(*shape),
        PUBLIC_PROFILES[cast(Engine, engine)], cal,
    )  # fmt: skip


CASES = [
    pytest.param(cal, engine, shape, id=f"{i}-{engine}-{shape[0]}x{shape[1]}")
    for i, cal in enumerate(CALS)
    for engine in ("vllm", "sglang")
    for shape in SHAPES
]


@pytest.mark.parametrize(("cal", "engine", "shape"), CASES)
def test_a_prefill_heavy_burst_lasts_as_long_as_its_play_out(
    cal: Calibration, engine: str, shape: tuple[int, int]
) -> None:
    s, peak = _setup(cal, engine), _peak(cal, engine, shape)
    b_max = peak.max_concurrency
    for n in (max(b_max // 2, 1), 2 * b_max, 5 * b_max):
        closed = burst_point(s, peak, *shape, n)
        played = finite_rate_run(s, b_max, *shape, n, math.inf)
        assert closed.tokens_per_s == pytest.approx(played.tokens_per_s, rel=SLACK), (n, b_max)


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_a_prefill_heavy_burst_ends_in_decode_only_iterations(cal: Calibration) -> None:
    l_in, l_out = 2000, 100
    s, peak = _setup(cal, "vllm"), _peak(cal, "vllm", (l_in, l_out))
    b = peak.max_concurrency
    c = mean_context(l_in, l_out)
    decode_only = iteration_time(s, float(b), 0.0, c, l_in)
    steady = peak.tpot_ms / 1e3
    assert steady > 2.0 * decode_only  # the steady iterations carry prefill chunks
    n = 4 * b
    run = burst_point(s, peak, l_in, l_out, n)
    longer = burst_point(s, peak, l_in, l_out, n + b)
    duration = n * l_out / run.tokens_per_s
    # b more requests add their admission time (b completions at the steady rate), not a
    # longer tail
    added = (n + b) * l_out / longer.tokens_per_s - duration
    assert added == pytest.approx(b / peak.requests_per_s, rel=1e-9)
    # what follows the last admission: its first token, then at most l_out - 1 decode-only
    # iterations of the full batch; never l_out - 1 steady iterations
    played = finite_rate_run(s, b, l_in, l_out, n, math.inf)
    tail = (l_out - 1) * steady
    assert duration < played.duration_s + 0.5 * tail
    assert duration == pytest.approx(played.duration_s, rel=SLACK)


@pytest.fixture(scope="module")
def burst_runs() -> list[Row]:
    gpus = load_gpus()
    rows, _ = load_rows(gpus)
    firsts: dict[tuple[object, ...], Row] = {}
    for r in rows:
        if r.load == "burst" and r.metric == "throughput":
            firsts.setdefault(r.run_key, r)
    return list(firsts.values())


def test_a_burst_row_is_scored_against_its_play_out(burst_runs: list[Row]) -> None:
    gpus = load_gpus()
    cal = default_calibration()
    factors = finite_factors(burst_runs, gpus, cal)
    checked = 0
    for r in burst_runs:
        pred = predict_run(r, gpus, cal)
        if not math.isfinite(pred.tokens_per_s):
            continue
        d = deployment(r, measured_gpu(r, gpus))
        profile = default_profile_for(r, d, cal)
        s = build_setup(r.model, d, profile, cal)
        peak = estimate_with(r.model, d, RequestShape(r.input_len, r.output_len), profile, cal)
        n = int(r.load_n)
        played = finite_rate_run(
            s, max(peak.max_concurrency, 1), r.input_len, r.output_len, n, math.inf
        )
        assert pred.tokens_per_s == pytest.approx(played.tokens_per_s * r.replicas, rel=1e-9)
        # a fit holds the ratio to the closed form fixed: the same prediction
        held = predict_run(r, gpus, cal, finite_factor=factors[r.run_key])
        assert held.tokens_per_s == pytest.approx(pred.tokens_per_s, rel=1e-9)
        closed = burst_point(s, peak, r.input_len, r.output_len, n, r.replicas)
        assert held.ttft_mean_ms == closed.ttft_mean_ms  # latencies stay the closed form's
        checked += 1
    assert checked >= 50
