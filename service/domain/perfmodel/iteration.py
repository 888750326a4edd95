"""The time of one engine iteration, and the steady-state mix of iterations with and without
prompt tokens.

Notation (per replica of ``t`` cards; "per card" quantities are one card's share; coefficients
from ``coefficients.build_setup``):

* An *iteration* advances ``B`` decoding sequences by one token and processes ``p`` prompt
  tokens of newly admitted requests (continuous batching; TensorRT-LLM in-flight batching,
  vLLM/SGLang chunked prefill). Its time is::

      tau_gpu(B, p) = max(W_dense / BW, 2 P_body (B+p) / F)               dense GEMMs, roofline
                    + max(W_exp u(B+p) / BW, 2 P_exp,act (B+p) / F_moe)   routed experts
                    + max(B c kv / (BW e_kv), B c a_dec / F_attn)         decode attention
                    + p L_in a_pf / F_attn                                prefill attention
                    + (B + p / L_in) sigma                                Mamba-2 state I/O
                    + n_c AR((B+p) d b_a)                                 all-reduces
                    + oh_step + oh_layer n_l                              fixed per-step costs
      tau(B, p)     = max(tau_gpu, oh_seq B)      host work overlapped (EngineProfile.host_overlap)
                  = tau_gpu + oh_seq B          host work between GPU steps

  ``u(n) = 1 - (1 - k/E)^n`` is the expected fraction of a layer's ``E`` experts hit by ``n``
  tokens with top-``k`` routing; ``c`` the mean context of a decoding sequence
  (``L_in + (L_out - 1)/2``); ``kv`` KV bytes per token per card; ``a_dec`` attention FLOPs per
  context token in decode (``4 n_l n_h d_h / t``; MLA absorbed: ``2 n_l n_h (2 r_kv + d_rope) /
  t``), ``a_pf`` per prompt token and prompt length in causal prefill (``2 n_l n_h d_h / t``,
  i.e. ``2 n_l L^2 d`` per prompt as in MODELING.md; on sliding-window layers ``c`` is capped at
  the window ``W`` and the prompt length at ``2 W``, see ``coefficients``);
  ``BW = bandwidth eta_m``,
  ``F = peak eta_c`` times the format's fitted GEMM efficiency (``F_attn``: 16-bit peak times
  ``attn_eff``; ``F_moe``: times ``moe_gemm_eff`` and the build's ``moe_eff``);
  ``e_kv`` = ``kv_read_eff``; ``b_a = 2``
  bytes per activation; ``n_c = 2 n_l`` collectives (one after attention, one after the MLP;
  ``n_l`` under attention data parallelism, where tokens are exchanged once around the experts)
  and ``AR(m)`` the time of one all-reduce of ``m`` bytes with the fastest algorithm the link
  offers (``coefficients.allreduce_algorithms``: a ring of ``2 (t-1)`` steps over PCIe;
  one-shot, two-shot or NVLink SHARP with a latency of one or two steps on switched or fully
  meshed NVLink-class domains; ``n_c`` is one per residual block, ``ModelArch.n_sublayers``,
  in a hybrid model). ``sigma`` is the time to read and write one sequence's Mamba-2 state
  (``2 state / BW``, zero without Mamba-2 layers), once per running sequence and iteration;
  the scan's FLOPs are part of ``P_body``'s per-token term. LM-head FLOPs count only for tokens
  that produce logits (``B`` plus one per prompt). All fitted constants live in ``constants``
  (see ``calibration`` for their meaning).

All times are seconds; the public API converts to ms. Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from service.domain.perfmodel.coefficients import Setup
from service.domain.perfmodel.memory import token_budget

__all__ = [
    "Mix",
    "StepParts",
    "collective_seconds",
    "iteration_mix",
    "iteration_parts",
    "iteration_time",
    "mean_context",
    "prefill_per_iteration",
]


@dataclass(frozen=True, slots=True)
class StepParts:
    """Breakdown of one iteration (seconds): memory reads, compute, communication, overhead."""

    memory_s: float
    weights_s: float
    kv_s: float
    compute_s: float
    comm_s: float
    overhead_s: float
    total_s: float


def collective_seconds(s: Setup, tokens: float) -> float:
    """Seconds of one of the iteration's all-reduces over ``tokens`` tokens (fastest
    algorithm)."""
    best = 0.0
    first = True
    for lat, per_tok in s.coll:
        c = lat + per_tok * tokens
        if first or c < best:
            best = c
            first = False
    return best


def iteration_time(s: Setup, b: float, p: float, c: float, l_in: float) -> float:
    """Seconds of one iteration with ``b`` decoding sequences at mean context ``c`` tokens and
    ``p`` prompt tokens from requests of ``l_in`` tokens (see module docstring)."""
    tok = b + p
    logits = b + (p / l_in if p > 0.0 and l_in > 0.0 else 0.0)
    gemm = s.g_dense_tok_s * tok + s.g_head_tok_s * logits
    t = s.w_dense_s if s.w_dense_s > gemm else gemm
    if s.n_exp:
        frac = 1.0 - (1.0 - s.top_k / s.n_exp) ** tok if tok > 0.0 else 0.0
        we = s.w_exp_s * frac
        ge = s.g_exp_tok_s * tok
        t += we if we > ge else ge
    if b > 0.0:
        cw = c if c < s.window else float(s.window)
        kv = b * (s.kv_ctx_s * c + s.kv_win_ctx_s * cw)
        ad = b * (s.attn_dec_ctx_s * c + s.attn_dec_win_s * cw)
        t += kv if kv > ad else ad
    if p > 0.0:
        lw = l_in if l_in < 2.0 * s.window else 2.0 * s.window
        t += p * (s.attn_pf_s * l_in + s.attn_pf_win_s * lw)
    if s.n_coll:
        t += s.n_coll * collective_seconds(s, tok)
    t += s.oh_step_s + s.state_seq_s * logits
    cpu = s.cpu_seq_s * b
    if s.host_serial:
        return t + cpu
    return t if t > cpu else cpu


def iteration_parts(s: Setup, b: float, p: float, c: float, l_in: float) -> StepParts:
    """Same as :func:`iteration_time`, split by resource (for the ``bottleneck`` label)."""
    tok = b + p
    logits = b + (p / l_in if p > 0.0 and l_in > 0.0 else 0.0)
    gemm = s.g_dense_tok_s * tok + s.g_head_tok_s * logits
    weights = s.w_dense_s
    compute = 0.0
    busy = max(weights, gemm)
    compute += gemm
    if s.n_exp:
        frac = 1.0 - (1.0 - s.top_k / s.n_exp) ** tok if tok > 0.0 else 0.0
        we = s.w_exp_s * frac
        ge = s.g_exp_tok_s * tok
        weights += we
        compute += ge
        busy += max(we, ge)
    cw = min(c, float(s.window))
    kv = b * (s.kv_ctx_s * c + s.kv_win_ctx_s * cw) if b > 0 else 0.0
    ad = b * (s.attn_dec_ctx_s * c + s.attn_dec_win_s * cw) if b > 0 else 0.0
    busy += max(kv, ad)
    compute += ad
    if p > 0.0:
        pf = p * (s.attn_pf_s * l_in + s.attn_pf_win_s * min(l_in, 2.0 * s.window))
        busy += pf
        compute += pf
    comm = s.n_coll * collective_seconds(s, tok) if s.n_coll else 0.0
    state = s.state_seq_s * logits
    gpu = busy + comm + s.oh_step_s + state
    cpu = s.cpu_seq_s * b
    host = cpu if s.host_serial else max(cpu - gpu, 0.0)
    return StepParts(
        memory_s=weights + kv + state,
        weights_s=weights,
        kv_s=kv + state,
        compute_s=compute,
        comm_s=comm,
        overhead_s=s.oh_step_s + host,
        total_s=gpu + host,
    )


def mean_context(l_in: int, l_out: int) -> float:
    """Mean context (tokens) of a decoding sequence: prompt plus half the output."""
    return l_in + (l_out - 1) / 2.0


def prefill_per_iteration(b: float, l_in: int, l_out: int) -> float:
    """Prompt tokens per iteration averaged over time with ``b`` decoding sequences."""
    return b * l_in / max(l_out - 1, 1)


MIN_CHUNK = 256.0
"""Prompt tokens a chunk carries at least when the token budget's room is smaller (tokens)."""


@dataclass(frozen=True, slots=True)
class Mix:
    """Steady-state iteration mix with ``b`` sequences decoding (seconds).

    Prompts replace finished sequences at ``B / (L_out - 1)`` prompts per iteration. With
    chunked prefill, a prompt longer than the token budget's room (``room = budget - B``) is
    cut into chunks of ``size = max(room, MIN_CHUNK)`` tokens, the last one the rest: ``n_ch``
    chunks, worth ``spans = L_in / size`` full ones (1 without chunking, or when the prompt
    fits the room). A full chunk takes a whole iteration's room; the rest leaves room for
    other prompts, so the mix counts ``spans``: ``demand = B spans / (L_out - 1)`` chunk
    iterations per iteration, continuous in ``B`` where chunking starts. When ``demand >= 1``
    every iteration carries ``demand`` chunks' tokens (fluid); otherwise a fraction
    ``f = demand`` of iterations carries one chunk and the rest are pure decode. So
    ``tau = (1 - f) tau0 + f tau1``, ``tau1`` being an iteration that carries chunks, and one
    request's prompt adds ``delta = spans (tau1 - tau0) / max(1, demand)`` of GPU time. ``s1``
    is the first-token service time: the iterations that carry the request's own chunks, the
    ``n_ch - 1`` full ones and the rest (``n_ch`` fluid iterations when ``demand >= 1``).
    ``service`` is the prompt queue's service time per
    prompt: an iteration admits ``room`` prompt tokens (at least one whole prompt
    without chunked prefill), and while prompts wait it is full, so it lasts ``tau_room``, the
    time of an iteration carrying ``room`` prompt tokens beside the ``B`` decoding sequences;
    a prompt takes ``L_in / room`` of it: ``tau_room L_in / room``. That is at least the
    prompt's own prefill work at this batch, and it changes continuously with ``B`` where
    chunking starts (``tau1``, an iteration carrying one chunk, would claim ``room`` prompt
    tokens cost what one chunk does, and halve the service time where a prompt starts being
    split in two).
    ``residual`` is the mean residual of the iteration in flight when a request arrives
    (length-biased: ``E[tau^2] / (2 E[tau])``).
    """

    tau0: float
    tau1: float
    tau: float
    f: float
    delta: float
    s1: float
    service: float
    residual: float


def iteration_mix(s: Setup, b: float, l_in: int, l_out: int) -> Mix:
    """Steady-state iteration mix (see :class:`Mix`); ``l_out >= 2``."""
    n_dec = max(l_out - 1, 1)
    c = mean_context(l_in, l_out)
    budget = token_budget(s, l_in, l_out)
    room = max(budget - b, 1.0)
    size = float(l_in)
    if s.chunked and room < l_in:
        size = min(max(room, MIN_CHUNK), size)
    elif room < l_in:
        room = float(l_in)
    spans = l_in / size
    n_ch = math.ceil(spans)
    demand = b * spans / n_dec
    tau0 = iteration_time(s, b, 0.0, c, l_in)
    if demand >= 1.0:
        f = 1.0
        tau1 = iteration_time(s, b, demand * size, c, l_in)
        delta = (tau1 - tau0) * spans / demand
        s1 = n_ch * tau1
    else:
        f = demand
        tau1 = iteration_time(s, b, size, c, l_in)
        delta = (tau1 - tau0) * spans
        s1 = tau1
        if n_ch > 1:  # full chunks, then the rest of the prompt
            rest = l_in - (n_ch - 1) * size
            s1 = (n_ch - 1) * tau1 + iteration_time(s, b, rest, c, l_in)
    tau = (1.0 - f) * tau0 + f * tau1
    residual = ((1.0 - f) * tau0 * tau0 + f * tau1 * tau1) / (2.0 * tau)
    full = iteration_time(s, b, room, c, l_in)
    return Mix(tau0, tau1, tau, f, max(delta, 0.0), s1, full * l_in / room, residual)
