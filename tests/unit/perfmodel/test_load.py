"""Latency under load: Little's law, queueing percentiles, closed loops, capacity under an SLO."""

from __future__ import annotations

import math

import pytest

from service.domain.errors import InvalidInput
from service.domain.llm import PRESETS
from service.domain.perfmodel import Deployment, RequestShape, Slo, estimate, max_qps_under_slo
from tests.unit.perfmodel.gpu_fixtures import GPUS

M = PRESETS["llama-3.1-8b"]
D = Deployment(GPUS["h100-sxm"], 1, "fp8", "fp8", "vllm")
SHAPE = RequestShape(1000, 250)


def test_littles_law_holds_for_the_running_batch() -> None:
    for qps in (0.5, 2.0, 8.0, 20.0):
        est = estimate(M, D, SHAPE, qps=qps)
        assert est.reason is None
        b = qps * (SHAPE.output_tokens - 1) * est.tpot_ms / 1e3
        assert est.concurrency == max(1, round(b))
        assert est.requests_per_s == pytest.approx(qps, rel=1e-4)
        assert est.output_tokens_per_s == pytest.approx(qps * SHAPE.output_tokens, rel=1e-4)


def test_percentiles_are_ordered_and_means_sit_between() -> None:
    est = estimate(M, D, SHAPE, qps=15.0)
    lat = est.latency
    assert lat is not None
    assert lat.ttft_p50_ms <= lat.ttft_p90_ms <= lat.ttft_p95_ms <= lat.ttft_p99_ms
    assert lat.tpot_p50_ms <= lat.tpot_p90_ms <= lat.tpot_p95_ms <= lat.tpot_p99_ms
    assert lat.e2e_p50_ms <= lat.e2e_p90_ms <= lat.e2e_p95_ms <= lat.e2e_p99_ms
    assert lat.ttft_p99_ms >= est.ttft_ms
    assert lat.e2e_p99_ms >= est.e2e_ms


def test_overload_is_reported_with_infinite_latency() -> None:
    peak = estimate(M, D, SHAPE)
    est = estimate(M, D, SHAPE, qps=peak.requests_per_s * 1.5)
    assert est.fits
    assert est.reason is not None and "exceeds this replica's capacity" in est.reason
    assert math.isinf(est.ttft_ms)
    assert est.latency is not None and math.isinf(est.latency.tpot_p99_ms)


def test_peak_is_the_most_throughput() -> None:
    peak = estimate(M, D, SHAPE)
    for qps in (1.0, 10.0, peak.requests_per_s * 0.99):
        assert estimate(M, D, SHAPE, qps=qps).output_tokens_per_s <= peak.output_tokens_per_s


def test_closed_loop_concurrency() -> None:
    one = estimate(M, D, SHAPE, concurrency=1)
    assert one.concurrency == 1
    lone = estimate(M, D, SHAPE, qps=1e-3)
    assert one.ttft_ms == pytest.approx(lone.ttft_ms, rel=0.2)
    many = estimate(M, D, SHAPE, concurrency=4 * one.max_concurrency)
    more = estimate(M, D, SHAPE, concurrency=8 * one.max_concurrency)
    # saturated: the batch cap admits no more, throughput stops growing
    assert more.output_tokens_per_s == pytest.approx(many.output_tokens_per_s, rel=1e-9)
    assert many.concurrency <= many.max_concurrency
    # the clients beyond the engine's cap wait for admission: Little's law on the whole loop
    cycle_s = (many.ttft_ms + (SHAPE.output_tokens - 1) * many.tpot_ms) / 1e3
    assert many.requests_per_s * cycle_s == pytest.approx(4 * one.max_concurrency, rel=0.01)


def test_invalid_load_arguments() -> None:
    with pytest.raises(InvalidInput):
        estimate(M, D, SHAPE, qps=1.0, concurrency=4)
    with pytest.raises(InvalidInput) as err:
        estimate(M, D, SHAPE, qps=-1.0)
    assert err.value.field == "qps"
    with pytest.raises(InvalidInput) as err:
        estimate(M, D, RequestShape(0, 10))
    assert err.value.field == "prompt_tokens"


def test_capacity_respects_the_slo() -> None:
    slo = Slo(ttft_ms=1000.0, tpot_ms=40.0, e2e_ms=None, percentile=95.0)
    cap = max_qps_under_slo(M, D, SHAPE, slo)
    assert cap.qps > 0 and cap.reason is None
    assert cap.tpot_ms <= 40.0 + 1e-6 and cap.ttft_ms <= 1000.0 + 1e-6
    assert cap.limited_by in (
        "ttft",
        "tpot",
        "e2e",
        "kv_capacity",
        "engine_batch_cap",
        "token_budget",
    )
    est = estimate(M, D, SHAPE, qps=cap.qps)
    assert est.latency is not None
    assert est.latency.tpot_p95_ms <= 40.0 * 1.001
    assert est.latency.ttft_p95_ms <= 1000.0 * 1.001


def test_capacity_zero_with_reasons() -> None:
    tight = max_qps_under_slo(M, D, SHAPE, Slo(None, 1.0, None, 99.0))
    assert tight.qps == 0.0 and tight.limited_by == "tpot"
    assert tight.reason is not None and tight.reason.startswith("TPOT at batch 1 is")
    assert "> SLO 1 ms" in tight.reason
    ttft = max_qps_under_slo(M, D, RequestShape(30000, 10), Slo(5.0, None, None, 50.0))
    assert ttft.qps == 0.0 and ttft.reason is not None and "TTFT at zero load" in ttft.reason
    big = PRESETS["llama-2-70b"]
    nofit = max_qps_under_slo(
        big, Deployment(GPUS["l4"], 1, "bf16", "bf16", "vllm"), SHAPE, Slo(None, None, None, 90)
    )
    assert nofit.qps == 0.0 and nofit.limited_by == "does_not_fit"
    assert nofit.reason is not None and nofit.reason.startswith("does not fit")


def test_loose_slo_reaches_the_cap() -> None:
    cap = max_qps_under_slo(M, D, SHAPE, Slo(None, None, None, 99.0))
    peak = estimate(M, D, SHAPE)
    assert cap.qps == pytest.approx(peak.requests_per_s, rel=1e-6)
    assert cap.limited_by in ("kv_capacity", "engine_batch_cap", "token_budget")


def test_slo_percentile_is_validated() -> None:
    with pytest.raises(InvalidInput) as err:
        max_qps_under_slo(M, D, SHAPE, Slo(100.0, None, None, 100.0))
    assert err.value.field == "slo.percentile"
