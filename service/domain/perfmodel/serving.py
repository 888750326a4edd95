"""Public entry points :func:`estimate` and :func:`smallest_fitting_tp` (the capacity search
:func:`~service.domain.perfmodel.capacity.max_qps_under_slo` lives in ``capacity``).

Serving under load (continuous batching, one replica):

* Steady state with ``B`` sequences decoding: prompts of the requests that replace finished ones
  arrive at ``B / (L_out - 1)`` per iteration. Iterations that carry prompt tokens take
  ``tau1``, pure decode iterations ``tau0``; the mix (``iteration.iteration_mix``) is fluid when
  at least one prompt chunk lands per iteration and lumpy otherwise (a share ``f`` of iterations
  carries one chunk). The mean time per output token is ``tau = (1 - f) tau0 + f tau1``, and
  Little's law on the decode phase gives the arrival rate that keeps ``B`` decoding,
  ``lambda(B) = B / ((L_out - 1) tau(B))`` (``B = lambda (L_out - 1) TPOT``, solved as a fixed
  point by parametrising on ``B``). Prefill interference is therefore
  ``TPOT = tau0 / (1 - rho_p)`` with ``rho_p = lambda delta``, ``delta`` the GPU time one
  prompt adds. Given a ``qps`` we solve ``lambda(B) = qps`` (a bracketed root; ``lambda`` grows
  with ``B``); a ``qps`` above ``lambda(B_max)`` is overload. A KV pool of fewer than two
  sequences keeps most of the next prompt out of the running decode (``queueing``: TPOT
  ``tau_dec``, below ``tau``; ``lambda`` unchanged).
* TTFT, TPOT and E2E means and percentiles at a steady state: see ``queueing``.
* No ``concurrency`` and no ``qps``: the peak-throughput point, ``B`` at the memory or engine cap
  (``lambda -> infinity`` limit of vendor throughput tables). TTFT there is *unqueued* (first-token
  service + iteration residual + overhead): at the saturation rate the prompt queue grows
  without bound, so use ``qps`` for latency under load.
* ``concurrency=C``: a closed loop of ``C`` clients with identical lengths each sending its
  next request when the last finishes, started together (``vllm bench serve
  --max-concurrency C``). The first cycle's prompts arrive together and are admitted in waves
  of the engine's token budget (``queueing.prompt_waves``); the clients stay grouped in those
  waves, which then rotate (``queueing.rotating_ttft``); TTFT is the mean over a benchmark
  run of both (``queueing.closed_loop_ttft``) and grows with ``C``. The ``B`` sequences
  decoding at a time follow from Little's law on the loop, ``C = B + lambda(B) TTFT``; TPOT
  and ``lambda`` are those of the steady state at ``B``. On a prefill-first engine (SGLang,
  vLLM V0) every cycle repeats the first instead: all ``C`` prompts, then all ``C`` decoding
  together, so TTFT, TPOT (with the later waves' prefill in it) and ``lambda = C / E2E``
  come from that cycle (``queueing.locked_cycle``). Above the batch cap the excess
  clients wait for admission and TTFT follows from Little's law on the whole loop
  (continuous at the cap).

* ``bottleneck``: at saturation the limit that caps the running batch (``kv_capacity``,
  ``batch_limit`` for the engine's ``max_num_seqs``/``max_batch_size``/``max_running_requests``,
  ``token_budget``); below it the resource with the largest share of an iteration. The
  engine's limits are its defaults on the card (``engine_limits``).

One-token outputs are modelled as two-token requests (one decode step; slightly conservative).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from service.domain.catalog import GpuSpec
from service.domain.errors import InvalidInput
from service.domain.llm import ModelArch
from service.domain.perfmodel.calibration import (
    Calibration,
    EngineProfile,
    accuracy_note,
    default_calibration,
    hybrid_accuracy_note,
    resolve_profile,
)
from service.domain.perfmodel.coefficients import Setup, build_setup
from service.domain.perfmodel.correction import with_correction
from service.domain.perfmodel.engine_limits import card_profile
from service.domain.perfmodel.hardware import accuracy_family
from service.domain.perfmodel.iteration import iteration_parts, mean_context, prefill_per_iteration
from service.domain.perfmodel.memory import (
    activation_bytes,
    beside_decode_share,
    kv_pool_bytes,
    memory_batch_cap,
    sequence_kv_bytes,
    token_budget_cap,
    tokens_per_sequence,
    usable_bytes,
)
from service.domain.perfmodel.queueing import (
    OperatingPoint,
    closed_loop_ttft,
    effective_output,
    latency_percentiles,
    locked_cycle,
    operating_point,
    prompt_waves,
    rotating_ttft,
    solve_increasing,
)
from service.domain.perfmodel.values import (
    PRECISIONS,
    Bottleneck,
    Deployment,
    Engine,
    Estimate,
    KvPrecision,
    LatencyPercentiles,
    MemoryBreakdown,
    Precision,
    RequestShape,
)

__all__ = [
    "BatchCaps",
    "batch_caps",
    "check_request",
    "estimate",
    "estimate_with",
    "fit_reason",
    "smallest_fitting_tp",
]

INF = math.inf


def check_request(shape: RequestShape, dep: Deployment) -> None:
    """Reject impossible shapes and deployment fields with the field named (``InvalidInput``)."""
    if shape.prompt_tokens < 1:
        raise InvalidInput(
            f"prompt_tokens must be >= 1, got {shape.prompt_tokens}", field="prompt_tokens"
        )
    if shape.output_tokens < 1:
        raise InvalidInput(
            f"output_tokens must be >= 1, got {shape.output_tokens}", field="output_tokens"
        )
    if dep.tensor_parallel < 1:
        raise InvalidInput(
            f"tensor_parallel must be >= 1, got {dep.tensor_parallel}", field="tensor_parallel"
        )
    if dep.precision not in PRECISIONS:
        raise InvalidInput(f"unknown precision {dep.precision!r}", field="precision")
    if dep.kv_precision not in ("bf16", "fp16", "fp8"):
        raise InvalidInput(f"unknown kv_precision {dep.kv_precision!r}", field="kv_precision")
    resolve_profile(dep.engine, dep.engine_version)  # InvalidInput naming engine/engine_version


def _check_load(concurrency: int | None, qps: float | None) -> None:
    """Reject a load given twice or impossible (``InvalidInput`` naming the field)."""
    if concurrency is not None and qps is not None:
        raise InvalidInput("give concurrency or qps, not both", field="qps")
    if concurrency is not None and concurrency < 1:
        raise InvalidInput(f"concurrency must be >= 1, got {concurrency}", field="concurrency")
    if qps is not None and not (qps > 0.0 and math.isfinite(qps)):
        raise InvalidInput(f"qps must be a positive number, got {qps}", field="qps")


@dataclass(frozen=True, slots=True)
class BatchCaps:
    """Running-batch cap (sequences), the KV-memory cap alone, and which limit binds."""

    b_max: int
    b_mem: int
    limited_by: str


def batch_caps(s: Setup, l_in: int, l_out: int) -> BatchCaps:
    """Running-batch cap for a shape: min(KV memory, engine ``max_batch``, token budget)."""
    b_mem = memory_batch_cap(s, l_in, effective_output(l_out))
    budget = token_budget_cap(s, l_in, effective_output(l_out))
    b = min(b_mem, s.max_batch)
    limited = "kv_capacity" if b_mem <= s.max_batch else "engine_batch_cap"
    if budget < b:
        b = max(1, int(budget))
        limited = "token_budget"
    return BatchCaps(max(b, 0), b_mem, limited)


def _memory(s: Setup, t: int, l_in: int, l_out: int) -> MemoryBreakdown:
    """Per-card memory breakdown (GB = 10^9 bytes) for a shape's token budget."""
    kv = max(kv_pool_bytes(s, l_in, l_out), 0.0)
    act = activation_bytes(s, l_in, l_out)
    other = max(s.capacity_b - s.weights_b - kv - act, 0.0)
    return MemoryBreakdown(
        weights_gb=s.weights_b / 1e9,
        kv_cache_gb=kv / 1e9,
        activations_gb=act / 1e9,
        reserve_gb=other / 1e9,
        capacity_gb=s.capacity_b / 1e9,
        tensor_parallel=t,
    )


def _not_fit(
    gpu: GpuSpec, t: int, reason: str, mem: MemoryBreakdown, notes: tuple[str, ...]
) -> Estimate:
    """An ``Estimate`` for a deployment that cannot run, with the numeric ``reason``."""
    return Estimate(
        fits=False,
        reason=reason,
        gpu=gpu.id,
        tensor_parallel=t,
        max_concurrency=0,
        concurrency=0,
        ttft_ms=0.0,
        tpot_ms=0.0,
        e2e_ms=0.0,
        output_tokens_per_s=0.0,
        requests_per_s=0.0,
        bottleneck="kv_capacity",
        memory=mem,
        latency=None,
        assumptions=notes,
    )


def fit_reason(s: Setup, dep: Deployment, model: ModelArch, shape: RequestShape) -> str:
    """Empty when one request of ``shape`` runs; otherwise why not, with numbers."""
    if s.reject:
        return s.reject
    total = shape.prompt_tokens + shape.output_tokens
    if total > model.max_context:
        return (
            f"request of {total} tokens exceeds {model.id}'s context window of "
            f"{model.max_context} tokens"
        )
    t = dep.tensor_parallel
    l_in, l_out = shape.prompt_tokens, effective_output(shape.output_tokens)
    usable = usable_bytes(s, l_in, l_out)
    if s.weights_b > usable:
        return (
            f"weights need {s.weights_replica_b / 1e9:.1f} GB per replica "
            f"({s.weights_b / 1e9:.1f} GB per card); {t} x {dep.gpu.memory_gb:g} GB "
            f"card{'s' if t > 1 else ''} leave{'' if t > 1 else 's'} "
            f"{max(usable, 0.0) / 1e9:.1f} GB usable per card after activations and "
            "runtime reserve"
        )
    if memory_batch_cap(s, l_in, l_out) < 1:
        pool = max(kv_pool_bytes(s, l_in, l_out), 0.0)
        need = tokens_per_sequence(s, shape.prompt_tokens, effective_output(shape.output_tokens))
        need_b = sequence_kv_bytes(s, need)
        return (
            f"after {s.weights_b / 1e9:.1f} GB of weights per card the KV cache gets "
            f"{pool / 1e9:.1f} GB per card; one request of {need:.0f} tokens needs "
            f"{need_b / 1e9:.2f} GB per card"
        )
    return ""


_CAP_LABELS: dict[str, Bottleneck] = {
    "kv_capacity": "kv_capacity",
    "engine_batch_cap": "batch_limit",
    "token_budget": "token_budget",
}


def _bottleneck(
    s: Setup, op: OperatingPoint, caps: BatchCaps, l_in: int, l_out: int, saturated: bool
) -> Bottleneck:
    """The binding limit or resource at an operating point.

    At saturation (the running batch at its cap: the peak point, or more clients or load than
    the cap admits) the limit that caps the batch (``kv_capacity``, ``batch_limit``,
    ``token_budget``): throughput grows no further without raising it or adding replicas.
    Below saturation the resource with the largest share of an iteration
    (``iteration.iteration_parts``): ``interconnect``, ``memory_bandwidth`` or ``compute``.
    """
    if saturated:
        return _CAP_LABELS.get(caps.limited_by, "kv_capacity")
    parts = iteration_parts(
        s,
        op.b,
        prefill_per_iteration(op.b, l_in, effective_output(l_out)),
        mean_context(l_in, l_out),
        l_in,
    )
    if parts.comm_s >= max(parts.memory_s, parts.compute_s):
        return "interconnect"
    if parts.memory_s >= parts.compute_s:
        return "memory_bandwidth"
    return "compute"


@dataclass(frozen=True, slots=True)
class _Point:
    """Where an estimate lands: the steady state and its mean latencies (seconds), the
    percentiles (Poisson load only) and why the load could not be met (overload)."""

    op: OperatingPoint
    ttft: float
    tpot: float
    e2e: float
    latency: LatencyPercentiles | None = None
    reason: str | None = None
    saturated: bool = False


def _at_qps(s: Setup, caps: BatchCaps, l_in: int, l_out: int, qps: float) -> _Point:
    """Poisson arrivals at ``qps``: solve ``lambda(B) = qps``; above the cap, overload."""
    n_dec = effective_output(l_out) - 1
    b_max = caps.b_max
    top = operating_point(s, float(b_max), l_in, l_out)
    if qps > top.lam * (1.0 + 1e-9):
        reason = (
            f"qps {qps:g} exceeds this replica's capacity of {top.lam:.3g} requests/s "
            f"for {l_in}/{l_out} tokens (running batch capped at {b_max} by {caps.limited_by})"
        )
        return _Point(top, INF, INF, INF, LatencyPercentiles(*([INF] * 12)), reason, True)
    share = beside_decode_share(s, l_in, n_dec + 1)
    b = solve_increasing(
        lambda x: operating_point(s, x, l_in, l_out, share).lam, qps, 1e-6, float(b_max)
    )
    op = operating_point(s, b, l_in, l_out, share)
    ttft, tpot = op.ttft, op.tau_dec
    full = op.b >= b_max * (1.0 - 1e-6)
    return _Point(op, ttft, tpot, ttft + n_dec * tpot, latency_percentiles(s, op), saturated=full)


def _closed_loop(s: Setup, caps: BatchCaps, l_in: int, l_out: int, concurrency: int) -> _Point:
    """``concurrency`` clients started together: the first cycle admitted in waves, later
    cycles with the waves rotating (``queueing.closed_loop_ttft``), or on a prefill-first
    engine every cycle wave-locked (``queueing.locked_cycle``); the decoding batch from
    ``C = B + lambda(B) TTFT(B)``; above the cap Little's law on the whole loop."""
    n_dec = effective_output(l_out) - 1
    admitted = min(concurrency, max(caps.b_max, 1))
    waves = prompt_waves(s, admitted, l_in, l_out)
    share = beside_decode_share(s, l_in, n_dec + 1)
    if s.prefill_first and 1 < concurrency <= admitted:
        cyc = locked_cycle(s, waves, admitted, l_in, l_out)
        op = replace(
            operating_point(s, cyc.decoding, l_in, l_out, share), lam=cyc.lam, tau_dec=cyc.tpot
        )
        return _Point(op, cyc.ttft, cyc.tpot, cyc.e2e, saturated=concurrency >= caps.b_max)

    def ttft_at(b: float) -> float:
        return closed_loop_ttft(waves, rotating_ttft(s, waves, admitted, b, l_in, l_out), admitted)

    b = solve_increasing(
        lambda x: x + operating_point(s, x, l_in, l_out, share).lam * ttft_at(x),
        float(admitted),
        1e-6,
        float(admitted),
    )
    op = operating_point(s, b, l_in, l_out, share)
    ttft = ttft_at(b)
    saturated = concurrency >= caps.b_max
    if concurrency > admitted:
        ttft = concurrency / op.lam - n_dec * op.tau_dec
    return _Point(op, ttft, op.tau_dec, ttft + n_dec * op.tau_dec, saturated=saturated)


def _peak(s: Setup, caps: BatchCaps, l_in: int, l_out: int) -> _Point:
    """The peak-throughput point at the batch cap, with unqueued TTFT (at the saturation rate
    the prompt queue has no finite mean worth reporting)."""
    n_dec = effective_output(l_out) - 1
    op = operating_point(s, float(caps.b_max), l_in, l_out)
    ttft, tpot = op.s1 + op.busy * op.residual + s.ttft_oh_s, op.tau_dec
    return _Point(op, ttft, tpot, ttft + n_dec * tpot, saturated=True)


def estimate_with(
    model: ModelArch,
    dep: Deployment,
    shape: RequestShape,
    profile: EngineProfile,
    cal: Calibration,
    *,
    concurrency: int | None = None,
    qps: float | None = None,
) -> Estimate:
    """:func:`estimate` with an explicit engine profile and calibration (used by bench/)."""
    check_request(shape, dep)
    _check_load(concurrency, qps)
    s = build_setup(model, dep, profile, cal)
    t = dep.tensor_parallel
    mem = _memory(s, t, shape.prompt_tokens, effective_output(shape.output_tokens))
    notes = s.notes
    reason = fit_reason(s, dep, model, shape)
    if reason:
        return _not_fit(dep.gpu, t, reason, mem, notes)
    l_in, l_out = shape.prompt_tokens, shape.output_tokens
    caps = batch_caps(s, l_in, l_out)
    extra: tuple[str, ...] = ()
    if l_out == 1:
        extra = ("one-token outputs modelled as two-token requests",)
    if qps is not None:
        pt = _at_qps(s, caps, l_in, l_out, qps)
    elif concurrency is not None:
        pt = _closed_loop(s, caps, l_in, l_out, concurrency)
    else:
        pt = _peak(s, caps, l_in, l_out)
    op = pt.op
    return Estimate(
        fits=True,
        reason=pt.reason,
        gpu=dep.gpu.id,
        tensor_parallel=t,
        max_concurrency=caps.b_max,
        concurrency=max(1, round(op.b)),
        ttft_ms=pt.ttft * 1e3,
        tpot_ms=pt.tpot * 1e3,
        e2e_ms=pt.e2e * 1e3,
        output_tokens_per_s=op.lam * l_out,
        requests_per_s=op.lam,
        bottleneck=_bottleneck(s, op, caps, l_in, l_out, pt.saturated),
        memory=mem,
        latency=pt.latency,
        assumptions=notes + extra,
    )


def estimate_fresh(
    model: ModelArch,
    dep: Deployment,
    shape: RequestShape,
    concurrency: int | None = None,
    qps: float | None = None,
) -> Estimate:
    """:func:`estimate` without the memo (a calibration fit evaluates many corrections once
    each): the engine's defaults on this card (``engine_limits.card_profile``), the committed
    constants, and ``dep.correction`` applied to them when given."""
    check_request(shape, dep)
    cal = default_calibration()
    build = resolve_profile(dep.engine, dep.engine_version)
    cal = with_correction(cal, dep, build.profile.constants)
    profile = card_profile(model, dep, build.profile, cal)
    result = estimate_with(model, dep, shape, profile, cal, concurrency=concurrency, qps=qps)
    notes: tuple[str, ...] = (accuracy_note(build, accuracy_family(dep.gpu)),)
    if model.ssm_layers:
        notes += (hybrid_accuracy_note(dep.engine),)
    return replace(result, assumptions=(*result.assumptions, *notes))


_estimate_cached = lru_cache(maxsize=4096)(estimate_fresh)


def estimate(
    model: ModelArch,
    dep: Deployment,
    shape: RequestShape,
    *,
    concurrency: int | None = None,
    qps: float | None = None,
) -> Estimate:
    """Memory fit, latency and throughput of one replica (see module docstring for the model).

    ``concurrency``: closed-loop clients; ``qps``: Poisson arrival rate (requests/s), which also
    fills ``latency`` percentiles; neither: the peak-throughput point. Raises
    :class:`InvalidInput` for impossible inputs; a deployment that cannot run is an answer
    (``fits=False`` with a numeric ``reason``), not an error. Memoised (inputs are frozen).
    """
    check_request(shape, dep)
    return _estimate_cached(model, dep, shape, concurrency, qps)


def _tp_candidates(gpu: GpuSpec) -> tuple[int, ...]:
    """Power-of-two TP degrees up to 8 or the card's NVLink domain, whichever is larger."""
    limit = max(8, gpu.nvlink_domain)
    out = []
    t = 1
    while t <= limit:
        out.append(t)
        t *= 2
    return tuple(out)


def resolved_engine_version(engine: Engine, version: str | None) -> str:
    """The registered build of ``engine`` a request for ``version`` (``None``: the newest
    calibrated one) runs on, as its ``"major.minor"`` (``""`` for an unversioned entry).
    Raises ``InvalidInput`` naming ``engine_version`` for a version with no build."""
    return resolve_profile(engine, version).version


def smallest_fitting_tp(
    model: ModelArch,
    gpu: GpuSpec,
    precision: Precision,
    kv_precision: KvPrecision,
    engine: Engine,
    shape: RequestShape,
    allow_pcie_tensor_parallel: bool = False,
    engine_version: str | None = None,
) -> int | None:
    """Smallest power-of-two tensor-parallel degree whose replica fits one request of ``shape``
    (weights plus that request's KV), or ``None`` when no degree up to the card's limit does."""
    for t in _tp_candidates(gpu):
        dep = Deployment(
            gpu, t, precision, kv_precision, engine, allow_pcie_tensor_parallel, engine_version
        )
        est = estimate(model, dep, shape)
        if est.fits:
            return t
    return None
