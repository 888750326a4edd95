"""Latency percentiles of many replicas, each under its own Poisson arrival rate, solved in
lockstep (``lockstep``): for every (deployment, shape, rate) the running batch ``B`` with
``lambda(B) = rate`` (the Illinois steps of ``queueing.solve_increasing``, lane by lane), then
TTFT and TPOT at one percentile there. The numbers of :func:`~service.domain.perfmodel.estimate`
with ``qps``, for the fleet lines of a plan at once. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from service.domain.errors import InvalidInput
from service.domain.llm import ModelArch
from service.domain.perfmodel import lockstep
from service.domain.perfmodel.capacity import engine_setup
from service.domain.perfmodel.coefficients import Setup
from service.domain.perfmodel.queueing import normal_quantile
from service.domain.perfmodel.serving import batch_caps, check_request, fit_reason
from service.domain.perfmodel.values import Deployment, RequestShape

__all__ = ["percentiles_at_rates"]

INF = float("inf")

Array = npt.NDArray[np.float64]


def percentiles_at_rates(
    model: ModelArch,
    loads: Sequence[tuple[Deployment, RequestShape, float]],
    percentile: float,
) -> list[tuple[float, float]]:
    """(TTFT, TPOT) in ms at ``percentile`` (0-100) of one replica of each deployment serving
    requests of its shape at its rate (requests/s): infinite above the replica's capacity,
    zeros when the model does not fit (as :func:`estimate` reports both)."""
    out: list[tuple[float, float]] = [(0.0, 0.0)] * len(loads)
    setups: list[Setup] = []
    shapes: list[tuple[int, int]] = []
    rates: list[float] = []
    where: list[int] = []
    made: dict[Deployment, Setup] = {}
    for k, (dep, shape, rate) in enumerate(loads):
        check_request(shape, dep)
        if not (rate > 0.0 and math.isfinite(rate)):
            raise InvalidInput(f"qps must be a positive number, got {rate}", field="qps")
        s = made.get(dep)
        if s is None:
            s = made[dep] = engine_setup(model, dep)
        if fit_reason(s, dep, model, shape):
            continue
        setups.append(s)
        shapes.append((shape.prompt_tokens, shape.output_tokens))
        rates.append(rate)
        where.append(k)
    if not where:
        return out
    ln = lockstep.lanes(setups, shapes)
    b_max = np.array(
        [float(batch_caps(s, i, o).b_max) for s, (i, o) in zip(setups, shapes, strict=True)]
    )
    target = np.array(rates)
    q = percentile / 100.0
    pt = lockstep.points(ln, _solve_rates(ln, target, b_max))
    ttft, tpot, _ = lockstep.quantiles(ln, pt, q, normal_quantile(q))
    over = target > lockstep.points(ln, b_max).lam * (1.0 + 1e-9)
    ttft = np.where(over, INF, ttft * 1e3)
    tpot = np.where(over, INF, tpot * 1e3)
    for k, a, b in zip(where, ttft.tolist(), tpot.tolist(), strict=True):
        out[k] = (a, b)
    return out


def _solve_rates(ln: lockstep.Lanes, target: Array, hi: Array) -> Array:
    """Per lane, the running batch in ``[1e-6, hi]`` whose arrival rate is ``target``:
    ``queueing.solve_increasing`` on ``lambda(B)``, the same steps for every lane."""
    lo = np.full(hi.shape, 1e-6)
    hi = hi.copy()
    flo = lockstep.points(ln, lo).lam - target
    fhi = lockstep.points(ln, hi).lam - target
    x = np.where(flo >= 0.0, lo, hi)
    active = (flo < 0.0) & (fhi > 0.0)
    side = np.zeros(hi.shape)
    tol = 1e-7 * np.maximum(np.abs(target), 1e-12)
    for _ in range(48):
        if not active.any():
            break
        step = np.where(active, (lo * fhi - hi * flo) / np.where(active, fhi - flo, 1.0), x)
        fx = lockstep.points(ln, step).lam - target
        x = np.where(active, step, x)
        done = active & ((np.abs(fx) <= tol) | (hi - lo <= 1e-9 * hi))
        active &= ~done
        up = active & (fx > 0.0)
        down = active & ~(fx > 0.0)
        hi, fhi, flo = (
            np.where(up, step, hi),
            np.where(up, fx, np.where(down & (side == 1.0), fhi * 0.5, fhi)),
            np.where(down, fx, np.where(up & (side == -1.0), flo * 0.5, flo)),
        )
        lo = np.where(down, step, lo)
        side = np.where(up, -1.0, np.where(down, 1.0, side))
    return x
