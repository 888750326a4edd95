"""A rate benchmark of a fixed number of requests, played out iteration by iteration.

The numbers a finite run reports follow from when requests arrive and how many the engine
holds, whatever the constants: requests that never meet finish ``(n - 1) / R`` after the
first plus one lone request's time; an engine that holds one sequence serves them one after
another; a saturated run cannot beat the engine's steady capacity and approaches it as the run
grows, the batch filling and draining at its ends.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import cast

import pytest

from bench._finite_run import finite_rate_run
from service.domain.llm import PRESETS
from service.domain.perfmodel import RequestShape
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, Calibration
from service.domain.perfmodel.coefficients import Setup, build_setup
from service.domain.perfmodel.serving import estimate_with
from service.domain.perfmodel.values import Engine
from tests.unit.perfmodel.physics import dep, perturbed

CALS = perturbed()
SHAPES = [(128, 128), (467, 256), (2048, 64)]
CASES = [
    pytest.param((cal, engine, shape), id=f"{i}-{engine}-{shape[0]}x{shape[1]}")
    for i, cal in enumerate(CALS)
    for engine in ("trtllm", "vllm")
    for shape in SHAPES
]


@dataclass(frozen=True)
class Case:
    """An engine's setup for Llama-3.1-8B on an H100 under one calibration, and a shape."""

    cal: Calibration
    engine: str
    shape: tuple[int, int]

    @property
    def setup(self) -> Setup:
        return setup(self.cal, self.engine)


@pytest.fixture(params=CASES)
def case(request: pytest.FixtureRequest) -> Case:
    return Case(*request.param)


def setup(cal: Calibration, engine: str, model: str = "llama-3.1-8b") -> Setup:
    return build_setup(
        PRESETS[model], dep("h100-sxm", engine=engine), PUBLIC_PROFILES[cast(Engine, engine)], cal
    )


def test_requests_that_never_meet_each_take_a_lone_request_time(case: Case) -> None:
    s, shape = case.setup, case.shape
    lone = finite_rate_run(s, 64, *shape, 1, 1.0)
    assert lone.e2e_mean_s == pytest.approx(lone.duration_s)
    rate = 0.5 / lone.duration_s  # the next request arrives after the last has left
    run = finite_rate_run(s, 64, *shape, 20, rate)
    assert run.duration_s == pytest.approx(19 / rate + lone.duration_s, rel=1e-9)
    assert run.ttft_mean_s == pytest.approx(lone.ttft_mean_s, rel=1e-9)
    assert run.e2e_mean_s == pytest.approx(lone.e2e_mean_s, rel=1e-9)
    assert run.tokens_per_s == pytest.approx(20 * shape[1] / run.duration_s)


def test_an_engine_holding_one_sequence_serves_requests_one_after_another(case: Case) -> None:
    s, shape = case.setup, case.shape
    lone = finite_rate_run(s, 1, *shape, 1, 1.0)
    busy = lone.duration_s - s.ttft_oh_s  # engine time of one request
    prefill = lone.ttft_mean_s - s.ttft_oh_s
    rate = 4.0 / busy  # all ten wait behind the first
    run = finite_rate_run(s, 1, *shape, 10, rate)
    assert run.duration_s == pytest.approx(10 * busy + s.ttft_oh_s, rel=1e-9)
    # request i starts at i x busy, was sent at i / rate: mean over i = 0..9 of the difference
    assert run.ttft_mean_s == pytest.approx(
        4.5 * busy + prefill + s.ttft_oh_s - 4.5 / rate, rel=1e-9
    )


def test_a_run_lasts_at_least_the_sending_plus_a_lone_request(case: Case) -> None:
    s, shape = case.setup, case.shape
    lone = finite_rate_run(s, 256, *shape, 1, 1.0)
    for rate in (0.5, 2.0, 8.0, 32.0, 128.0, 1e6):
        run = finite_rate_run(s, 256, *shape, 500, rate)
        assert run.duration_s >= 499 / rate + lone.duration_s * (1 - 1e-9)
        assert run.ttft_mean_s >= lone.ttft_mean_s * (1 - 1e-9)
        assert run.e2e_mean_s >= lone.e2e_mean_s * (1 - 1e-9)


def test_a_saturated_run_approaches_the_steady_capacity_as_it_grows(case: Case) -> None:
    s, shape = case.setup, case.shape
    peak = estimate_with(
        PRESETS["llama-3.1-8b"], dep("h100-sxm", engine=case.engine), RequestShape(*shape),
        PUBLIC_PROFILES[cast(Engine, case.engine)], case.cal,
    )  # fmt: skip
    b_max = peak.max_concurrency
    rate = 1e6  # everything sent at once: the engine is the only limit
    sizes = (b_max // 2, 2 * b_max, 8 * b_max, 32 * b_max)
    tputs = [finite_rate_run(s, b_max, *shape, n, rate).tokens_per_s for n in sizes]
    assert all(t <= peak.output_tokens_per_s * 1.05 for t in tputs), (tputs, peak)
    assert tputs[-1] >= tputs[1] * (1 - 1e-9)
    assert tputs[-1] == pytest.approx(peak.output_tokens_per_s, rel=0.1)


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("engine", ["trtllm", "vllm"])
def test_holding_more_sequences_never_lengthens_a_saturated_run(
    cal: Calibration, engine: str
) -> None:
    s = setup(cal, engine)
    durations = [
        finite_rate_run(s, b, 467, 256, 500, 1e3).duration_s for b in (1, 4, 16, 64, 128, 256)
    ]
    assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(durations))


def test_a_run_needs_requests_a_rate_and_room() -> None:
    s = setup(CALS[0], "vllm")
    for args in ((0, 1.0, 8), (10, 0.0, 8), (10, 1.0, 0)):
        n, rate, b_max = args
        with pytest.raises(ValueError, match="a run needs"):
            finite_rate_run(s, b_max, 128, 128, n, rate)
    assert math.isfinite(finite_rate_run(s, 8, 128, 1, 10, 1.0).duration_s)


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_an_engine_that_does_not_chunk_takes_long_prompts_beside_its_decodes(
    cal: Calibration,
) -> None:
    # prompts four times the token budget, on an engine that prefills them whole (vLLM's V0
    # scheduler without chunked prefill): each later prompt joins the decodes of the earlier
    # ones, one per iteration, instead of waiting for them to finish (the run does not become
    # four lone requests one after another)
    s = replace(setup(cal, "vllm"), chunked=False, max_num_tokens=512)
    l_in, l_out = 2048, 256
    lone = finite_rate_run(s, 4, l_in, l_out, 1, math.inf)
    run = finite_rate_run(s, 4, l_in, l_out, 4, math.inf)
    assert run.duration_s < 2.0 * lone.duration_s
    # the k-th prompt waits for the k-1 before it (each a whole prefill beside the decodes)
    assert run.ttft_mean_s > lone.ttft_mean_s
    assert run.ttft_mean_s < 4.0 * lone.ttft_mean_s
