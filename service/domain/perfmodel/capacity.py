"""Capacity under an SLO: the largest Poisson arrival rate one replica sustains with TTFT,
TPOT and E2E at the SLO's percentile within their limits (:func:`max_qps_under_slo`).

Search: latencies grow with the running batch ``B``, so after the zero-load checks (one request
alone; TPOT at batch 1) and the cap (every limit holds at ``B_max``), the largest ``B`` whose
percentiles hold is bracketed until the bracket is 0.1% wide (:func:`next_batch`), and its
arrival rate ``lambda(B)`` is the capacity. Latencies come from ``queueing``.
Requests/s and ms in the answer. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from service.domain.errors import InvalidInput
from service.domain.llm import ModelArch
from service.domain.perfmodel import lockstep
from service.domain.perfmodel.calibration import (
    Calibration,
    EngineProfile,
    default_calibration,
    resolve_profile,
)
from service.domain.perfmodel.coefficients import Setup, build_setup
from service.domain.perfmodel.correction import with_correction
from service.domain.perfmodel.engine_limits import card_profile
from service.domain.perfmodel.memory import beside_decode_share
from service.domain.perfmodel.queueing import (
    OperatingPoint,
    e2e_q,
    effective_output,
    normal_quantile,
    operating_point,
    tpot_q,
    ttft_q,
)
from service.domain.perfmodel.serving import batch_caps, check_request, fit_reason
from service.domain.perfmodel.values import Capacity, Deployment, RequestShape, Slo

__all__ = [
    "engine_setup",
    "latency_floor",
    "max_qps_under_slo",
    "max_qps_under_slo_many",
    "max_qps_under_slo_with",
]


def _slo_metrics(s: Setup, op: OperatingPoint, q: float) -> tuple[float, float, float]:
    """(TTFT, TPOT, E2E) at percentile ``q``, seconds."""
    return ttft_q(s, op, q), tpot_q(op, q), e2e_q(s, op, q)


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


def _check_slo(slo: Slo) -> None:
    """Reject a percentile outside 50..99.9 or a non-positive limit (``InvalidInput``)."""
    if not 50.0 <= slo.percentile <= 99.9:
        raise InvalidInput(
            f"percentile must be within 50..99.9, got {slo.percentile}", field="slo.percentile"
        )
    for name, v in (("ttft_ms", slo.ttft_ms), ("tpot_ms", slo.tpot_ms), ("e2e_ms", slo.e2e_ms)):
        if v is not None and not v > 0.0:
            raise InvalidInput(f"slo.{name} must be positive, got {v}", field=f"slo.{name}")


def _zero_load_failure(slo: Slo, ttft0: float, tau0: float, n_dec: int) -> Capacity | None:
    """A zero capacity with its reason when even a lone request (TTFT ``ttft0``, E2E) or batch
    1 (TPOT ``tau0``; ``n_dec`` decode iterations) breaks the SLO; ``None`` otherwise.
    Seconds in, ms in the answer."""
    if slo.ttft_ms is not None and ttft0 * 1e3 > slo.ttft_ms:
        return Capacity(
            0.0, ttft0 * 1e3, tau0 * 1e3, (ttft0 + n_dec * tau0) * 1e3, 0.0, "ttft",
            f"TTFT at zero load is {ttft0 * 1e3:.1f} ms > SLO {slo.ttft_ms:g} ms",
        )  # fmt: skip
    if slo.tpot_ms is not None and tau0 * 1e3 > slo.tpot_ms:
        return Capacity(
            0.0, ttft0 * 1e3, tau0 * 1e3, (ttft0 + n_dec * tau0) * 1e3, 0.0, "tpot",
            f"TPOT at batch 1 is {tau0 * 1e3:.1f} ms > SLO {slo.tpot_ms:g} ms",
        )  # fmt: skip
    e2e0 = ttft0 + n_dec * tau0
    if slo.e2e_ms is not None and e2e0 * 1e3 > slo.e2e_ms:
        return Capacity(
            0.0, ttft0 * 1e3, tau0 * 1e3, e2e0 * 1e3, 0.0, "e2e",
            f"E2E latency at zero load is {e2e0 * 1e3:.1f} ms > SLO {slo.e2e_ms:g} ms",
        )  # fmt: skip
    return None


TOLERANCE = 1e-3
"""A search stops once its bracket ``(lo, hi)`` satisfies ``hi - lo <= TOLERANCE * hi``: the
capacity is at most 0.1% below the exact one."""

MAX_STEPS = 60
"""Steps a search may take at most (it needs far fewer: see :func:`next_batch`)."""

SAFEGUARD_STEPS = 5
"""A search bisects when its bracket is wider than half its width this many steps ago."""

_MARGIN = 0.45 * TOLERANCE  # a probe keeps this share of ``hi`` from either end
_TINY = 1e-12  # the excess of a held (broken) end is at most -_TINY (at least _TINY)


def excess(m: tuple[float, float, float], slo: Slo) -> float:
    """How far the metrics ``m`` (TTFT, TPOT, E2E; seconds) are over the SLO: the largest
    ``log(metric / limit)`` over the limits set; positive exactly when one is broken (up to
    the last bit of the division)."""
    worst = -math.inf
    for value, limit in zip(m, (slo.ttft_ms, slo.tpot_ms, slo.e2e_ms), strict=True):
        if limit is not None:
            ratio = value * 1e3 / limit
            worst = max(worst, math.log(ratio) if ratio > 0.0 else -math.inf)
    return worst


def next_batch(lo: float, hi: float, f_lo: float, f_hi: float, width_then: float) -> float:
    """The next running batch to try inside the bracket ``(lo, hi)``: regula falsi on the
    excess (:func:`excess`), ``f_lo < 0 < f_hi`` the excesses at the ends (the Illinois
    variant halves the one at an end that stays put twice running), kept
    :data:`_MARGIN` ``* hi`` from either end so that a good estimate closes the bracket on the
    next step; the middle when the bracket is wider than half its width
    :data:`SAFEGUARD_STEPS` steps ago (``width_then``), which bounds the steps of a search
    whose excess jumps (a prompt's chunk count steps with the batch).

    Measured on the lanes of cold 4-bucket plans on the real catalog (``bench/plan_latency.py``
    requests): 7 steps per search at the median and at most 10 per plan, where bisection from
    ``(1e-6, B_max)`` takes 15 and 18-20."""
    width = hi - lo
    if width > 0.5 * width_then:
        return 0.5 * (lo + hi)
    b = lo + width * (f_lo / (f_lo - f_hi))
    margin = _MARGIN * hi
    return min(max(b, lo + margin), hi - margin)


def _narrow_batch(
    s: Setup,
    slo: Slo,
    q: float,
    l_in: int,
    l_out: int,
    lone: OperatingPoint,
    b_max: float,
    bind: str,
    f_top: float,
) -> Capacity:
    """Largest running batch in ``(0, b_max)`` whose percentiles hold (latencies grow with
    ``B``; ``f_top`` the excess at ``b_max``), and the first limit broken just above it."""
    lo, hi = lone.b, b_max
    op_lo = lone
    f_lo = min(excess(_slo_metrics(s, lone, q), slo), -_TINY)
    f_hi = max(f_top, _TINY)
    moved = ""  # the end the last step moved
    widths = [math.inf] * SAFEGUARD_STEPS
    share = beside_decode_share(s, l_in, lone.n_dec + 1)
    for step in range(MAX_STEPS):
        if hi - lo <= TOLERANCE * hi:
            break
        mid = next_batch(lo, hi, f_lo, f_hi, widths[step % SAFEGUARD_STEPS])
        widths[step % SAFEGUARD_STEPS] = hi - lo
        op = operating_point(s, mid, l_in, l_out, share)
        m = _slo_metrics(s, op, q)
        broken = _violation(slo, m)
        f = excess(m, slo)
        if broken:
            hi, bind, f_hi = mid, broken, max(f, _TINY)
            f_lo = 0.5 * f_lo if moved == "hi" else f_lo
            moved = "hi"
        else:
            lo, op_lo, f_lo = mid, op, min(f, -_TINY)
            f_hi = 0.5 * f_hi if moved == "lo" else f_hi
            moved = "lo"
    m = _slo_metrics(s, op_lo, q)
    return Capacity(op_lo.lam, m[0] * 1e3, m[1] * 1e3, m[2] * 1e3, op_lo.b, bind)


def max_qps_under_slo_with(
    model: ModelArch,
    dep: Deployment,
    shape: RequestShape,
    slo: Slo,
    profile: EngineProfile,
    cal: Calibration,
) -> Capacity:
    """:func:`max_qps_under_slo` with an explicit engine profile and calibration."""
    check_request(shape, dep)
    _check_slo(slo)
    s = build_setup(model, dep, profile, cal)
    reason = fit_reason(s, dep, model, shape)
    if reason:
        return Capacity(0.0, 0.0, 0.0, 0.0, 0.0, "does_not_fit", f"does not fit: {reason}")
    l_in, l_out = shape.prompt_tokens, shape.output_tokens
    q = slo.percentile / 100.0
    caps = batch_caps(s, l_in, l_out)
    b_max = float(caps.b_max)
    # zero load: one request alone
    lone = operating_point(s, 1e-6, l_in, l_out)
    one = operating_point(s, min(1.0, b_max), l_in, l_out)
    failure = _zero_load_failure(slo, lone.s1 + s.ttft_oh_s, one.tau0, one.n_dec)
    if failure is not None:
        return failure
    top = operating_point(s, b_max, l_in, l_out)
    m_top = _slo_metrics(s, top, q)
    bind = _violation(slo, m_top)
    if not bind:
        return Capacity(
            top.lam, m_top[0] * 1e3, m_top[1] * 1e3, m_top[2] * 1e3, top.b, caps.limited_by
        )
    return _narrow_batch(s, slo, q, l_in, l_out, lone, b_max, bind, excess(m_top, slo))


MEMO_SIZE = 8192
"""Capacities kept (both entry points share them; emptied when full)."""

_MEMO: dict[tuple[ModelArch, Deployment, RequestShape, Slo], Capacity] = {}


def _remember(key: tuple[ModelArch, Deployment, RequestShape, Slo], cap: Capacity) -> None:
    if len(_MEMO) >= MEMO_SIZE:
        _MEMO.clear()
    _MEMO[key] = cap


def engine_setup(model: ModelArch, dep: Deployment) -> Setup:
    """The setup of ``dep`` with its engine's defaults on this card and the default
    calibration (with the deployment's correction)."""
    cal = default_calibration()
    build = resolve_profile(dep.engine, dep.engine_version).profile
    cal = with_correction(cal, dep, build.constants)
    profile = card_profile(model, dep, build, cal)
    return build_setup(model, dep, profile, cal)


def max_qps_under_slo(model: ModelArch, dep: Deployment, shape: RequestShape, slo: Slo) -> Capacity:
    """Largest Poisson arrival rate (requests/s) one replica sustains with TTFT, TPOT and E2E at
    ``slo.percentile`` within the limits, and the latencies there (see module docstring).

    The engine runs with its defaults on this card (``engine_limits.card_profile``).
    ``qps == 0`` with a ``reason`` when even zero load fails: "does not fit: ...", "TTFT at zero
    load is X ms > SLO Y ms", "TPOT at batch 1 is X ms > SLO Y ms". ``limited_by`` names the
    binding limit, or the cap (``kv_capacity``, ``engine_batch_cap``, ``token_budget``) when no
    latency limit binds. Memoised (with :func:`max_qps_under_slo_many`).
    """
    key = (model, dep, shape, slo)
    hit = _MEMO.get(key)
    if hit is not None:
        return hit
    check_request(shape, dep)
    cal = default_calibration()
    build = resolve_profile(dep.engine, dep.engine_version).profile
    cal = with_correction(cal, dep, build.constants)
    profile = card_profile(model, dep, build, cal)
    cap = max_qps_under_slo_with(model, dep, shape, slo, profile, cal)
    _remember(key, cap)
    return cap


def max_qps_under_slo_many(
    model: ModelArch, deps: Sequence[Deployment], shapes: Sequence[RequestShape], slo: Slo
) -> list[tuple[Capacity, ...]]:
    """:func:`max_qps_under_slo` of every deployment (rows) for every shape (columns), the
    searches not already memoised advancing in lockstep on arrays (``lockstep``): the same
    zero-load checks, cap and bisection per (deployment, shape), in one pass per step for all.
    Same answers as one call each, to the last bit of a library ``log``; memoised alike."""
    _check_slo(slo)
    found: dict[tuple[int, int], Capacity] = {}
    todo: list[tuple[int, int, Setup]] = []
    for i, dep in enumerate(deps):
        s: Setup | None = None
        for j, shape in enumerate(shapes):
            hit = _MEMO.get((model, dep, shape, slo))
            if hit is not None:
                found[i, j] = hit
                continue
            check_request(shape, dep)
            if s is None:
                s = engine_setup(model, dep)
            reason = fit_reason(s, dep, model, shape)
            if reason:
                found[i, j] = Capacity(
                    0.0, 0.0, 0.0, 0.0, 0.0, "does_not_fit", f"does not fit: {reason}"
                )
                _remember((model, dep, shape, slo), found[i, j])
            else:
                todo.append((i, j, s))
    if todo:
        searched = _search_lanes(
            [s for _, _, s in todo],
            [(shapes[j].prompt_tokens, shapes[j].output_tokens) for _, j, _ in todo],
            slo,
        )
        for (i, j, _), cap in zip(todo, searched, strict=True):
            found[i, j] = cap
            _remember((model, deps[i], shapes[j], slo), cap)
    return [tuple(found[i, j] for j in range(len(shapes))) for i in range(len(deps))]


_LIMITS = ("", "ttft", "tpot", "e2e")


def _search_lanes(
    setups: Sequence[Setup], shapes: Sequence[tuple[int, int]], slo: Slo
) -> list[Capacity]:
    """:func:`max_qps_under_slo_with`'s search after the fit check, for every lane at once."""
    q = slo.percentile / 100.0
    z = normal_quantile(q)
    limits = (slo.ttft_ms, slo.tpot_ms, slo.e2e_ms)
    caps = [batch_caps(s, l_in, l_out) for s, (l_in, l_out) in zip(setups, shapes, strict=True)]
    b_max = np.array([float(c.b_max) for c in caps])
    ln = lockstep.lanes(setups, shapes)
    lone = lockstep.points(ln, np.full(len(caps), 1e-6))
    one = lockstep.points(ln, np.minimum(1.0, b_max))
    ttft0 = (lone.s1 + ln.ttft_oh).tolist()
    tau0 = one.tau0.tolist()
    top = lockstep.points(ln, b_max)
    m_top = lockstep.quantiles(ln, top, q, z)
    code_top = lockstep.broken_codes(m_top, limits)
    out: list[Capacity | None] = [None] * len(caps)
    search: list[int] = []
    top_cap = _capacities(top, m_top, [c.limited_by for c in caps])
    for k, code in enumerate(code_top.tolist()):
        failure = _zero_load_failure(slo, ttft0[k], tau0[k], effective_output(shapes[k][1]) - 1)
        if failure is not None:
            out[k] = failure
        elif code == 0:
            out[k] = top_cap[k]
        else:
            search.append(k)
    if search:
        idx = np.array(search)
        sub = lockstep.take(ln, idx)
        f_lone = _excess_lanes(lockstep.quantiles(ln, lone, q, z), limits)[idx]
        f_top = _excess_lanes(m_top, limits)[idx]
        found = _narrow_lanes(sub, b_max[idx], code_top[idx], q, z, limits, f_lone, f_top)
        for k, cap in zip(search, found, strict=True):
            out[k] = cap
    return [c for c in out if c is not None]


def _excess_lanes(
    m: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]],
    limits: tuple[float | None, float | None, float | None],
) -> npt.NDArray[np.float64]:
    """:func:`excess` per lane."""
    worst = np.full(m[0].shape, -np.inf)
    for value, limit in zip(m, limits, strict=True):
        if limit is not None:
            ratio = value * 1e3 / limit
            safe = np.where(ratio > 0.0, ratio, 1.0)
            worst = np.maximum(worst, np.where(ratio > 0.0, np.log(safe), -np.inf))
    return worst


def _narrow_lanes(
    ln: lockstep.Lanes,
    b_max: npt.NDArray[np.float64],
    bind: npt.NDArray[np.int64],
    q: float,
    z: float,
    limits: tuple[float | None, float | None, float | None],
    f_lone: npt.NDArray[np.float64],
    f_top: npt.NDArray[np.float64],
) -> list[Capacity]:
    """:func:`_narrow_batch` for every lane at once (``f_lone``, ``f_top``: the excesses at
    zero load and at ``b_max``): each lane takes the same steps as alone and stops where it
    would."""
    lo = np.full(b_max.shape, 1e-6)
    hi = b_max.copy()
    f_lo = np.minimum(f_lone, -_TINY)
    f_hi = np.maximum(f_top, _TINY)
    moved = np.zeros(b_max.shape, dtype=np.int64)  # 1: lo moved last, 2: hi did
    widths = np.full((SAFEGUARD_STEPS, b_max.size), np.inf)
    active = hi - lo > TOLERANCE * hi
    for step in range(MAX_STEPS):
        if not active.any():
            break
        width = hi - lo
        b = lo + width * (f_lo / (f_lo - f_hi))
        margin = _MARGIN * hi
        b = np.minimum(np.maximum(b, lo + margin), hi - margin)
        mid = np.where(width > 0.5 * widths[step % SAFEGUARD_STEPS], 0.5 * (lo + hi), b)
        widths[step % SAFEGUARD_STEPS] = width
        m = lockstep.quantiles(ln, lockstep.points(ln, mid), q, z)
        code = lockstep.broken_codes(m, limits)
        f = _excess_lanes(m, limits)
        broken = active & (code > 0)
        held = active & (code == 0)
        hi = np.where(broken, mid, hi)
        bind = np.where(broken, code, bind)
        f_lo = np.where(broken & (moved == 2), 0.5 * f_lo, f_lo)
        f_hi = np.where(broken, np.maximum(f, _TINY), f_hi)
        lo = np.where(held, mid, lo)
        f_hi = np.where(held & (moved == 1), 0.5 * f_hi, f_hi)
        f_lo = np.where(held, np.minimum(f, -_TINY), f_lo)
        moved = np.where(held, 1, np.where(broken, 2, moved))
        active &= hi - lo > TOLERANCE * hi
    at = lockstep.points(ln, lo)
    return _capacities(at, lockstep.quantiles(ln, at, q, z), [_LIMITS[c] for c in bind.tolist()])


def _capacities(
    pt: lockstep.Points,
    m: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]],
    limited_by: Sequence[str],
) -> list[Capacity]:
    """One :class:`Capacity` per lane: arrival rate, percentiles (ms) and batch at ``pt``."""
    return [
        Capacity(lam, ttft * 1e3, tpot * 1e3, e2e * 1e3, b, why)
        for lam, ttft, tpot, e2e, b, why in zip(
            pt.lam.tolist(), m[0].tolist(), m[1].tolist(), m[2].tolist(), pt.b.tolist(),
            limited_by, strict=True,
        )
    ]  # fmt: skip


FLOOR_BATCH = 1.0
"""The running batch of a latency floor: one request in flight on average. Below that load a
replica idles most of the time, so a latency limit a replica meets only there is not one a
fleet can be sized against; at it, a replica still carries about one request per end-to-end
latency."""


@lru_cache(maxsize=4096)
def latency_floor(
    model: ModelArch, dep: Deployment, shape: RequestShape, percentile: float
) -> Capacity:
    """The lowest TTFT, TPOT and E2E (ms, at ``percentile``) one replica reaches on requests of
    ``shape`` at a load that still counts: a running batch of :data:`FLOOR_BATCH` (or the
    engine's cap, if lower), with ``qps`` the arrival rate there.

    A latency limit at or above a floor leaves the replica a capacity of at least about that
    rate (latencies grow with the load), so the floor is the smallest value of that limit a
    fleet of this deployment can be sized against. ``limited_by`` is ``"floor"``, or
    ``"does_not_fit"`` with the reason (zeros) when the model does not fit. Memoised.
    """
    check_request(shape, dep)
    _check_slo(Slo(None, None, None, percentile))
    s = engine_setup(model, dep)
    reason = fit_reason(s, dep, model, shape)
    if reason:
        return Capacity(0.0, 0.0, 0.0, 0.0, 0.0, "does_not_fit", f"does not fit: {reason}")
    l_in, l_out = shape.prompt_tokens, shape.output_tokens
    b = min(FLOOR_BATCH, float(batch_caps(s, l_in, l_out).b_max))
    op = operating_point(s, b, l_in, l_out)
    ttft, tpot, e2e = _slo_metrics(s, op, percentile / 100.0)
    return Capacity(op.lam, ttft * 1e3, tpot * 1e3, e2e * 1e3, op.b, "floor")
