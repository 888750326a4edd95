"""Latency under load: the steady state of one replica at a running batch ``B``, and the TTFT,
TPOT and E2E percentiles there.

* Steady state (:func:`operating_point`): with ``B`` sequences decoding, the iteration mix
  (``iteration.iteration_mix``) gives the mean time per output token ``tau``, and Little's law
  on the decode phase the arrival rate that keeps ``B`` decoding,
  ``lambda(B) = B / ((L_out - 1) tau(B))``.
* TTFT = queueing + prefill + request handling: first-token service ``s1`` (the iteration(s)
  carrying the request's prompt), the wait before its first iteration, and ``ttft_oh_s`` (a few
  ms, ``coefficients.REQUEST_HANDLING_MAX_MS``). Prompts queue for the token budget: an
  iteration admits ``room = budget - B`` prompt tokens, and while prompts wait it is full, taking
  ``tau_room`` (``room`` prompt tokens beside the ``B`` decoding sequences), so the prompt queue
  is an M/D/1 queue with deterministic service ``S = tau_room L_in / room`` (a prompt's share of
  a full iteration) at utilisation ``rho = lambda S``. Its
  wait adds to the residual of the iteration in flight, which an arrival meets only while the
  engine is busy: with ``B`` sequences decoding on average (Poisson arrivals, so the number in
  decode is about Poisson(``B``)) that is ``P_busy = 1 - exp(-B)``, and the residual given busy
  is length-biased, mean ``r = E[tau^2] / (2 E[tau])``. Mean wait
  ``rho S / (2 (1 - rho)) + P_busy r``; a lone request (``B -> 0``) waits for nothing.
  Percentiles use the exponential-tail approximation of the M/D/1 waiting time,
  ``P(W > x) ~ rho exp(-2 (1 - rho) x / S)`` (``P(W > 0) = rho`` and the exact M/D/1 mean; a
  Kingman-type tail), so ``W_q = S ln(rho / (1 - q)) / (2 (1 - rho))`` when ``rho > 1 - q``,
  else 0; the residual's quantile is that of 0 with probability ``1 - P_busy`` and
  Uniform(0, 2 r) otherwise.
* TPOT percentiles: a request's ``L_out - 1`` decode iterations include a Binomial(``L_out - 1``,
  ``f``) number of prompt-carrying ones; with a normal approximation,
  ``TPOT_q = tau + z_q (tau1 - tau0) sqrt(f (1 - f) / (L_out - 1))``.
* Prompts beside a decode: the iterations above charge every prompt to the running decodes,
  which holds while the KV pool has room for the next prompt beside them. A pool that holds
  ``n`` sequences with ``1 <= n < 2`` runs one sequence at a time and only ``n - 1`` of the
  next prompt fits beside it (``memory.beside_decode_share``); the rest is prefilled after it
  completes, in iterations no decode waits on. A request's decode then sees the share
  ``f_dec = (n - 1) f`` and ``tau_dec = tau0 + (n - 1)(tau - tau0)`` (TPOT and E2E use these);
  the engine's work per request, hence ``lambda``, is unchanged, so in a closed loop the
  prompt's wait moves into TTFT. GPUStack's Qwen3-32B at 32,000/77 tokens on one A100 (vLLM
  0.11, a pool of one sequence) decodes at 64-68 ms per token, a batch-1 step; charging it the
  next prompts' prefill would say 270 ms.
* E2E = TTFT + (L_out - 1) TPOT; its percentile adds the two excesses over their means in
  quadrature (independent tails).
* Closed loops (:func:`prompt_waves`, :func:`closed_loop_ttft`): ``N`` clients with identical
  lengths that start together (``vllm bench serve --max-concurrency N``) send their prompts at
  once. The engine admits them in waves of what its per-iteration token budget ``T``
  (``max_num_batched_tokens``/``max_num_tokens``) holds: with chunked prefill the prompt
  tokens fill iterations of ``T_p`` tokens back to back (prompt ``i`` completes in iteration
  ``ceil(i L_in / T_p)``), without it whole prompts, ``floor(T_p / L_in)`` (at least one) per
  iteration. ``T_p = T`` when all prompts fit one iteration, else ``T - min(N, T) / 2``: the
  sequences admitted in earlier waves decode meanwhile and take one token of the budget each
  (``N / 2`` of them on average; none on a prefill-first engine, below). A prompt's TTFT is
  the time to the end of the iteration that completes it, plus request handling: about
  ``(k + 1) / 2`` wave iterations on average for ``k = ceil(N L_in / T_p)`` waves, so this
  first cycle's TTFT grows with ``N`` once ``N L_in > T``.

  Each client sends its next request when its previous one finishes, so the clients stay
  grouped in the same waves. With one wave (``N L_in <= T``) all finish together and every
  cycle repeats the first. With ``k > 1`` waves, wave ``j`` finishes ``j`` iterations after
  wave 1 and returns then, so the waves rotate: each cycle a wave is admitted in the
  iteration(s) after it returns, behind the iteration in flight (the residual of the steady
  state at the decoding batch ``B``), in ``ceil(L_in / T_p)`` iterations of one wave of prompt
  tokens. Measured closed loops show this steady state: NIM 1.8 (TensorRT-LLM) serving a 70B
  model on 2 x H100 with 5000/500 tokens keeps TTFT at 0.4-0.8 s from 1 to 50 clients
  (``service/data/calibration.csv``), where waves re-formed every cycle would reach ~6 s at 50.
  That needs an engine whose running decodes go on while a returning wave is admitted (vLLM
  V1, TensorRT-LLM). A prefill-first engine (``Setup.prefill_first``: SGLang, vLLM V0) runs
  every waiting prompt before it resumes the decodes, so all ``N`` sequences decode from the
  same iteration and, their lengths being equal, finish in the same one: the waves re-form
  every cycle and each cycle repeats the first, whose TTFT grows with ``N``. Such a cycle is
  wave-locked (:func:`locked_cycle`): ``P`` seconds of prompt iterations with no decodes in
  them, then ``L_out - 1`` decode iterations of all ``N`` sequences, then request handling.
  A prompt finished in an early wave waits out the later waves' prefill before its second
  token, so the mean TPOT carries ``(P - mean prompt completion) / (L_out - 1)`` on top of
  the decode step at batch ``N``, and the loop completes ``N`` requests per cycle. dstack's
  DeepSeek-R1 closed loops (3,200/800 tokens, 4-128 clients on 8 GPUs) show both: with vLLM
  V0 twice the mean TTFT over ``N + 1`` (one prompt's prefill when waves re-form) stays at
  0.38-0.50 s from 4 to 64 clients, and with SGLang at 0.42-0.84 s, while with trtllm-serve
  TTFT over ``N + 1`` falls from 0.20 s at 4-8 clients to 0.06 s at 64.
  A benchmark run of ``P`` requests (``vllm bench serve`` sends ``--num-prompts``, 1000 by
  default: :data:`BENCH_NUM_PROMPTS`) averages the first cycle's ``min(N, P)`` requests and
  the ``P - N`` steady ones.

One-token outputs are modelled as two-token requests (:func:`effective_output`). Seconds and
requests/s inside this module; :func:`latency_percentiles` converts to ms. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from service.domain.perfmodel.coefficients import Setup
from service.domain.perfmodel.iteration import iteration_mix, iteration_time, mean_context
from service.domain.perfmodel.memory import beside_decode_share, token_budget
from service.domain.perfmodel.values import LatencyPercentiles

__all__ = [
    "LockedCycle",
    "OperatingPoint",
    "Waves",
    "e2e_q",
    "effective_output",
    "latency_percentiles",
    "locked_cycle",
    "normal_quantile",
    "operating_point",
    "prompt_waves",
    "residual_q",
    "solve_increasing",
    "tpot_q",
    "ttft_q",
]


@lru_cache(maxsize=64)
def normal_quantile(q: float) -> float:
    """Standard-normal quantile ``z_q`` (``statistics.NormalDist``), memoised per ``q``."""
    return NormalDist().inv_cdf(q)


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """One steady state (seconds, requests/s). ``b`` decoding sequences, ``lam`` arrival rate,
    ``tau0``/``tau1``/``tau`` iteration time without prompts, with prompts, and on average;
    ``f`` share of iterations carrying prompts; ``delta`` GPU time one prompt adds; ``service``
    prompt-queue service time; ``residual`` mean residual of the iteration in flight given the
    engine is busy; ``busy`` the probability an arrival finds it busy; ``s1`` first-token
    service; ``rho`` prompt-queue utilisation; ``ttft`` mean TTFT; ``f_dec`` and ``tau_dec``
    the share of prompt-carrying iterations and the mean iteration time one request sees while
    it decodes (``memory.beside_decode_share``: below ``f`` and ``tau`` when the KV pool holds
    fewer than two sequences, so prompts wait for the decode to finish)."""

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
    busy: float
    f_dec: float
    tau_dec: float


def effective_output(l_out: int) -> int:
    """Output tokens used for the dynamics: at least 2 (one-token outputs as two-token)."""
    return max(l_out, 2)


def operating_point(
    s: Setup, b: float, l_in: int, l_out: int, share: float | None = None
) -> OperatingPoint:
    """Steady state with ``b`` sequences decoding under Poisson arrivals (``lambda`` from
    Little's law; the prompt queue is M/D/1). ``share``: ``memory.beside_decode_share`` of
    the shape, where a search over ``b`` has it already (it does not depend on ``b``)."""
    lo = effective_output(l_out)
    n_dec = lo - 1
    b = max(b, 1e-9)
    mix = iteration_mix(s, b, l_in, lo)
    lam = b / (n_dec * mix.tau)
    rho = min(lam * mix.service, 0.999999)
    busy = -math.expm1(-b)
    wait = rho * mix.service / (2.0 * (1.0 - rho)) + busy * mix.residual
    if share is None:
        share = beside_decode_share(s, l_in, lo)
    f_dec, tau_dec = mix.f, mix.tau
    if share < 1.0:
        f_dec, tau_dec = share * mix.f, mix.tau0 + share * (mix.tau - mix.tau0)
    return OperatingPoint(
        b, lam, mix.tau0, mix.tau, mix.tau1, mix.f, mix.delta, mix.service, mix.residual,
        mix.s1, rho, mix.s1 + wait + s.ttft_oh_s, n_dec, busy, f_dec, tau_dec,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Waves:
    """Admission of ``n`` prompts that arrive together (seconds): ``k`` prefill iterations,
    the full ones taking ``tau_full`` and the last ``tau_last``; ``mean_iter`` the mean index
    (1-based) of the iteration that completes a prompt; ``ttft`` the mean TTFT, request
    handling included."""

    k: int
    mean_iter: float
    tau_full: float
    tau_last: float
    ttft: float
    per_iter: float = 0.0
    chunks: int = 1


_EXACT_WAVES = 64  # up to this many waves the completion indices are summed exactly
# Requests in a benchmark run: ``vllm bench serve --num-prompts`` defaults to 1000
# (vllm ``benchmarks/benchmark_serving.py``).
BENCH_NUM_PROMPTS = 1000


def prompt_waves(s: Setup, n: int, l_in: int, l_out: int) -> Waves:
    """``n`` prompts of ``l_in`` tokens admitted together, in waves of the token budget (see
    the module docstring); memoised per shape through :func:`operating_point`'s callers."""
    lo = effective_output(l_out)
    budget = token_budget(s, l_in, lo)
    tokens = float(n * l_in)
    if tokens <= budget or (not s.chunked and n == 1):
        tau = iteration_time(s, 0.0, tokens, float(l_in), float(l_in))
        return Waves(1, 1.0, tau, tau, tau + s.ttft_oh_s, tokens, 1)
    # decodes of earlier waves take one budget token each (N / 2 on average), except on a
    # prefill-first engine, whose prompt iterations carry no decodes
    decoding = 0.0 if s.prefill_first else 0.5 * min(float(n), budget)
    per_iter = budget - decoding
    if s.chunked:
        # N_j = prompts complete after j full iterations; sum_i c_i = k n - sum_{j<k} N_j
        k = max(1, math.ceil(tokens / per_iter - 1e-9))
        done: float
        if k <= _EXACT_WAVES:
            done = sum(min(n, math.floor(j * per_iter / l_in + 1e-9)) for j in range(1, k))
        else:
            done = (k - 1) * k * per_iter / (2.0 * l_in) - (k - 1) / 2.0
        before_last = min(n, math.floor((k - 1) * per_iter / l_in + 1e-9))
        last_tokens = tokens - (k - 1) * per_iter
    else:
        q = max(1, math.floor(per_iter / l_in))
        per_iter = float(q * l_in)
        k = math.ceil(n / q)
        done = q * k * (k - 1) / 2.0
        before_last = (k - 1) * q
        last_tokens = float((n - before_last) * l_in)
    mean_iter = k - done / n
    ctx = float(l_in)
    beside = 0.0 if s.prefill_first else 1.0
    tau_full = iteration_time(s, beside * 0.5 * before_last, per_iter, ctx, ctx)
    tau_last = iteration_time(s, beside * before_last, last_tokens, ctx, ctx)
    share_last = (n - before_last) / n
    ttft = tau_full * mean_iter - share_last * (tau_full - tau_last) + s.ttft_oh_s
    chunks = math.ceil(l_in / per_iter - 1e-9) if s.chunked else 1
    return Waves(k, mean_iter, tau_full, tau_last, ttft, per_iter, max(chunks, 1))


def rotating_ttft(s: Setup, w: Waves, n: int, b: float, l_in: int, l_out: int) -> float:
    """Steady-cycle TTFT (seconds) of ``n`` clients whose first cycle admitted ``w``, with
    ``b`` sequences decoding. One client, or one wave, does not rotate: every cycle repeats
    the first; nor do the waves of a prefill-first engine (module docstring). Otherwise a
    returning wave waits for the iteration in flight (the residual of the steady state at
    ``b``), then is admitted beside the decoding batch: one iteration of ``w.per_iter`` prompt
    tokens, or for a prompt longer than that its chunks (full ones, then the remainder); then
    request handling."""
    if n <= 1 or w.k == 1 or s.prefill_first:
        return w.ttft
    lo = effective_output(l_out)
    c = mean_context(l_in, lo)
    mix = iteration_mix(s, b, l_in, lo)
    if w.chunks > 1:
        rest = max(l_in - (w.chunks - 1) * w.per_iter, 1.0)
        own = (w.chunks - 1) * iteration_time(s, b, w.per_iter, c, l_in) + iteration_time(
            s, b, rest, c, l_in
        )
    else:
        own = iteration_time(s, b, w.per_iter, c, l_in)
    return -math.expm1(-b) * mix.residual + own + s.ttft_oh_s


@dataclass(frozen=True, slots=True)
class LockedCycle:
    """One cycle of a wave-locked closed loop (seconds, requests/s): ``prefill`` the prompt
    iterations, ``step`` one decode iteration of the whole batch, ``ttft``/``tpot``/``e2e``
    the request means, ``lam`` the completion rate and ``decoding`` the mean number of
    sequences decoding."""

    prefill: float
    step: float
    ttft: float
    tpot: float
    e2e: float
    lam: float
    decoding: float


def locked_cycle(s: Setup, w: Waves, n: int, l_in: int, l_out: int) -> LockedCycle:
    """The steady cycle of ``n`` clients on a prefill-first engine (module docstring): the
    waves ``w`` (``prompt_waves``, no decodes beside them), then ``L_out - 1`` decode steps of
    all ``n`` at the mean context; request handling once per request."""
    n_dec = effective_output(l_out) - 1
    prefill = (w.k - 1) * w.tau_full + w.tau_last
    step = iteration_time(s, float(n), 0.0, mean_context(l_in, n_dec + 1), float(l_in))
    cycle = prefill + n_dec * step + s.ttft_oh_s
    completed = w.ttft - s.ttft_oh_s  # mean end of the iteration that completes a prompt
    tpot = step + max(prefill - completed, 0.0) / n_dec
    return LockedCycle(prefill, step, w.ttft, tpot, cycle, n / cycle, n * n_dec * step / cycle)


def closed_loop_ttft(w: Waves, steady: float, n: int) -> float:
    """Mean TTFT (seconds) over a benchmark run of :data:`BENCH_NUM_PROMPTS` requests from
    ``n`` clients: the first cycle's ``min(n, P)`` in waves, the rest in the steady cycle."""
    first = min(n, BENCH_NUM_PROMPTS)
    return (first * w.ttft + (BENCH_NUM_PROMPTS - first) * steady) / BENCH_NUM_PROMPTS


def residual_q(op: OperatingPoint, q: float) -> float:
    """Quantile ``q`` (0-1) of the wait for the iteration in flight, seconds: 0 while the
    engine is idle (probability ``1 - busy``), else Uniform(0, 2 ``residual``)."""
    idle = 1.0 - op.busy
    if q <= idle or op.busy <= 0.0:
        return 0.0
    return 2.0 * op.residual * (q - idle) / op.busy


def ttft_q(s: Setup, op: OperatingPoint, q: float) -> float:
    """TTFT percentile ``q`` (0-1), seconds: service + M/D/1 tail wait + residual + request
    handling."""
    rho = op.rho
    w = 0.0
    if rho > 1.0 - q and op.service > 0.0:
        w = op.service * math.log(rho / (1.0 - q)) / (2.0 * (1.0 - rho))
    return op.s1 + w + residual_q(op, q) + s.ttft_oh_s


def tpot_q(op: OperatingPoint, q: float) -> float:
    """TPOT percentile ``q`` (0-1), seconds: normal approximation of the Binomial count of
    prompt-carrying iterations in a request's decode (share ``f_dec``), within ``[tau0, tau1]``
    (no iteration or every iteration carrying prompts; the clamp also keeps the approximation
    monotone in the share near 1)."""
    spread = (op.tau1 - op.tau0) * math.sqrt(op.f_dec * (1.0 - op.f_dec) / op.n_dec)
    tpot = op.tau_dec + normal_quantile(q) * spread
    return min(max(tpot, op.tau0), max(op.tau1, op.tau_dec))


def e2e_q(s: Setup, op: OperatingPoint, q: float) -> float:
    """E2E percentile ``q`` (0-1), seconds: mean plus the TTFT and decode excesses added in
    quadrature (independent tails); below the median the deficits are added."""
    mean = op.ttft + op.n_dec * op.tau_dec
    d1 = ttft_q(s, op, q) - op.ttft
    d2 = op.n_dec * (tpot_q(op, q) - op.tau_dec)
    if q <= 0.5:
        return mean + min(d1, 0.0) + min(d2, 0.0)
    return mean + math.hypot(max(d1, 0.0), max(d2, 0.0))


def latency_percentiles(s: Setup, op: OperatingPoint) -> LatencyPercentiles:
    """p50/p90/p95/p99 of TTFT, TPOT and E2E (ms) at an operating point."""
    ms = 1e3
    return LatencyPercentiles(
        ttft_p50_ms=ttft_q(s, op, 0.5) * ms,
        ttft_p90_ms=ttft_q(s, op, 0.9) * ms,
        ttft_p95_ms=ttft_q(s, op, 0.95) * ms,
        ttft_p99_ms=ttft_q(s, op, 0.99) * ms,
        tpot_p50_ms=tpot_q(op, 0.5) * ms,
        tpot_p90_ms=tpot_q(op, 0.9) * ms,
        tpot_p95_ms=tpot_q(op, 0.95) * ms,
        tpot_p99_ms=tpot_q(op, 0.99) * ms,
        e2e_p50_ms=e2e_q(s, op, 0.5) * ms,
        e2e_p90_ms=e2e_q(s, op, 0.9) * ms,
        e2e_p95_ms=e2e_q(s, op, 0.95) * ms,
        e2e_p99_ms=e2e_q(s, op, 0.99) * ms,
    )


def solve_increasing(
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
