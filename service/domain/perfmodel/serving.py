"""Public entry points: :func:`estimate`, :func:`smallest_fitting_tp`, :func:`max_qps_under_slo`.

Serving under load (continuous batching, one replica):

* Steady state with ``B`` sequences decoding: prompts of the requests that replace finished ones
  arrive at ``B / (L_out - 1)`` per iteration. Iterations that carry prompt tokens take
  ``tau1``, pure decode iterations ``tau0``; the mix (``core.iteration_mix``) is fluid when at
  least one prompt chunk lands per iteration and lumpy otherwise (a share ``f`` of iterations
  carries one chunk). The mean time per output token is ``tau = (1 - f) tau0 + f tau1``, and
  Little's law on the decode phase gives the arrival rate that keeps ``B`` decoding,
  ``lambda(B) = B / ((L_out - 1) tau(B))`` (``B = lambda (L_out - 1) TPOT``, solved as a fixed
  point by parametrising on ``B``). Prefill interference is therefore
  ``TPOT = tau0 / (1 - rho_p)`` with ``rho_p = lambda delta``, ``delta`` the GPU time one
  prompt adds. Given a ``qps`` we solve ``lambda(B) = qps`` (a bracketed root; ``lambda`` grows
  with ``B``); a ``qps`` above ``lambda(B_max)`` is overload.
* TTFT = first-token service ``s1`` (the iteration(s) carrying the request's prompt) + queueing
  + the engine's request overhead. Prompts queue for the token budget: a prompt-carrying
  iteration takes ``tau1`` and admits ``room = budget - B`` prompt tokens, so the prompt queue is
  an M/D/1 queue with deterministic service ``S = tau1 L_in / room`` at utilisation
  ``rho = lambda S`` (in the fluid regime ``rho`` is the budget's utilisation). Its wait adds to
  the residual of the iteration in flight (length-biased mean ``E[tau^2] / (2 E[tau])``). Mean
  wait ``rho S / (2 (1 - rho)) + residual``. Percentiles use the exponential-tail
  approximation of the M/D/1 waiting time, ``P(W > x) ~ rho exp(-2 (1 - rho) x / S)``
  (``P(W > 0) = rho`` and the exact M/D/1 mean; a Kingman-type tail), so
  ``W_q = S ln(rho / (1 - q)) / (2 (1 - rho))`` when ``rho > 1 - q``, else 0; the residual
  contributes ``2 q residual`` (uniform residual of a fixed-length iteration).
* TPOT percentiles: a request's ``L_out - 1`` decode iterations include a Binomial(``L_out - 1``,
  ``f``) number of prompt-carrying ones; with a normal approximation,
  ``TPOT_q = tau + z_q (tau1 - tau0) sqrt(f (1 - f) / (L_out - 1))``.
* E2E = TTFT + (L_out - 1) TPOT; its percentile adds the two excesses over their means in
  quadrature (independent tails).
* No ``concurrency`` and no ``qps``: the peak-throughput point, ``B`` at the memory or engine cap
  (``lambda -> infinity`` limit of vendor throughput tables). TTFT there is *unqueued* (first-token
  service + iteration residual + overhead): at the saturation rate the prompt queue grows
  without bound, so use ``qps`` for latency under load.
* ``concurrency=C``: a closed loop of ``C`` clients each sending its next request when the last
  finishes. Requests in the system ``N(B) = lambda(B) TTFT(B) + B``; solve ``N(B) = C``; above
  the cap the excess waits for admission and TTFT follows from Little's law. Identical requests
  from a closed loop drift in step, so their arrivals are burstier than Poisson: the prompt
  queue uses Kingman's G/D/1 wait with the fitted arrival variability ``closed_loop_ca2``.

One-token outputs are modelled as two-token requests (one decode step; slightly conservative).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from service.domain.catalog import GpuSpec
from service.domain.errors import InvalidInput
from service.domain.llm import ModelArch
from service.domain.perfmodel.calibration import (
    PUBLIC_PROFILES,
    Calibration,
    EngineProfile,
    default_calibration,
)
from service.domain.perfmodel.core import (
    Setup,
    activation_bytes,
    build_setup,
    iteration_mix,
    iteration_parts,
    iteration_time,
    kv_pool_bytes,
    mean_context,
    memory_batch_cap,
    prefill_per_iteration,
    token_budget_cap,
    tokens_per_sequence,
    usable_bytes,
)
from service.domain.perfmodel.values import (
    PRECISIONS,
    Bottleneck,
    Capacity,
    Deployment,
    Engine,
    Estimate,
    KvPrecision,
    LatencyPercentiles,
    MemoryBreakdown,
    Precision,
    RequestShape,
    Slo,
)

__all__ = [
    "OperatingPoint",
    "estimate",
    "estimate_with",
    "max_qps_under_slo",
    "max_qps_under_slo_with",
    "operating_point",
    "smallest_fitting_tp",
    "static_batch_point",
]

INF = math.inf


@lru_cache(maxsize=64)
def _z(q: float) -> float:
    """Standard-normal quantile ``z_q`` (``statistics.NormalDist``), memoised per ``q``."""
    return NormalDist().inv_cdf(q)


def _validate(shape: RequestShape, dep: Deployment) -> None:
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
    if dep.engine not in PUBLIC_PROFILES:
        raise InvalidInput(f"unknown engine {dep.engine!r}", field="engine")


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """One steady state (seconds, requests/s). ``b`` decoding sequences, ``lam`` arrival rate,
    ``tau0``/``tau1``/``tau`` iteration time without prompts, with prompts, and on average;
    ``f`` share of iterations carrying prompts; ``delta`` GPU time one prompt adds; ``service``
    prompt-queue service time; ``residual`` mean residual of the iteration in flight; ``s1``
    first-token service; ``rho`` prompt-queue utilisation; ``ttft`` mean TTFT."""

    b: float
    lam: float
    tau0: float
    tau: float
    tau1: float
    f: float
    delta: float
    service: float
    residual: float
    s1: float
    rho: float
    ttft: float
    n_dec: int


def _eff_out(l_out: int) -> int:
    """Output tokens used for the dynamics: at least 2 (one-token outputs as two-token)."""
    return max(l_out, 2)


def operating_point(s: Setup, b: float, l_in: int, l_out: int, ca2: float = 1.0) -> OperatingPoint:
    """Steady state with ``b`` sequences decoding (``lambda`` from Little's law).

    ``ca2``: squared coefficient of variation of the arrivals (1 for Poisson: M/D/1; a closed
    loop of identical requests is burstier): the prompt-queue wait is Kingman's
    ``(ca2 + 0) / 2 * rho / (1 - rho) * service`` (deterministic service).
    """
    lo = _eff_out(l_out)
    n_dec = lo - 1
    b = max(b, 1e-9)
    mix = iteration_mix(s, b, l_in, lo)
    lam = b / (n_dec * mix.tau)
    rho = min(lam * mix.service, 0.999999)
    wait = ca2 * rho * mix.service / (2.0 * (1.0 - rho)) + mix.residual
    return OperatingPoint(
        b, lam, mix.tau0, mix.tau, mix.tau1, mix.f, mix.delta, mix.service, mix.residual,
        mix.s1, rho, mix.s1 + wait + s.ttft_oh_s, n_dec,
    )  # fmt: skip


def _ttft_q(s: Setup, op: OperatingPoint, q: float) -> float:
    """TTFT percentile ``q`` (0-1), seconds: service + M/D/1 tail wait + residual + overhead."""
    rho = op.rho
    w = 0.0
    if rho > 1.0 - q and op.service > 0.0:
        w = op.service * math.log(rho / (1.0 - q)) / (2.0 * (1.0 - rho))
    return op.s1 + w + 2.0 * q * op.residual + s.ttft_oh_s


def _tpot_q(op: OperatingPoint, q: float) -> float:
    """TPOT percentile ``q`` (0-1), seconds: normal approximation of the Binomial count of
    prompt-carrying iterations in a request's decode (never below ``tau0``)."""
    spread = (op.tau1 - op.tau0) * math.sqrt(op.f * (1.0 - op.f) / op.n_dec)
    return max(op.tau + _z(q) * spread, op.tau0)


def _e2e_q(s: Setup, op: OperatingPoint, q: float) -> float:
    """E2E percentile ``q`` (0-1), seconds: mean plus the TTFT and decode excesses added in
    quadrature (independent tails); below the median the deficits are added."""
    mean = op.ttft + op.n_dec * op.tau
    d1 = _ttft_q(s, op, q) - op.ttft
    d2 = op.n_dec * (_tpot_q(op, q) - op.tau)
    if q <= 0.5:
        return mean + min(d1, 0.0) + min(d2, 0.0)
    return mean + math.hypot(max(d1, 0.0), max(d2, 0.0))


def _solve_increasing(
    f: Callable[[float], float], target: float, lo: float, hi: float, iters: int = 48
) -> float:
    """Largest-accuracy root of increasing ``f(x) = target`` in ``[lo, hi]`` (Illinois method)."""
    flo = f(lo) - target
    fhi = f(hi) - target
    if flo >= 0.0:
        return lo
    if fhi <= 0.0:
        return hi
    side = 0
    x = hi
    for _ in range(iters):
        x = (lo * fhi - hi * flo) / (fhi - flo)
        fx = f(x) - target
        if abs(fx) <= 1e-7 * max(abs(target), 1e-12) or hi - lo <= 1e-9 * hi:
            return x
        if fx > 0.0:
            hi, fhi = x, fx
            if side == -1:
                flo *= 0.5
            side = -1
        else:
            lo, flo = x, fx
            if side == 1:
                fhi *= 0.5
            side = 1
    return x


@dataclass(frozen=True, slots=True)
class _Caps:
    b_max: int
    b_mem: int
    limited_by: str


def _caps(s: Setup, l_in: int, l_out: int) -> _Caps:
    """Running-batch cap for a shape: min(KV memory, engine ``max_batch``, token budget)."""
    b_mem = memory_batch_cap(s, l_in, _eff_out(l_out))
    budget = token_budget_cap(s, l_in, _eff_out(l_out))
    b = min(b_mem, s.max_batch)
    limited = "kv_capacity" if b_mem <= s.max_batch else "engine_batch_cap"
    if budget < b:
        b = max(1, int(budget))
        limited = "token_budget"
    return _Caps(max(b, 0), b_mem, limited)


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


def _fit_reason(s: Setup, dep: Deployment, model: ModelArch, shape: RequestShape) -> str:
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
    l_in, l_out = shape.prompt_tokens, _eff_out(shape.output_tokens)
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
        tokens = int(pool / s.kv_token_b) if s.kv_token_b > 0 else 0
        need = tokens_per_sequence(s, shape.prompt_tokens, _eff_out(shape.output_tokens))
        return (
            f"after {s.weights_b / 1e9:.1f} GB of weights per card the KV cache gets "
            f"{pool / 1e9:.1f} GB per card ({tokens} tokens at "
            f"{s.kv_token_b / 1e3:.1f} KB/token); one request needs {need:.0f} tokens"
        )
    return ""


def _bottleneck(s: Setup, op: OperatingPoint, l_in: int, l_out: int, at_kv_cap: bool) -> Bottleneck:
    """Label the binding resource at an operating point from :func:`iteration_parts`."""
    parts = iteration_parts(
        s, op.b, prefill_per_iteration(op.b, l_in, _eff_out(l_out)), mean_context(l_in, l_out), l_in
    )
    if parts.comm_s >= max(parts.memory_s, parts.compute_s):
        return "interconnect"
    if parts.memory_s >= parts.compute_s:
        if at_kv_cap and parts.weights_s >= parts.kv_s:
            return "kv_capacity"
        return "memory_bandwidth"
    return "compute"


def _percentiles(s: Setup, op: OperatingPoint) -> LatencyPercentiles:
    """p50/p90/p95/p99 of TTFT, TPOT and E2E (ms) at an operating point."""
    ms = 1e3
    return LatencyPercentiles(
        ttft_p50_ms=_ttft_q(s, op, 0.5) * ms,
        ttft_p90_ms=_ttft_q(s, op, 0.9) * ms,
        ttft_p95_ms=_ttft_q(s, op, 0.95) * ms,
        ttft_p99_ms=_ttft_q(s, op, 0.99) * ms,
        tpot_p50_ms=_tpot_q(op, 0.5) * ms,
        tpot_p90_ms=_tpot_q(op, 0.9) * ms,
        tpot_p95_ms=_tpot_q(op, 0.95) * ms,
        tpot_p99_ms=_tpot_q(op, 0.99) * ms,
        e2e_p50_ms=_e2e_q(s, op, 0.5) * ms,
        e2e_p90_ms=_e2e_q(s, op, 0.9) * ms,
        e2e_p95_ms=_e2e_q(s, op, 0.95) * ms,
        e2e_p99_ms=_e2e_q(s, op, 0.99) * ms,
    )


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
    _validate(shape, dep)
    if concurrency is not None and qps is not None:
        raise InvalidInput("give concurrency or qps, not both", field="qps")
    if concurrency is not None and concurrency < 1:
        raise InvalidInput(f"concurrency must be >= 1, got {concurrency}", field="concurrency")
    if qps is not None and not (qps > 0.0 and math.isfinite(qps)):
        raise InvalidInput(f"qps must be a positive number, got {qps}", field="qps")
    s = build_setup(model, dep, profile, cal)
    t = dep.tensor_parallel
    mem = _memory(s, t, shape.prompt_tokens, _eff_out(shape.output_tokens))
    notes = s.notes
    reason = _fit_reason(s, dep, model, shape)
    if reason:
        return _not_fit(dep.gpu, t, reason, mem, notes)
    l_in, l_out = shape.prompt_tokens, shape.output_tokens
    caps = _caps(s, l_in, l_out)
    b_max = caps.b_max
    n_dec = _eff_out(l_out) - 1
    reason_out: str | None = None
    latency: LatencyPercentiles | None = None
    extra: tuple[str, ...] = ()
    if l_out == 1:
        extra = ("one-token outputs modelled as two-token requests",)
    if qps is not None:
        top = operating_point(s, float(b_max), l_in, l_out)
        if qps > top.lam * (1.0 + 1e-9):
            op = top
            reason_out = (
                f"qps {qps:g} exceeds this replica's capacity of {top.lam:.3g} requests/s "
                f"for {l_in}/{l_out} tokens (running batch capped at {b_max} by {caps.limited_by})"
            )
            ttft = tpot = e2e = INF
            latency = LatencyPercentiles(*([INF] * 12))
        else:
            b = _solve_increasing(
                lambda x: operating_point(s, x, l_in, l_out).lam, qps, 1e-6, float(b_max)
            )
            op = operating_point(s, b, l_in, l_out)
            ttft, tpot = op.ttft, op.tau
            e2e = ttft + n_dec * tpot
            latency = _percentiles(s, op)
    elif concurrency is not None:
        c = float(concurrency)
        ca2 = cal.closed_loop_ca2
        top = operating_point(s, float(b_max), l_in, l_out, ca2)
        in_system_top = top.lam * top.ttft + top.b
        if c >= in_system_top:
            op = top
            ttft = max(c / top.lam - n_dec * top.tau, top.ttft)
        else:
            b = _solve_increasing(
                lambda x: _in_system(s, x, l_in, l_out, ca2), c, 1e-6, float(b_max)
            )
            op = operating_point(s, b, l_in, l_out, ca2)
            ttft = op.ttft
        tpot = op.tau
        e2e = ttft + n_dec * tpot
    else:
        op = operating_point(s, float(b_max), l_in, l_out)
        # unqueued: at the saturation rate the prompt queue has no finite mean worth reporting
        ttft, tpot = op.s1 + op.residual + s.ttft_oh_s, op.tau
        e2e = ttft + n_dec * tpot
    at_cap = op.b >= b_max - 1e-6 and caps.limited_by == "kv_capacity"
    return Estimate(
        fits=True,
        reason=reason_out,
        gpu=dep.gpu.id,
        tensor_parallel=t,
        max_concurrency=b_max,
        concurrency=max(1, round(op.b)),
        ttft_ms=ttft * 1e3,
        tpot_ms=tpot * 1e3,
        e2e_ms=e2e * 1e3,
        output_tokens_per_s=op.lam * l_out,
        requests_per_s=op.lam,
        bottleneck=_bottleneck(s, op, l_in, l_out, at_cap),
        memory=mem,
        latency=latency,
        assumptions=notes + extra,
    )


def _in_system(s: Setup, b: float, l_in: int, l_out: int, ca2: float) -> float:
    """Requests in the system ``lambda TTFT + B`` for a closed loop at batch ``b``."""
    op = operating_point(s, b, l_in, l_out, ca2)
    return op.lam * op.ttft + op.b


@lru_cache(maxsize=4096)
def _estimate_cached(
    model: ModelArch,
    dep: Deployment,
    shape: RequestShape,
    concurrency: int | None,
    qps: float | None,
) -> Estimate:
    """Memoised :func:`estimate_with` with the public profile and committed constants."""
    return estimate_with(
        model,
        dep,
        shape,
        PUBLIC_PROFILES[dep.engine],
        default_calibration(),
        concurrency=concurrency,
        qps=qps,
    )


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
    _validate(shape, dep)
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


def smallest_fitting_tp(
    model: ModelArch,
    gpu: GpuSpec,
    precision: Precision,
    kv_precision: KvPrecision,
    engine: Engine,
    shape: RequestShape,
    allow_pcie_tensor_parallel: bool = False,
) -> int | None:
    """Smallest power-of-two tensor-parallel degree whose replica fits one request of ``shape``
    (weights plus that request's KV), or ``None`` when no degree up to the card's limit does."""
    for t in _tp_candidates(gpu):
        dep = Deployment(gpu, t, precision, kv_precision, engine, allow_pcie_tensor_parallel)
        est = estimate(model, dep, shape)
        if est.fits:
            return t
    return None


def _slo_metrics(s: Setup, op: OperatingPoint, q: float) -> tuple[float, float, float]:
    """(TTFT, TPOT, E2E) at percentile ``q``, seconds."""
    return _ttft_q(s, op, q), _tpot_q(op, q), _e2e_q(s, op, q)


def _violation(slo: Slo, m: tuple[float, float, float]) -> str:
    """Name of the first SLO limit the metrics break ("" when all hold)."""
    ttft, tpot, e2e = m
    if slo.ttft_ms is not None and ttft * 1e3 > slo.ttft_ms:
        return "ttft"
    if slo.tpot_ms is not None and tpot * 1e3 > slo.tpot_ms:
        return "tpot"
    if slo.e2e_ms is not None and e2e * 1e3 > slo.e2e_ms:
        return "e2e"
    return ""


def max_qps_under_slo_with(
    model: ModelArch,
    dep: Deployment,
    shape: RequestShape,
    slo: Slo,
    profile: EngineProfile,
    cal: Calibration,
) -> Capacity:
    """:func:`max_qps_under_slo` with an explicit engine profile and calibration."""
    _validate(shape, dep)
    if not 50.0 <= slo.percentile <= 99.9:
        raise InvalidInput(
            f"percentile must be within 50..99.9, got {slo.percentile}", field="slo.percentile"
        )
    for name, v in (("ttft_ms", slo.ttft_ms), ("tpot_ms", slo.tpot_ms), ("e2e_ms", slo.e2e_ms)):
        if v is not None and not v > 0.0:
            raise InvalidInput(f"slo.{name} must be positive, got {v}", field=f"slo.{name}")
    s = build_setup(model, dep, profile, cal)
    reason = _fit_reason(s, dep, model, shape)
    if reason:
        return Capacity(0.0, 0.0, 0.0, 0.0, 0.0, "does_not_fit", f"does not fit: {reason}")
    l_in, l_out = shape.prompt_tokens, shape.output_tokens
    q = slo.percentile / 100.0
    caps = _caps(s, l_in, l_out)
    b_max = float(caps.b_max)
    # zero load: one request alone
    lone = operating_point(s, 1e-6, l_in, l_out)
    ttft0 = lone.s1 + s.ttft_oh_s
    one = operating_point(s, min(1.0, b_max), l_in, l_out)
    if slo.ttft_ms is not None and ttft0 * 1e3 > slo.ttft_ms:
        return Capacity(
            0.0, ttft0 * 1e3, one.tau0 * 1e3, (ttft0 + one.n_dec * one.tau0) * 1e3, 0.0, "ttft",
            f"TTFT at zero load is {ttft0 * 1e3:.1f} ms > SLO {slo.ttft_ms:g} ms",
        )  # fmt: skip
    if slo.tpot_ms is not None and one.tau0 * 1e3 > slo.tpot_ms:
        return Capacity(
            0.0, ttft0 * 1e3, one.tau0 * 1e3, (ttft0 + one.n_dec * one.tau0) * 1e3, 0.0, "tpot",
            f"TPOT at batch 1 is {one.tau0 * 1e3:.1f} ms > SLO {slo.tpot_ms:g} ms",
        )  # fmt: skip
    e2e0 = ttft0 + one.n_dec * one.tau0
    if slo.e2e_ms is not None and e2e0 * 1e3 > slo.e2e_ms:
        return Capacity(
            0.0, ttft0 * 1e3, one.tau0 * 1e3, e2e0 * 1e3, 0.0, "e2e",
            f"E2E latency at zero load is {e2e0 * 1e3:.1f} ms > SLO {slo.e2e_ms:g} ms",
        )  # fmt: skip
    top = operating_point(s, b_max, l_in, l_out)
    m_top = _slo_metrics(s, top, q)
    if not _violation(slo, m_top):
        return Capacity(
            top.lam, m_top[0] * 1e3, m_top[1] * 1e3, m_top[2] * 1e3, top.b, caps.limited_by
        )
    # bisection on the running batch: latencies grow with B
    lo, hi = 1e-6, b_max
    op_lo = lone
    bind = _violation(slo, m_top)
    for _ in range(40):
        mid = math.sqrt(lo * hi) if hi > 1e3 * lo else 0.5 * (lo + hi)
        op = operating_point(s, mid, l_in, l_out)
        broken = _violation(slo, _slo_metrics(s, op, q))
        if broken:
            hi, bind = mid, broken
        else:
            lo, op_lo = mid, op
        if hi - lo <= 1e-3 * hi:
            break
    m = _slo_metrics(s, op_lo, q)
    return Capacity(op_lo.lam, m[0] * 1e3, m[1] * 1e3, m[2] * 1e3, op_lo.b, bind)


@lru_cache(maxsize=4096)
def max_qps_under_slo(model: ModelArch, dep: Deployment, shape: RequestShape, slo: Slo) -> Capacity:
    """Largest Poisson arrival rate (requests/s) one replica sustains with TTFT, TPOT and E2E at
    ``slo.percentile`` within the limits, and the latencies there (see module docstring).

    ``qps == 0`` with a ``reason`` when even zero load fails: "does not fit: ...", "TTFT at zero
    load is X ms > SLO Y ms", "TPOT at batch 1 is X ms > SLO Y ms". ``limited_by`` names the
    binding limit, or the cap (``kv_capacity``, ``engine_batch_cap``, ``token_budget``) when no
    latency limit binds. Memoised.
    """
    return max_qps_under_slo_with(
        model, dep, shape, slo, PUBLIC_PROFILES[dep.engine], default_calibration()
    )


@dataclass(frozen=True, slots=True)
class StaticBatchResult:
    """A closed-loop benchmark of ``clients`` identical requests started together (seconds)."""

    output_tokens_per_s: float
    ttft_mean_s: float
    tpot_p50_s: float
    tpot_mean_s: float
    running: float


def static_batch_point(s: Setup, l_in: int, l_out: int, clients: int) -> StaticBatchResult:
    """Closed loop of ``clients`` identical requests that start together (LMDeploy
    ``profile_generation``).

    When all fit, they run in synchronised waves: one batched prefill of ``clients x L_in``
    tokens (TTFT), then ``L_out - 1`` decode steps (the p50 per-token latency). When the KV pool
    holds fewer, ``B`` run desynchronised at the steady state and the rest wait for admission
    (TTFT from Little's law).
    """
    lo = _eff_out(l_out)
    n_dec = lo - 1
    b_mem = memory_batch_cap(s, l_in, lo)
    c = mean_context(l_in, lo)
    if clients <= b_mem:
        b = float(clients)
        prefill = iteration_time(s, 0.0, b * l_in, 0.0, l_in)
        step = iteration_time(s, b, 0.0, c, l_in)
        wave = prefill + n_dec * step
        return StaticBatchResult(b * lo / wave, prefill + s.ttft_oh_s, step, step, b)
    b = float(max(b_mem, 1))
    op = operating_point(s, b, l_in, l_out)
    ttft = max(clients / op.lam - n_dec * op.tau, op.ttft)
    return StaticBatchResult(op.lam * lo, ttft, op.tau0, op.tau, b)
