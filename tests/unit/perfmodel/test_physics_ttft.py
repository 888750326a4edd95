"""TTFT is queueing + prefill + a small fixed request-handling cost (no fitted lump).

A 128-token prompt on a 7B-class model is a few milliseconds of weight streaming (the prefill
is memory-bound at 128 tokens): on an H100 the 16 GB of weights take ~5-7 ms at the achieved
bandwidth, on an H200 ~4-5 ms. With request handling bounded by a few ms, TTFT at batch 1 must
stay well under 15 ms, whatever the fitted overhead constants say.
"""

from __future__ import annotations

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import RequestShape, estimate
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, Calibration
from service.domain.perfmodel.coefficients import REQUEST_HANDLING_MAX_MS, build_setup
from service.domain.perfmodel.iteration import iteration_time
from service.domain.perfmodel.serving import estimate_with
from tests.unit.perfmodel.physics import dep, perturbed

M = PRESETS["llama-3.1-8b"]
SHORT = RequestShape(128, 256)
CALS = perturbed()


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm"])
@pytest.mark.parametrize("engine", ["trtllm", "vllm"])
def test_batch_one_ttft_of_a_short_prompt_is_milliseconds(gpu: str, engine: str) -> None:
    d = dep(gpu, engine=engine)
    alone = estimate(M, d, SHORT, concurrency=1)
    assert alone.fits
    assert alone.ttft_ms < 15.0
    assert estimate(M, d, SHORT, qps=1e-3).ttft_ms < 15.0


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm"])
def test_ttft_bound_holds_under_perturbed_overheads(cal: Calibration, gpu: str) -> None:
    for engine in ("trtllm", "vllm"):
        prof = PUBLIC_PROFILES[engine]
        d = dep(gpu, engine=engine)
        assert estimate_with(M, d, SHORT, prof, cal, concurrency=1).ttft_ms < 15.0
        assert estimate_with(M, d, SHORT, prof, cal, qps=1e-3).ttft_ms < 15.0


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_lone_ttft_is_prefill_plus_request_handling(cal: Calibration) -> None:
    """No queue and no iteration in flight for a lone request: TTFT is its prefill iteration
    plus the request handling, and the handling is bounded whatever the fit says."""
    prof = PUBLIC_PROFILES["trtllm"]
    d = dep("h100-sxm", engine="trtllm")
    s = build_setup(M, d, prof, cal)
    assert 0.0 <= s.ttft_oh_s <= REQUEST_HANDLING_MAX_MS * 1e-3
    prefill = iteration_time(s, 0.0, 128.0, 0.0, 128.0)
    lone = estimate_with(M, d, SHORT, prof, cal, qps=1e-4)
    assert lone.ttft_ms == pytest.approx((prefill + s.ttft_oh_s) * 1e3, rel=1e-3)


def test_ttft_grows_with_queueing_not_with_a_constant() -> None:
    """Load adds waiting (the prompt queue and the iteration in flight) on top of the lone
    prefill; at zero load nothing is added."""
    d = dep("h100-sxm", engine="vllm")
    shape = RequestShape(1000, 250)
    lone = estimate(M, d, shape, qps=1e-4)
    peak = estimate(M, d, shape)
    ttfts = [estimate(M, d, shape, qps=peak.requests_per_s * f).ttft_ms for f in (0.2, 0.5, 0.9)]
    assert lone.ttft_ms < ttfts[0] < ttfts[1] < ttfts[2]
    # 1000-token prefill of an 8B model on an H100: compute-bound, ~25-40 ms
    assert 15.0 < lone.ttft_ms < 60.0
