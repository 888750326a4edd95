"""Predict a measured row with the performance model, under the load its benchmark applied.

One prediction per benchmark *run* (:attr:`Row.run_key`): every number a run reports
(throughput, TTFT, TPOT, ITL, E2E at p50 and mean) is read off the same :class:`RunPrediction`.

Loads (see ``_calibration_data``):

* ``peak``: the model's peak-throughput point (``estimate`` with neither ``qps`` nor
  ``concurrency``), times the replicas the row sums over.
* ``concurrency``: ``estimate(concurrency=N)`` (closed loop; means; p50 taken equal to the mean).
* ``rate``: ``estimate(qps=R)``: its percentiles; past capacity the throughput is the capacity
  and latencies are not predicted (NaN: they grow with the length of the run). Where the run's
  request count is known, its throughput is that of the finite run (:func:`rate_point`).
* ``static``: one batch of N started together (``static_batch_point``).
* ``burst``: N identical requests sent at t=0: throughput from the run played out
  (:func:`finite_rate_run` at an unbounded rate), latencies from :func:`burst_point`.

Serving configuration of a row: the build's structural profile
(``calibration.serving_structure`` for serving engines, ``BENCH_PROFILES`` for ``trtllm-bench``,
LMDeploy and NIM), then the defaults the engine derives from the card and model
(``engine_limits.card_profile``: vLLM V1's 1024 / 8192 or 256 / 2048, SGLang's memory
heuristic), then the flags of the row's serving command. The fitted constants are chosen by
:func:`constants_key`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from bench._calibration_data import Row
from bench._finite_run import finite_rate_run
from service.domain.catalog import GpuSpec
from service.domain.perfmodel.calibration import (
    BENCH_PROFILES,
    Calibration,
    EngineProfile,
    serving_structure,
)

# Physics internals used here (the public API has no burst or static-batch load): one import
# block so a move of these functions touches one place.
from service.domain.perfmodel.coefficients import Setup, build_setup
from service.domain.perfmodel.engine_limits import card_profile
from service.domain.perfmodel.iteration import iteration_time, mean_context
from service.domain.perfmodel.memory import kv_pool_bytes, memory_batch_cap, token_budget
from service.domain.perfmodel.queueing import operating_point
from service.domain.perfmodel.serving import estimate_with
from service.domain.perfmodel.values import Deployment, Engine, Estimate, RequestShape

NAN = float("nan")
FALLBACK_CONSTANTS = "trtllm-1.0"


@dataclass(frozen=True, slots=True)
class RunPrediction:
    """Everything a run reports (NaN where the model cannot say). Tokens/s are output tokens
    over all replicas; req/s likewise; latencies in ms."""

    tokens_per_s: float
    requests_per_s: float
    ttft_mean_ms: float
    ttft_p50_ms: float
    tpot_mean_ms: float
    tpot_p50_ms: float
    e2e_mean_ms: float
    e2e_p50_ms: float
    batch: float

    def value(self, row: Row) -> float:
        """The number ``row`` measured, as predicted."""
        if row.metric == "throughput":
            return self.tokens_per_s
        if row.metric == "requests":
            return self.requests_per_s
        p50 = row.stat == "p50"
        if row.metric == "ttft":
            return self.ttft_p50_ms if p50 else self.ttft_mean_ms
        if row.metric in ("tpot", "itl"):
            return self.tpot_p50_ms if p50 else self.tpot_mean_ms
        return self.e2e_p50_ms if p50 else self.e2e_mean_ms


FAILED = RunPrediction(NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0.0)


def constants_key(row: Row, cal: Calibration) -> str:
    """Fitted constants for a row: its build's, else its engine's pooled fit, else the fitted
    build of the same engine nearest in version (the newer one on a tie; the newest when the
    row states no engine version), else ``FALLBACK_CONSTANTS`` (an engine with no data).

    A NIM container's version numbers the container, not the TensorRT-LLM release inside it
    (NIM 1.8 is no TensorRT-LLM 1.8), so a NIM build without constants of its own gets the
    newest TensorRT-LLM build: what ``engine: trtllm`` plans with."""
    have = cal.engine_by_name
    if row.build in BENCH_PROFILES:
        key = BENCH_PROFILES[row.build].constants
        if key in have:
            return key
    elif row.build in have:
        return row.build
    if row.engine in have:
        return row.engine
    same = sorted((k for k in have if k.startswith(row.engine + "-")), key=_version_key)
    if same:
        version = "" if row.build.startswith("nim") else row.version
        if not version:
            return same[-1]
        return min(reversed(same), key=lambda k: _version_distance(k, version))
    return FALLBACK_CONSTANTS if FALLBACK_CONSTANTS in have else sorted(have)[-1]


def _version_distance(key: str, version: str) -> float:
    """Distance between a fit key's version and ``version`` (minor releases as hundredths)."""

    def num(v: tuple[int, ...]) -> float:
        return v[0] + (v[1] / 100.0 if len(v) > 1 else 0.0) if v else 0.0

    return abs(num(_version_key(key)) - num(_version_key("x-" + version)))


def _version_key(key: str) -> tuple[int, ...]:
    tail = key.rsplit("-", 1)[-1]
    return tuple(int(p) for p in tail.split(".") if p.isdigit())


def row_profile(row: Row, dep: Deployment, constants: str, cal: Calibration) -> EngineProfile:
    """The engine configuration the row's benchmark ran, with ``constants`` as its fit key:
    the harness profile (``trtllm-bench``, LMDeploy, NIM) or the serving engine's documented
    structure with the defaults it derives from the card (``engine_limits.card_profile``), then
    the serving command's explicit flags."""
    if (row.load == "peak" and row.build in BENCH_PROFILES) or row.build.startswith(
        ("lmdeploy", "nim")
    ):
        base = BENCH_PROFILES[row.build if row.build in BENCH_PROFILES else "nim-1.8"]
        return apply_flags(replace(base, constants=constants, derate=1.0), row)
    prof = replace(serving_structure(row.engine, row.version), constants=constants, derate=1.0)
    return apply_flags(card_profile(row.model, dep, prof, cal), row)


def apply_flags(prof: EngineProfile, row: Row) -> EngineProfile:
    """Overlay the serving command's explicit settings on a profile."""
    f = row.serve
    if f.max_batch is not None:
        prof = replace(prof, max_batch=f.max_batch)
    if f.max_num_tokens is not None:
        prof = replace(prof, max_num_tokens=f.max_num_tokens)
    if f.kv_fraction is not None:
        prof = replace(prof, kv_fraction=f.kv_fraction)
    if f.chunked_prefill is not None:
        prof = replace(prof, chunked_prefill=f.chunked_prefill)
    return prof


def measured_gpu(row: Row, gpus: Mapping[str, GpuSpec]) -> GpuSpec:
    """The card as the source ran it.

    TRT-LLM's A100-PCIe-80GB system is taken WITHOUT NVLink bridges: its TP2 throughput is
    30-45 % below the A100-SXM4's at 5 % less bandwidth (e.g. Mixtral-8x7B 128/128: 3,810 vs
    5,915 tok/s), which bridged pairs (600 GB/s) would not lose; so every TP group all-reduces
    over PCIe Gen4.
    """
    gpu = gpus[row.gpu_id]
    if row.gpu_label == "A100-PCIe-80GB":
        return replace(gpu, interconnect_bandwidth_gbps=0.0, nvlink_domain=1)
    return gpu


def deployment(row: Row, gpu: GpuSpec) -> Deployment:
    """The replica a row measured (PCIe all-reduce allowed where the source ran it)."""
    engine: Engine = row.engine if row.engine in ("vllm", "sglang", "tgi") else "trtllm"  # type: ignore[assignment]
    return Deployment(
        gpu=gpu,
        tensor_parallel=row.tp,
        precision=row.precision,
        kv_precision=row.kv_precision,
        engine=engine,
        allow_pcie_tensor_parallel=True,
    )


ProfileFor = Callable[[Row, Deployment, Calibration], EngineProfile]


def default_profile_for(row: Row, dep: Deployment, cal: Calibration) -> EngineProfile:
    """Profile of a row under a calibration: its build's structure with the fitted key."""
    return row_profile(row, dep, constants_key(row, cal), cal)


def predict_run(
    row: Row,
    gpus: Mapping[str, GpuSpec],
    cal: Calibration,
    profile_for: ProfileFor = default_profile_for,
    finite_factor: float | None = None,
) -> RunPrediction:
    """Prediction of the run ``row`` belongs to (``FAILED`` when the model cannot run it).
    ``finite_factor``: see :func:`rate_point`."""
    dep = deployment(row, measured_gpu(row, gpus))
    profile = profile_for(row, dep, cal)
    shape = RequestShape(row.input_len, row.output_len)
    reps = row.replicas
    if row.load == "peak":
        est = estimate_with(row.model, dep, shape, profile, cal)
        if not est.fits:
            return FAILED
        return RunPrediction(
            est.output_tokens_per_s * reps, est.requests_per_s * reps, est.ttft_ms, est.ttft_ms,
            est.tpot_ms, est.tpot_ms, est.e2e_ms, est.e2e_ms, float(est.concurrency),
        )  # fmt: skip
    if row.load == "concurrency":
        est = estimate_with(row.model, dep, shape, profile, cal, concurrency=int(row.load_n))
        if not est.fits:
            return FAILED
        return RunPrediction(
            est.output_tokens_per_s * reps, est.requests_per_s * reps, est.ttft_ms, est.ttft_ms,
            est.tpot_ms, est.tpot_ms, est.e2e_ms, est.e2e_ms, float(est.concurrency),
        )  # fmt: skip
    if row.load == "rate":
        return rate_point(row, dep, shape, profile, cal, finite_factor)
    setup = build_setup(row.model, dep, profile, cal)
    if setup.reject or kv_pool_bytes(setup, row.input_len, max(row.output_len, 2)) <= 0:
        return FAILED
    if row.load == "static":
        return static_batch_point(setup, row.input_len, row.output_len, int(row.load_n))
    peak = estimate_with(row.model, dep, shape, profile, cal)
    if not peak.fits:
        return FAILED
    n = int(row.load_n)
    point = burst_point(setup, peak, row.input_len, row.output_len, n, reps)
    if _plays_out(row):
        if finite_factor is None:
            run = finite_rate_run(
                setup, max(peak.max_concurrency, 1), row.input_len, row.output_len, n, math.inf
            )
            finite_factor = run.requests_per_s * reps / point.requests_per_s
        point = replace(
            point,
            tokens_per_s=point.tokens_per_s * finite_factor,
            requests_per_s=point.requests_per_s * finite_factor,
        )
    return point


def _plays_out(row: Row) -> bool:
    """Whether ``row``'s throughput is read off a played-out run: a rate run of a known number
    of requests, or a burst (all sent at once, i.e. at an unbounded rate), whose throughput is
    scored (their latencies, where scored, are the steady state's, or the burst's closed form)."""
    return (row.load == "burst" or (row.load == "rate" and row.requests > 0)) and row.metric in (
        "throughput",
        "requests",
    )


def rate_point(
    row: Row,
    dep: Deployment,
    shape: RequestShape,
    profile: EngineProfile,
    cal: Calibration,
    finite_factor: float | None = None,
) -> RunPrediction:
    """A run at ``row.load_n`` req/s over all replicas: the steady state's percentiles (past
    capacity the throughput is the capacity and latencies are not predicted: they grow with the
    length of the run). Where the run's request count is known (:func:`_plays_out`), its
    throughput is the finite run's (:func:`finite_rate_run`: the batch fills and drains at the
    ends), or the steady throughput times ``finite_factor`` when given (the ratio of the two at
    other constants: a fit holds it fixed rather than play the run out at every step)."""
    reps = row.replicas
    est = estimate_with(row.model, dep, shape, profile, cal, qps=row.load_n / reps)
    if not est.fits:
        return FAILED
    tput, rps = est.output_tokens_per_s * reps, est.requests_per_s * reps
    if _plays_out(row):
        if finite_factor is None:
            run = finite_rate_run(
                build_setup(row.model, dep, profile, cal), max(est.max_concurrency, 1),
                row.input_len, row.output_len, math.ceil(row.requests / reps), row.load_n / reps,
            )  # fmt: skip
            finite_factor = run.requests_per_s * reps / rps if rps > 0 else 1.0
        tput, rps = tput * finite_factor, rps * finite_factor
    if est.reason or est.latency is None:  # overloaded: capacity, latency unbounded
        return RunPrediction(tput, rps, NAN, NAN, NAN, NAN, NAN, NAN, float(est.concurrency))
    lat = est.latency
    return RunPrediction(
        tput, rps, est.ttft_ms, lat.ttft_p50_ms, est.tpot_ms, lat.tpot_p50_ms, est.e2e_ms,
        lat.e2e_p50_ms, float(est.concurrency),
    )  # fmt: skip


def finite_factors(
    rows: Sequence[Row], gpus: Mapping[str, GpuSpec], cal: Calibration
) -> dict[tuple[object, ...], float]:
    """Per run read as a finite run: its throughput over the steady state's at ``cal`` (each
    row's default serving profile, as the fit predicts it)."""
    out: dict[tuple[object, ...], float] = {}
    for r in rows:
        if not _plays_out(r) or r.run_key in out:
            continue
        try:
            played = predict_run(r, gpus, cal)
            steady = predict_run(r, gpus, cal, finite_factor=1.0)
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
        if steady.requests_per_s > 0 and math.isfinite(played.requests_per_s):
            out[r.run_key] = played.requests_per_s / steady.requests_per_s
    return out


def static_batch_point(s: Setup, l_in: int, l_out: int, clients: int) -> RunPrediction:
    """A closed loop of ``clients`` identical requests that start together (LMDeploy
    ``profile_generation``, vLLM ``benchmark_latency``).

    When all fit, they run in synchronised waves: one batched prefill of ``clients x L_in``
    tokens (TTFT), then ``L_out - 1`` decode steps (TPOT). When the KV pool holds fewer, ``B``
    run desynchronised at the steady state and the rest wait for admission (TTFT from Little's
    law).
    """
    lo = max(l_out, 2)
    n_dec = lo - 1
    b_mem = memory_batch_cap(s, l_in, lo)
    c = mean_context(l_in, lo)
    ms = 1e3
    if clients <= b_mem:
        b = float(clients)
        prefill = iteration_time(s, 0.0, b * l_in, 0.0, l_in)
        step = iteration_time(s, b, 0.0, c, l_in)
        ttft = prefill + s.ttft_oh_s
        tput = b * lo / (prefill + n_dec * step)
        e2e = (ttft + n_dec * step) * ms
        return RunPrediction(
            tput, tput / lo, ttft * ms, ttft * ms, step * ms, step * ms, e2e, e2e, b
        )
    b = float(max(b_mem, 1))
    op = operating_point(s, b, l_in, l_out)
    ttft = max(clients / op.lam - n_dec * op.tau_dec, op.ttft)
    e2e = (ttft + n_dec * op.tau_dec) * ms
    return RunPrediction(
        op.lam * lo, op.lam, ttft * ms, ttft * ms, op.tau_dec * ms, op.tau0 * ms, e2e, e2e, b
    )


def burst_point(
    s: Setup, peak: Estimate, l_in: int, l_out: int, n: int, replicas: int = 1
) -> RunPrediction:
    """``n`` identical requests sent at t=0 (``vllm bench serve`` without a request rate).

    ``B = min(n, B_max)`` requests are admitted at once and their prompts prefilled in
    token-budget chunks, ``T_fill = k tau(B/2, budget)`` with ``k = ceil(B L_in / budget)``
    iterations (the sequences already prefilled decode meanwhile). The rest wait; once the
    first admissions finish the engine runs at its peak steady state (``lambda``, ``tau`` from
    the peak estimate) and admits one request per completion. When all fit, the run lasts
    ``D = T_fill + (L_out - 1) tau(B)``; else the last request is admitted at
    ``T_fill + (n - B) / lambda``, has its first token ``s1`` later, and decodes with no prompt
    left to prefill: ``D = T_fill + (n - B) / lambda + s1 + (L_out - 1) tau(B / 2)``
    (decode-only iterations, the batch draining from ``B`` to one). The throughput a burst row
    is scored against is its play-out's (:func:`predict_run`); ``D`` is the closed form a fit
    holds the ratio to, within 7% of the play-out for prompts 20-40x their outputs (bursts of
    decode-heavy requests stay in synchronised waves, about 20% longer than ``D``).

    Request ``i`` (in admission order) gets its first token at ``(i + 1) / B T_fill`` (first
    wave) or ``T_fill + (i - B + 1) / lambda + s1`` (later; ``s1`` the unqueued first-token
    time of the peak point), plus the engine's request overhead. First-wave requests also spend
    the rest of the fill decoding in chunk-carrying iterations: their TPOT is
    ``tau(B) + (T_fill - k tau(B)) / (2 (L_out - 1))``; later ones run at the steady ``tau``.
    Means and medians follow over ``i``; the requests are identical, so ITL is read as TPOT.
    """
    lo = max(l_out, 2)
    n_dec = lo - 1
    b_max = max(peak.max_concurrency, 1)
    b = float(min(n, b_max))
    c = mean_context(l_in, lo)
    budget = token_budget(s, l_in, lo)
    if not s.chunked:
        budget = max(budget, float(l_in))
    tokens = b * l_in
    k = max(1, math.ceil(tokens / budget))
    t_fill = k * iteration_time(s, b / 2.0, tokens / k, c, l_in)
    tau_b = iteration_time(s, b, 0.0, c, l_in)
    lam = peak.requests_per_s
    tau_ss = peak.tpot_ms / 1e3
    s1 = max(peak.ttft_ms / 1e3 - s.ttft_oh_s, 0.0)
    extra = max(t_fill - k * tau_b, 0.0) / (2.0 * n_dec)
    rest = max(n - b, 0.0)
    if rest > 0:
        tau_tail = iteration_time(s, b / 2.0, 0.0, c, l_in)
        duration = t_fill + rest / lam + s1 + n_dec * tau_tail
    else:
        duration = t_fill + n_dec * tau_b
    oh = s.ttft_oh_s

    def ttft_at(i: float) -> float:
        if i < b:
            return (i + 1.0) / b * t_fill + oh
        return t_fill + (i - b + 1.0) / lam + s1 + oh

    first_mean = t_fill * (b + 1.0) / (2.0 * b)
    later_mean = t_fill + (rest + 1.0) / (2.0 * lam) + s1 if rest > 0 else 0.0
    ttft_mean = (b * first_mean + rest * later_mean) / n + oh
    ttft_p50 = ttft_at((n - 1) / 2.0)
    tpot_first = tau_b + extra
    tpot_mean = (b * tpot_first + rest * tau_ss) / n
    tpot_p50 = tpot_first if (n - 1) / 2.0 < b else tau_ss
    ms = 1e3
    return RunPrediction(
        n * l_out / duration * replicas, n / duration * replicas, ttft_mean * ms, ttft_p50 * ms,
        tpot_mean * ms, tpot_p50 * ms, (ttft_mean + n_dec * tpot_mean) * ms,
        (ttft_p50 + n_dec * tpot_p50) * ms, b,
    )  # fmt: skip


def predict_rows(
    rows: Sequence[Row],
    gpus: Mapping[str, GpuSpec],
    cal: Calibration,
    profile_for: ProfileFor = default_profile_for,
    factors: Mapping[tuple[object, ...], float] | None = None,
) -> list[float]:
    """Predicted value of every row, in order (one model evaluation per run). ``factors``
    (:func:`finite_factors`): finite-run ratios to use instead of playing the runs out."""
    runs: dict[tuple[object, ...], RunPrediction] = {}
    out: list[float] = []
    for r in rows:
        key = r.run_key
        pred = runs.get(key)
        if pred is None:
            try:
                factor = factors.get(key) if factors is not None else None
                pred = predict_run(r, gpus, cal, profile_for, factor)
            except (ValueError, ZeroDivisionError, OverflowError):
                pred = FAILED
            runs[key] = pred
        out.append(pred.value(r))
    return out
