"""The load-dependent formulas of ``iteration`` and ``queueing`` on arrays: one entry (a *lane*)
per (deployment, request shape), so that the capacity searches of a whole plan advance together
(``capacity.max_qps_under_slo_many``) instead of one Python call per operating point.

Each function mirrors its scalar counterpart operation for operation (same formulas, same
order of floating-point operations, branches as ``numpy.where``), so a lane's numbers are those
of ``queueing.operating_point`` and the percentile functions at the same running batch, up to
the last bit of a library ``log``/``pow``. Seconds and requests/s, as in ``queueing``.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt

from service.domain.perfmodel.coefficients import Setup
from service.domain.perfmodel.iteration import MIN_CHUNK, mean_context
from service.domain.perfmodel.memory import beside_decode_share, token_budget
from service.domain.perfmodel.queueing import effective_output

__all__ = ["Lanes", "Points", "broken_codes", "lanes", "points", "quantiles", "take"]

Array = npt.NDArray[np.float64]

_NO_ALGORITHM = 1e30  # padding for lanes with fewer all-reduce algorithms (never the fastest)


@dataclass(frozen=True, slots=True)
class Lanes:
    """Per-lane constants: the :class:`~service.domain.perfmodel.coefficients.Setup` fields
    the iteration time reads, and the shape's lengths (``lo`` the effective output, ``n_dec``
    its decode iterations, ``c`` the mean context, ``budget`` the token budget, ``share`` the
    prompt work beside a decode, ``memory.beside_decode_share``)."""

    g_dense: Array
    g_head: Array
    w_dense: Array
    top_k: Array
    n_exp: Array
    w_exp: Array
    g_exp: Array
    window: Array
    kv_ctx: Array
    kv_win: Array
    ad_ctx: Array
    ad_win: Array
    pf: Array
    pf_win: Array
    n_coll: Array
    coll_lat: Array
    coll_tok: Array
    oh_step: Array
    cpu_between: Array
    cpu_beside: Array
    state: Array
    ttft_oh: Array
    chunked: npt.NDArray[np.bool_]
    l_in: Array
    n_dec: Array
    c: Array
    budget: Array
    share: Array


def lanes(setups: Sequence[Setup], shapes: Sequence[tuple[int, int]]) -> Lanes:
    """Lanes for ``setups[i]`` serving prompts/outputs ``shapes[i]`` (tokens). The fields of a
    setup that serves several lanes (one deployment, several shapes) are read once."""
    slot: dict[int, int] = {}
    unique: list[Setup] = []
    for s in setups:
        if id(s) not in slot:
            slot[id(s)] = len(unique)
            unique.append(s)
    which = np.array([slot[id(s)] for s in setups], dtype=np.intp)
    width = max((len(s.coll) for s in unique), default=0) or 1
    lat = np.full((len(unique), width), _NO_ALGORITHM)
    tok = np.zeros((len(unique), width))
    for i, s in enumerate(unique):
        for j, (a, b) in enumerate(s.coll):
            lat[i, j] = a
            tok[i, j] = b
    outs = [effective_output(o) for _, o in shapes]

    def spread(values: list[float]) -> Array:
        return np.array(values)[which]

    def field(name: str) -> Array:
        return spread([float(getattr(s, name)) for s in unique])

    return Lanes(
        g_dense=field("g_dense_tok_s"),
        g_head=field("g_head_tok_s"),
        w_dense=field("w_dense_s"),
        # a dense model as one always-hit expert of zero cost: the routed terms add 0.0
        top_k=spread([float(s.top_k) if s.n_exp else 0.0 for s in unique]),
        n_exp=spread([float(s.n_exp) if s.n_exp else 1.0 for s in unique]),
        w_exp=spread([s.w_exp_s if s.n_exp else 0.0 for s in unique]),
        g_exp=spread([s.g_exp_tok_s if s.n_exp else 0.0 for s in unique]),
        window=field("window"),
        kv_ctx=field("kv_ctx_s"),
        kv_win=field("kv_win_ctx_s"),
        ad_ctx=field("attn_dec_ctx_s"),
        ad_win=field("attn_dec_win_s"),
        pf=field("attn_pf_s"),
        pf_win=field("attn_pf_win_s"),
        n_coll=field("n_coll"),
        coll_lat=lat[which],
        coll_tok=tok[which],
        oh_step=field("oh_step_s"),
        # host seconds per sequence run between GPU steps, or beside them (overlapped)
        cpu_between=spread([s.cpu_seq_s if s.host_serial else 0.0 for s in unique]),
        cpu_beside=spread([0.0 if s.host_serial else s.cpu_seq_s for s in unique]),
        state=field("state_seq_s"),
        ttft_oh=field("ttft_oh_s"),
        chunked=np.array([s.chunked for s in unique], dtype=np.bool_)[which],
        l_in=np.array([float(i) for i, _ in shapes]),
        n_dec=np.array([float(o - 1) for o in outs]),
        c=np.array([mean_context(i, o) for (i, _), o in zip(shapes, outs, strict=True)]),
        budget=np.array(
            [token_budget(s, i, o) for s, (i, _), o in zip(setups, shapes, outs, strict=True)]
        ),
        share=np.array(
            [
                beside_decode_share(s, i, o)
                for s, (i, _), o in zip(setups, shapes, outs, strict=True)
            ]
        ),
    )


def take(ln: Lanes, idx: npt.NDArray[np.intp]) -> Lanes:
    """The lanes at positions ``idx``."""
    return Lanes(*(getattr(ln, f.name)[idx] for f in fields(Lanes)))


def _iteration_time(ln: Lanes, b: Array, p: Array) -> Array:
    """``iteration.iteration_time`` per lane at context ``ln.c`` for prompts of ``ln.l_in``,
    with ``p`` prompt tokens: one row per lane, or several rows (shape ``(k, lanes)``: ``k``
    iterations per lane at the same batch ``b``, in one pass)."""
    tok = b + p
    logits = b + np.where(p > 0.0, p / ln.l_in, 0.0)
    gemm = ln.g_dense * tok + ln.g_head * logits
    t = np.maximum(ln.w_dense, gemm)
    frac = np.where(tok > 0.0, 1.0 - (1.0 - ln.top_k / ln.n_exp) ** tok, 0.0)
    t = t + np.maximum(ln.w_exp * frac, ln.g_exp * tok)
    cw = np.minimum(ln.c, ln.window)
    kv = b * (ln.kv_ctx * ln.c + ln.kv_win * cw)
    ad = b * (ln.ad_ctx * ln.c + ln.ad_win * cw)
    t = t + np.maximum(kv, ad)
    lw = np.minimum(ln.l_in, 2.0 * ln.window)
    t = t + p * (ln.pf * ln.l_in + ln.pf_win * lw)
    best = np.min(ln.coll_lat + ln.coll_tok * tok[..., None], axis=-1)
    t = t + np.where(ln.n_coll > 0.0, ln.n_coll * best, 0.0)
    t = t + ln.oh_step + ln.state * logits + ln.cpu_between * b
    return np.maximum(t, ln.cpu_beside * b)


@dataclass(frozen=True, slots=True)
class Points:
    """``queueing.OperatingPoint`` fields per lane (the ones the percentiles read)."""

    b: Array
    lam: Array
    tau0: Array
    tau: Array
    tau1: Array
    f: Array
    service: Array
    residual: Array
    s1: Array
    rho: Array
    ttft: Array
    busy: Array
    f_dec: Array
    tau_dec: Array


def points(ln: Lanes, b: Array) -> Points:
    """``queueing.operating_point`` per lane at running batch ``b`` (``iteration_mix`` inside)."""
    b = np.maximum(b, 1e-9)
    room = np.maximum(ln.budget - b, 1.0)
    short = room < ln.l_in
    size = np.where(ln.chunked & short, np.minimum(np.maximum(room, MIN_CHUNK), ln.l_in), ln.l_in)
    room = np.where(~ln.chunked & short, ln.l_in, room)
    spans = ln.l_in / size
    n_ch = np.ceil(spans)
    demand = b * spans / ln.n_dec
    fluid = demand >= 1.0
    n_full = n_ch - 1.0
    # the iterations of one operating point, in one pass: pure decode, one carrying chunks,
    # one carrying the rest of a split prompt, one full of prompt tokens (the queue's server)
    tau0, tau1, rest, full = _iteration_time(
        ln,
        b,
        np.stack(
            (np.zeros_like(b), np.where(fluid, demand * size, size), ln.l_in - n_full * size, room)
        ),
    )
    f = np.where(fluid, 1.0, demand)
    tau = (1.0 - f) * tau0 + f * tau1
    residual = ((1.0 - f) * tau0 * tau0 + f * tau1 * tau1) / (2.0 * tau)
    split = ~fluid & (n_ch > 1.0)  # full chunks, then the rest of the prompt
    s1 = np.where(fluid, n_ch * tau1, np.where(split, n_full * tau1 + rest, tau1))
    service = full * ln.l_in / room
    lam = b / (ln.n_dec * tau)
    rho = np.minimum(lam * service, 0.999999)
    busy = -np.expm1(-b)
    wait = rho * service / (2.0 * (1.0 - rho)) + busy * residual
    whole = ln.share >= 1.0  # every prompt beside the decodes (as the scalar path: exactly)
    return Points(
        b, lam, tau0, tau, tau1, f, service, residual, s1, rho, s1 + wait + ln.ttft_oh, busy,
        np.where(whole, f, ln.share * f), np.where(whole, tau, tau0 + ln.share * (tau - tau0)),
    )  # fmt: skip


def quantiles(ln: Lanes, pt: Points, q: float, z: float) -> tuple[Array, Array, Array]:
    """(TTFT, TPOT, E2E) at percentile ``q`` (0-1; ``z`` its normal quantile) per lane,
    seconds: ``queueing.ttft_q``, ``tpot_q`` and ``e2e_q``."""
    queued = (pt.rho > 1.0 - q) & (pt.service > 0.0)
    ratio = np.where(queued, pt.rho / (1.0 - q), 1.0)
    w = np.where(queued, pt.service * np.log(ratio) / (2.0 * (1.0 - pt.rho)), 0.0)
    idle = 1.0 - pt.busy
    waits = (q > idle) & (pt.busy > 0.0)
    resid = np.where(waits, 2.0 * pt.residual * (q - idle) / np.where(waits, pt.busy, 1.0), 0.0)
    ttft = pt.s1 + w + resid + ln.ttft_oh
    spread = (pt.tau1 - pt.tau0) * np.sqrt(pt.f_dec * (1.0 - pt.f_dec) / ln.n_dec)
    tpot = pt.tau_dec + z * spread
    tpot = np.minimum(np.maximum(tpot, pt.tau0), np.maximum(pt.tau1, pt.tau_dec))
    mean = pt.ttft + ln.n_dec * pt.tau_dec
    d1 = ttft - pt.ttft
    d2 = ln.n_dec * (tpot - pt.tau_dec)
    if q <= 0.5:
        e2e = mean + np.minimum(d1, 0.0) + np.minimum(d2, 0.0)
    else:
        e2e = mean + np.hypot(np.maximum(d1, 0.0), np.maximum(d2, 0.0))
    return ttft, tpot, e2e


def broken_codes(
    metrics: tuple[Array, Array, Array], limits_ms: tuple[float | None, float | None, float | None]
) -> npt.NDArray[np.int64]:
    """Per lane, 1 + the index of the first limit (TTFT, TPOT, E2E; milliseconds compared as
    ``capacity`` does) the metrics break, 0 when all hold."""
    code = np.zeros(metrics[0].shape, dtype=np.int64)
    for k in (2, 1, 0):
        limit = limits_ms[k]
        if limit is not None:
            code = np.where(metrics[k] * 1e3 > limit, k + 1, code)
    return code
