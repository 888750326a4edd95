"""Capacity under an SLO: the largest Poisson arrival rate one replica sustains with TTFT,
TPOT and E2E at the SLO's percentile within their limits (:func:`max_qps_under_slo`).

Search: latencies grow with the running batch ``B``, so after the zero-load checks (one request
alone; TPOT at batch 1) and the cap (every limit holds at ``B_max``), the largest ``B`` whose
percentiles hold is bracketed by bisection (geometric while the bracket spans three decades),
and its arrival rate ``lambda(B)`` is the capacity. Latencies come from ``queueing``.
Requests/s and ms in the answer. Pure: no I/O.
"""

from __future__ import annotations

import math
from functools import lru_cache

from service.domain.errors import InvalidInput
from service.domain.llm import ModelArch
from service.domain.perfmodel.calibration import (
    Calibration,
    EngineProfile,
    default_calibration,
    resolve_profile,
)
from service.domain.perfmodel.coefficients import Setup, build_setup
from service.domain.perfmodel.correction import with_correction
from service.domain.perfmodel.engine_limits import card_profile
from service.domain.perfmodel.queueing import (
    OperatingPoint,
    e2e_q,
    operating_point,
    tpot_q,
    ttft_q,
)
from service.domain.perfmodel.serving import batch_caps, check_request, fit_reason
from service.domain.perfmodel.values import Capacity, Deployment, RequestShape, Slo

__all__ = ["latency_floor", "max_qps_under_slo", "max_qps_under_slo_with"]


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


def _broken_at(s: Setup, slo: Slo, op: OperatingPoint, q: float) -> str:
    """:func:`_violation` of the metrics at ``op``, computing each percentile only when its
    limit is set and no earlier limit is broken (the same answer, for a fraction of the
    work inside the batch search)."""
    if slo.ttft_ms is not None and ttft_q(s, op, q) * 1e3 > slo.ttft_ms:
        return "ttft"
    if slo.tpot_ms is not None and tpot_q(op, q) * 1e3 > slo.tpot_ms:
        return "tpot"
    if slo.e2e_ms is not None and e2e_q(s, op, q) * 1e3 > slo.e2e_ms:
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


def _zero_load_failure(
    s: Setup, slo: Slo, lone: OperatingPoint, one: OperatingPoint
) -> Capacity | None:
    """A zero capacity with its reason when even a lone request (TTFT, E2E) or batch 1 (TPOT)
    breaks the SLO; ``None`` otherwise."""
    ttft0 = lone.s1 + s.ttft_oh_s
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
    return None


def _bisect_batch(
    s: Setup,
    slo: Slo,
    q: float,
    l_in: int,
    l_out: int,
    lone: OperatingPoint,
    b_max: float,
    bind: str,
) -> Capacity:
    """Largest running batch in ``(0, b_max)`` whose percentiles hold (bisection; latencies
    grow with ``B``), and the first limit broken just above it."""
    lo, hi = 1e-6, b_max
    op_lo = lone
    for _ in range(40):
        mid = math.sqrt(lo * hi) if hi > 1e3 * lo else 0.5 * (lo + hi)
        op = operating_point(s, mid, l_in, l_out)
        broken = _broken_at(s, slo, op, q)
        if broken:
            hi, bind = mid, broken
        else:
            lo, op_lo = mid, op
        if hi - lo <= 1e-3 * hi:
            break
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
    failure = _zero_load_failure(s, slo, lone, one)
    if failure is not None:
        return failure
    top = operating_point(s, b_max, l_in, l_out)
    m_top = _slo_metrics(s, top, q)
    bind = _violation(slo, m_top)
    if not bind:
        return Capacity(
            top.lam, m_top[0] * 1e3, m_top[1] * 1e3, m_top[2] * 1e3, top.b, caps.limited_by
        )
    return _bisect_batch(s, slo, q, l_in, l_out, lone, b_max, bind)


@lru_cache(maxsize=4096)
def max_qps_under_slo(model: ModelArch, dep: Deployment, shape: RequestShape, slo: Slo) -> Capacity:
    """Largest Poisson arrival rate (requests/s) one replica sustains with TTFT, TPOT and E2E at
    ``slo.percentile`` within the limits, and the latencies there (see module docstring).

    The engine runs with its defaults on this card (``engine_limits.card_profile``).
    ``qps == 0`` with a ``reason`` when even zero load fails: "does not fit: ...", "TTFT at zero
    load is X ms > SLO Y ms", "TPOT at batch 1 is X ms > SLO Y ms". ``limited_by`` names the
    binding limit, or the cap (``kv_capacity``, ``engine_batch_cap``, ``token_budget``) when no
    latency limit binds. Memoised.
    """
    check_request(shape, dep)
    cal = default_calibration()
    build = resolve_profile(dep.engine, dep.engine_version).profile
    cal = with_correction(cal, dep, build.constants)
    profile = card_profile(model, dep, build, cal)
    return max_qps_under_slo_with(model, dep, shape, slo, profile, cal)


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
    cal = default_calibration()
    build = resolve_profile(dep.engine, dep.engine_version).profile
    cal = with_correction(cal, dep, build.constants)
    profile = card_profile(model, dep, build, cal)
    s = build_setup(model, dep, profile, cal)
    reason = fit_reason(s, dep, model, shape)
    if reason:
        return Capacity(0.0, 0.0, 0.0, 0.0, 0.0, "does_not_fit", f"does not fit: {reason}")
    l_in, l_out = shape.prompt_tokens, shape.output_tokens
    b = min(FLOOR_BATCH, float(batch_caps(s, l_in, l_out).b_max))
    op = operating_point(s, b, l_in, l_out)
    ttft, tpot, e2e = _slo_metrics(s, op, percentile / 100.0)
    return Capacity(op.lam, ttft * 1e3, tpot * 1e3, e2e * 1e3, op.b, "floor")
