"""Monotonic laws of the performance model (Hypothesis, seeded and bounded)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from service.domain.llm import PRESETS
from service.domain.perfmodel import Deployment, RequestShape, Slo, estimate, max_qps_under_slo
from tests.unit.perfmodel.gpu_fixtures import GPUS

CASES = [
    ("llama-3.1-8b", "h100-sxm", 1, "fp8", "fp8"),
    ("llama-3.1-8b", "l40s", 1, "fp8", "fp8"),
    ("llama-3.1-70b", "h200-sxm", 2, "fp8", "fp8"),
    ("llama-3.1-70b", "a100-sxm-80gb", 4, "bf16", "bf16"),
    ("mixtral-8x7b", "h100-sxm", 2, "fp8", "fp8"),
    ("qwen2.5-7b", "l4", 1, "int4", "fp8"),
    ("deepseek-v3", "b200", 8, "fp4", "fp8"),
    ("nemotron-3-nano-30b-a3b", "b200", 2, "fp8", "fp8"),  # hybrid: Mamba-2 state per sequence
]
ENGINES = ("vllm", "trtllm", "sglang", "tgi")
FAST = settings(max_examples=40, derandomize=True, deadline=None)

case = st.sampled_from(CASES)
engine = st.sampled_from(ENGINES)
shape = st.builds(
    RequestShape,
    prompt_tokens=st.integers(min_value=1, max_value=8000),
    output_tokens=st.integers(min_value=2, max_value=2000),
)


def make(c: tuple[str, str, int, str, str], eng: str, **gpu_changes: float) -> Deployment:
    _, gpu, tp, prec, kv = c
    g = replace(GPUS[gpu], **gpu_changes) if gpu_changes else GPUS[gpu]  # type: ignore[arg-type]
    return Deployment(g, tp, prec, kv, eng)  # type: ignore[arg-type]


@FAST
@given(case, engine, shape, st.floats(min_value=1.0, max_value=4.0), st.floats(0.05, 0.9))
def test_more_bandwidth_is_never_slower(c, eng, sh, factor, load) -> None:  # type: ignore[no-untyped-def]
    m = PRESETS[c[0]]
    slow, fast = (
        make(c, eng),
        make(c, eng, memory_bandwidth_gbps=GPUS[c[1]].memory_bandwidth_gbps * factor),
    )
    a, b = estimate(m, slow, sh), estimate(m, fast, sh)
    if not a.fits:
        return
    assert b.fits
    assert b.tpot_ms <= a.tpot_ms * (1 + 1e-9)
    assert b.output_tokens_per_s >= a.output_tokens_per_s * (1 - 1e-9)
    qps = a.requests_per_s * load
    qa, qb = estimate(m, slow, sh, qps=qps), estimate(m, fast, sh, qps=qps)
    assert qb.tpot_ms <= qa.tpot_ms * (1 + 1e-6)
    assert qb.ttft_ms <= qa.ttft_ms * (1 + 1e-6)


@FAST
@given(case, engine, shape, st.floats(min_value=1.0, max_value=3.0))
def test_more_memory_never_lowers_max_concurrency(c, eng, sh, factor) -> None:  # type: ignore[no-untyped-def]
    m = PRESETS[c[0]]
    small, big = make(c, eng), make(c, eng, memory_gb=GPUS[c[1]].memory_gb * factor)
    a, b = estimate(m, small, sh), estimate(m, big, sh)
    assert b.max_concurrency >= a.max_concurrency
    assert b.fits or not a.fits


@FAST
@given(case, engine, st.integers(1, 6000), st.integers(1, 4000), st.integers(2, 500))
def test_longer_prompts_never_have_faster_ttft(c, eng, l_in, extra, l_out) -> None:  # type: ignore[no-untyped-def]
    m = PRESETS[c[0]]
    d = make(c, eng)
    short = estimate(m, d, RequestShape(l_in, l_out), qps=1e-3)
    long = estimate(m, d, RequestShape(l_in + extra, l_out), qps=1e-3)
    if not long.fits or long.reason:
        return
    assert long.ttft_ms >= short.ttft_ms * (1 - 1e-9)


@FAST
@given(case, engine, shape, st.floats(0.02, 0.95), st.floats(1.05, 3.0))
def test_higher_qps_never_lowers_latency_percentiles(c, eng, sh, frac, mult) -> None:  # type: ignore[no-untyped-def]
    m = PRESETS[c[0]]
    d = make(c, eng)
    peak = estimate(m, d, sh)
    if not peak.fits:
        return
    q1 = peak.requests_per_s * frac
    q2 = min(q1 * mult, peak.requests_per_s * 0.999)
    if q2 <= q1:
        return
    a, b = estimate(m, d, sh, qps=q1).latency, estimate(m, d, sh, qps=q2).latency
    assert a is not None and b is not None
    for name in a.__slots__:
        assert getattr(b, name) >= getattr(a, name) * (1 - 1e-6), name


slo_part = st.one_of(st.none(), st.floats(min_value=5.0, max_value=20000.0))


@FAST
@given(
    case,
    engine,
    shape,
    slo_part,
    slo_part,
    slo_part,
    st.sampled_from([50.0, 90.0, 95.0, 99.0]),
    st.floats(1.0, 4.0),
)
def test_looser_slo_never_lowers_capacity(c, eng, sh, ttft, tpot, e2e, pct, loosen) -> None:  # type: ignore[no-untyped-def]
    m = PRESETS[c[0]]
    d = make(c, eng)
    tight = Slo(ttft, tpot, e2e, pct)
    loose = Slo(
        None if ttft is None else ttft * loosen,
        None if tpot is None else tpot * loosen,
        None if e2e is None else e2e * loosen,
        max(50.0, pct - 10.0),
    )
    a, b = max_qps_under_slo(m, d, sh, tight), max_qps_under_slo(m, d, sh, loose)
    assert b.qps >= a.qps * (1 - 2e-3)
