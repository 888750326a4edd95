"""Physics of one replica: memory fit and the time of one engine iteration.

Notation (per replica of ``t`` cards; "per card" quantities are one card's share):

* An *iteration* advances ``B`` decoding sequences by one token and processes ``p`` prompt
  tokens of newly admitted requests (continuous batching; TensorRT-LLM in-flight batching,
  vLLM/SGLang chunked prefill). Its time is::

      tau_gpu(B, p) = max(W_dense / BW, 2 P_body (B+p) / F)               dense GEMMs, roofline
                    + max(W_exp u(B+p) / BW, 2 P_exp,act (B+p) / F_moe)   routed experts
                    + max(B c kv / (BW e_kv), B c a_dec / F_attn)         decode attention
                    + p L_in a_pf / F_attn                                prefill attention
                    + n_c (2 (t-1) lat + (B+p) d b_a 2 (t-1)/t / link)    ring all-reduces
                    + oh_step + oh_layer n_l                              fixed per-step costs
      tau(B, p)     = max(tau_gpu, oh_seq B)                              host work overlaps

  ``u(n) = 1 - (1 - k/E)^n`` is the expected fraction of a layer's ``E`` experts hit by ``n``
  tokens with top-``k`` routing; ``c`` the mean context of a decoding sequence
  (``L_in + (L_out - 1)/2``); ``kv`` KV bytes per token per card; ``a_dec`` attention FLOPs per
  context token in decode (``4 n_l n_h d_h / t``; MLA absorbed: ``2 n_l n_h (2 r_kv + d_rope) /
  t``), ``a_pf`` per prompt token and prompt length in causal prefill (``2 n_l n_h d_h / t``,
  i.e. ``2 n_l L^2 d`` per prompt as in MODELING.md); ``BW = bandwidth eta_m``,
  ``F = peak eta_c`` times the format's fitted GEMM efficiency (``F_attn``: 16-bit peak times
  ``attn_eff``; ``F_moe``: times ``moe_gemm_eff``); ``e_kv`` = ``kv_read_eff``; ``b_a = 2``
  bytes per activation; ``n_c = 2 n_l`` collectives (one after attention, one after the MLP;
  ``n_l`` under attention data parallelism, where tokens are exchanged once around the experts)
  over a link of ``interconnect_bandwidth_gbps / 2`` per direction (NVLink-class) or PCIe x16 of
  the card's generation, ``lat`` the fitted per-hop latency. LM-head FLOPs count only for tokens
  that produce logits (``B`` plus one per prompt). All fitted constants live in ``constants``
  (see ``calibration`` for their meaning).
* Weights per card: ``P b_w / t`` with the embedding and LM head kept 16-bit. Under attention
  data parallelism (TensorRT-LLM's MoE setting, ``EngineProfile.attention_dp_moe``) every
  non-expert weight is replicated on each rank and only routed experts are split; the busiest
  rank sets the expert time (``ep_imbalance``).
* KV per token per card: ``2 n_l n_kv d_h b_kv / min(t, n_kv)`` (KV heads are replicated once
  ``t > n_kv``), or for MLA ``n_l (kv_lora_rank + qk_rope_head_dim) b_kv`` on every rank
  (replicated, as vLLM/SGLang/TensorRT-LLM do without attention DP); under attention DP each
  rank holds whole-model KV for its own sequences (``/ t``).
* Memory per card: usable bytes ``M`` (``hardware.memory_bytes``), activations ``act`` sized by
  the per-iteration token budget, ``reserve = reserve_gb + reserve_frac M``. KV pool
  ``f (M - W - act - reserve)`` (fraction of free memory, TensorRT-LLM) or
  ``f M - W - act - reserve`` (fraction of total, vLLM/SGLang/TGI). A sequence holds
  ``L_in + L_out`` tokens (full reservation) or ``L_in + L_out/2`` on average (paged).

Sliding-window and chunked attention layers are charged full-length KV (conservative; not all
engines shrink the cache for them). Pipeline parallelism is not modelled.
All times are seconds inside this module; the public API converts to ms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from service.domain.llm import ModelArch, param_counts
from service.domain.perfmodel.calibration import Calibration, EngineProfile
from service.domain.perfmodel.hardware import (
    calibration_group,
    kv_plan,
    link_plan,
    memory_bytes,
    precision_plan,
)
from service.domain.perfmodel.values import Deployment

ACT_BYTES = 2.0  # activations travel in 16-bit between layers
LOGIT_BYTES = 4.0  # fp32 logits buffer
MAX_TP_WITHOUT_LARGE_DOMAIN = 8


@dataclass(frozen=True, slots=True)
class Setup:
    """Per-(model, deployment, engine, calibration) coefficients; see module docstring.

    Memory fields are bytes per card; ``*_s`` fields are seconds (per step, per token, or per
    sequence-context-token as named). ``reject`` is non-empty when the deployment cannot run.
    """

    reject: str
    notes: tuple[str, ...]
    tp: int
    capacity_b: float
    weights_b: float
    weights_replica_b: float
    act_fixed_b: float
    act_tok_b: float
    reserve_b: float
    kv_fraction: float
    kv_fraction_of_free: bool
    kv_token_b: float
    w_dense_s: float
    w_exp_s: float
    n_exp: int
    top_k: int
    g_dense_tok_s: float
    g_head_tok_s: float
    g_exp_tok_s: float
    kv_ctx_s: float
    attn_dec_ctx_s: float
    attn_pf_s: float
    n_coll: int
    coll_lat_s: float
    comm_tok_s: float
    oh_step_s: float
    cpu_fixed_s: float
    cpu_seq_s: float
    ttft_oh_s: float
    max_batch: int
    max_num_tokens: int
    auto_token_cap: int
    chunked: bool
    full_reservation: bool
    max_context: int


def _tp_reject(model: ModelArch, dep: Deployment) -> str:
    """Why a tensor-parallel degree cannot run the model ("" when it can).

    Rules: ``t <= 8`` unless the card's NVLink domain is larger (GB200 NVL72); ``t`` divides the
    attention heads; ``t`` divides the KV heads or is a multiple of them (replication).
    """
    t = dep.tensor_parallel
    if t < 1:
        return f"tensor_parallel must be >= 1, got {t}"
    limit = max(MAX_TP_WITHOUT_LARGE_DOMAIN, dep.gpu.nvlink_domain)
    if t > limit:
        return (
            f"tensor parallel {t} exceeds {limit} (the largest group {dep.gpu.name} supports; "
            f"8 unless the NVLink domain is larger)"
        )
    if model.n_heads % t:
        return f"tensor parallel {t} does not divide {model.id}'s {model.n_heads} attention heads"
    if model.attention != "mla":
        kv = model.n_kv_heads
        if (t <= kv and kv % t) or (t > kv and t % kv):
            return (
                f"tensor parallel {t} does not split {model.id}'s {kv} KV heads evenly "
                "(needs a divisor or a multiple of the KV head count)"
            )
    return ""


@lru_cache(maxsize=8192)
def build_setup(
    model: ModelArch, dep: Deployment, profile: EngineProfile, cal: Calibration
) -> Setup:
    """Derive every coefficient of :func:`iteration_time` and the memory plan (pure, memoised)."""
    gpu = dep.gpu
    t = max(1, dep.tensor_parallel)
    notes: list[str] = []
    reject = _tp_reject(model, dep)
    plan = precision_plan(gpu, dep.precision)
    if plan.reason and not reject:
        reject = plan.reason
    if plan.note:
        notes.append(plan.note)
    kv_b, kv_note, kv_reason = kv_plan(gpu, dep.kv_precision)
    if kv_reason and not reject:
        reject = kv_reason
    if kv_note:
        notes.append(kv_note)
    link = link_plan(gpu, t, dep.allow_pcie_tensor_parallel)
    if link.reason and not reject:
        reject = link.reason
    if link.note:
        notes.append(link.note)
    choice = calibration_group(gpu)
    if choice.note:
        notes.append(choice.note)
    if profile.note:
        notes.append(profile.note)
    group = cal.group_by_name[choice.group]
    ec = cal.engine_by_name[profile.constants]
    derate = choice.derate * profile.derate

    pc = param_counts(model)
    dp = profile.attention_dp_moe and model.is_moe and t > 1
    if dp:
        notes.append(
            "MoE with attention data parallelism: every non-expert weight replicated per rank, "
            "routed experts sharded, each rank runs its own sequences"
        )
    wb = plan.weight_bytes if plan.weight_bytes > 0 else 2.0
    # Under attention DP every non-expert layer runs data-parallel (TP 1), so its weights are
    # replicated on each rank; only routed experts are split.
    rep = 1 if dp else t
    body_card = pc.body / rep
    head_card = pc.lm_head / rep
    emb_card = pc.embedding / rep
    exp_card = pc.experts_total / t
    head_bytes = 0.0 if model.tie_embeddings else head_card * 2.0
    weights_card = (body_card + exp_card) * wb + emb_card * 2.0 + head_bytes
    weights_replica = (
        weights_card * t
        if dp
        else (
            (pc.body + pc.experts_total) * wb
            + (pc.embedding + (0.0 if model.tie_embeddings else pc.lm_head)) * 2.0
        )
    )

    # KV bytes per token per card
    elems = model.n_layers * model.kv_elements_per_token_layer
    # MLA latent: one copy per rank unless ranks own their sequences (attention DP)
    shard_tp = 1 if model.attention == "mla" else min(t, model.n_kv_heads)
    shard = t if dp else shard_tp
    kv_token = elems * (kv_b if kv_b > 0 else 2.0) / shard
    if model.sliding_window and model.sliding_window_layers:
        notes.append(
            f"{model.id} uses a {model.sliding_window}-token window on "
            f"{model.sliding_window_layers} of {model.n_layers} layers; KV is charged at full "
            "length (conservative)"
        )
    if model.attention == "mla" and t > 1 and not dp:
        notes.append("MLA latent KV cache replicated on every tensor-parallel rank")
    elif model.attention != "mla" and t > model.n_kv_heads and not dp:
        notes.append(
            f"tensor parallel {t} > {model.n_kv_heads} KV heads: KV heads replicated "
            f"{t // model.n_kv_heads}x"
        )

    # Activations / workspace, sized by the per-iteration token budget T (the engine allocates
    # them up front): residual streams and QKV (4 d), the MLP intermediate (gated: 2 ffn / t),
    # and for MoE the permuted token copies and expert intermediates of the k routed copies of
    # each token (all ranks' tokens under attention DP). Plus a fp32 logits buffer for the decode
    # batch. Scaled by the fitted ``act_scale``; a physically motivated estimate, not a count of
    # any one engine's buffers.
    mlp_mult = 2 if model.gated_mlp else 1
    per_tok = 4.0 * model.hidden_size + (
        mlp_mult * model.ffn_size / t if model.n_dense_layers else 0.0
    )
    if dp:
        # the budget below is the replica's (t ranks); each rank holds its own share of the
        # dense activations and the whole gathered token set at the experts
        per_tok /= t
    if model.is_moe:
        moe_ffn_card = model.moe_ffn_size * (1.0 if dp else 1.0 / t)
        per_tok += model.experts_per_token * (2.0 * model.hidden_size + mlp_mult * moe_ffn_card)
    act_tok = per_tok * ACT_BYTES * cal.act_scale
    act_fixed = min(profile.max_batch, 2048) * model.vocab_size / t * LOGIT_BYTES * cal.act_scale
    capacity = memory_bytes(gpu)
    reserve = cal.reserve_gb * 1e9 + cal.reserve_frac * capacity

    # rates
    bw = gpu.memory_bandwidth_gbps * 1e9 * group.eta_m * ec.eff_memory * derate
    f16 = plan.attn_tflops * 1e12 * group.eta_c * ec.eff_compute * derate
    fg = (
        plan.gemm_tflops * 1e12 * group.eta_c * ec.eff_compute * derate * cal.gemm_eff(plan.fp_kind)
    )
    f_attn = f16 * cal.attn_eff
    f_moe = fg * cal.moe_gemm_eff
    if bw <= 0 or fg <= 0 or f16 <= 0:
        bw = bw if bw > 0 else 1.0
        fg = fg if fg > 0 else 1.0
        f16 = f16 if f16 > 0 else 1.0
        f_attn = f_attn if f_attn > 0 else 1.0
        f_moe = f_moe if f_moe > 0 else 1.0

    w_dense_read = body_card * wb + head_card * 2.0
    n_l = model.n_layers
    if model.attention == "mla":
        qk_pf = model.n_heads * (model.qk_nope_head_dim + model.qk_rope_head_dim)
        v_pf = model.n_heads * model.v_head_dim
        qk_dec = model.n_heads * (model.kv_lora_rank + model.qk_rope_head_dim)
        v_dec = model.n_heads * model.kv_lora_rank
    else:
        qk_pf = v_pf = qk_dec = v_dec = model.n_heads * model.head_dim
    attn_dec_flops = 2.0 * n_l * (qk_dec + v_dec) / t
    attn_pf_flops = 1.0 * n_l * (qk_pf + v_pf) / t  # per prompt token per prompt length (causal)

    if t > 1 and link.kind != "none":
        # Ring all-reduce: 2 (t - 1) steps, each paying the link's per-hop latency, moving
        # 2 (t - 1) / t of the message over each card's link. Tensor parallelism needs two per
        # layer (after attention and after the MLP); attention DP + expert sharding needs one
        # all-reduce-sized exchange per layer (token dispatch/combine around the experts).
        lat = cal.nvlink_latency_us if link.kind == "nvlink" else cal.pcie_latency_us
        eff = cal.nvlink_bw_eff if link.kind == "nvlink" else cal.pcie_bw_eff
        n_coll = n_l if dp else 2 * n_l
        coll_lat = lat * 1e-6 * 2 * (t - 1)
        comm_tok = (
            model.hidden_size
            * ACT_BYTES
            * 2.0
            * (t - 1)
            / t
            / (link.gbps_per_direction * 1e9 * eff)
        )
    else:
        n_coll, coll_lat, comm_tok = 0, 0.0, 0.0

    der_oh = 1.0 / derate if derate > 0 else 1.0
    # expert parallelism (attention DP shards experts by expert): the busiest rank sets the pace
    imb = cal.ep_imbalance if dp else 1.0
    return Setup(
        reject=reject,
        notes=tuple(notes),
        tp=t,
        capacity_b=capacity,
        weights_b=weights_card,
        weights_replica_b=weights_replica,
        act_fixed_b=act_fixed,
        act_tok_b=act_tok,
        reserve_b=reserve,
        kv_fraction=profile.kv_fraction,
        kv_fraction_of_free=profile.kv_fraction_of == "free",
        kv_token_b=kv_token,
        w_dense_s=w_dense_read / bw,
        w_exp_s=exp_card * wb / bw * imb,
        n_exp=model.n_experts,
        top_k=model.experts_per_token,
        g_dense_tok_s=2.0 * (pc.body / t) / fg,
        g_head_tok_s=2.0 * (pc.lm_head / t) / f16,
        g_exp_tok_s=2.0 * (pc.experts_active / t) / f_moe * imb if model.is_moe else 0.0,
        kv_ctx_s=kv_token / (bw * cal.kv_read_eff),
        attn_dec_ctx_s=attn_dec_flops / f_attn,
        attn_pf_s=attn_pf_flops / f_attn,
        n_coll=n_coll,
        coll_lat_s=coll_lat,
        comm_tok_s=comm_tok,
        oh_step_s=(ec.step_overhead_ms * 1e-3 + ec.layer_overhead_us * 1e-6 * n_l) * der_oh,
        cpu_fixed_s=0.0,
        cpu_seq_s=ec.seq_overhead_us * 1e-6 * der_oh,
        ttft_oh_s=ec.ttft_overhead_ms * 1e-3 * der_oh,
        max_batch=profile.max_batch * (t if dp else 1),
        max_num_tokens=profile.max_num_tokens * (t if dp else 1),
        auto_token_cap=profile.auto_token_cap * (t if dp else 1),
        chunked=profile.chunked_prefill,
        full_reservation=profile.full_reservation,
        max_context=model.max_context,
    )


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
        kv = s.kv_ctx_s * b * c
        ad = s.attn_dec_ctx_s * b * c
        t += kv if kv > ad else ad
    if p > 0.0:
        t += s.attn_pf_s * p * l_in
    if s.n_coll:
        t += s.n_coll * (s.coll_lat_s + s.comm_tok_s * tok)
    t += s.oh_step_s
    cpu = s.cpu_fixed_s + s.cpu_seq_s * b
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
    kv = s.kv_ctx_s * b * c if b > 0 else 0.0
    ad = s.attn_dec_ctx_s * b * c if b > 0 else 0.0
    busy += max(kv, ad)
    compute += ad
    if p > 0.0:
        pf = s.attn_pf_s * p * l_in
        busy += pf
        compute += pf
    comm = s.n_coll * (s.coll_lat_s + s.comm_tok_s * tok) if s.n_coll else 0.0
    gpu = busy + comm + s.oh_step_s
    cpu = s.cpu_fixed_s + s.cpu_seq_s * b
    return StepParts(
        memory_s=weights + kv,
        weights_s=weights,
        kv_s=kv,
        compute_s=compute,
        comm_s=comm,
        overhead_s=s.oh_step_s + max(cpu - gpu, 0.0),
        total_s=max(gpu, cpu),
    )


def tokens_per_sequence(s: Setup, l_in: int, l_out: int) -> float:
    """KV tokens charged per running sequence (full reservation or paged mean residency)."""
    return float(l_in + l_out) if s.full_reservation else l_in + l_out / 2.0


def token_budget(s: Setup, l_in: int, l_out: int) -> float:
    """Per-iteration token budget (tokens) the engine is configured with for this shape.

    Fixed ``max_num_tokens``, or for ``max_num_tokens = 0`` the trtllm-bench heuristic
    (``tensorrt_llm/bench/build/tuning.py``): the batch that the KV memory would hold at full
    reservation (activations ignored, at most ``max_batch``) times ``1 + L_in / L_out``, at least
    2048 and at most ``auto_token_cap``.
    """
    if s.max_num_tokens > 0:
        return float(s.max_num_tokens)
    free = s.capacity_b - s.reserve_b - s.weights_b - s.act_fixed_b
    seqs = s.kv_fraction * free / (s.kv_token_b * (l_in + l_out)) if s.kv_token_b > 0 else 0.0
    raw = min(max(seqs, 0.0), float(s.max_batch)) * (1.0 + l_in / max(l_out, 1))
    return min(max(raw, 2048.0), float(s.auto_token_cap))


def activation_bytes(s: Setup, l_in: int, l_out: int) -> float:
    """Activation/workspace bytes per card for this shape's token budget (capped at 64k)."""
    return s.act_fixed_b + s.act_tok_b * min(token_budget(s, l_in, l_out), 65536.0)


def usable_bytes(s: Setup, l_in: int, l_out: int) -> float:
    """Bytes per card available to weights plus KV cache after activations and reserve."""
    act = activation_bytes(s, l_in, l_out)
    if s.kv_fraction_of_free:
        return s.capacity_b - act - s.reserve_b
    return s.kv_fraction * s.capacity_b - act - s.reserve_b


def kv_pool_bytes(s: Setup, l_in: int, l_out: int) -> float:
    """KV-cache pool per card (bytes; negative when the weights do not fit)."""
    usable = usable_bytes(s, l_in, l_out)
    if s.kv_fraction_of_free:
        return s.kv_fraction * (usable - s.weights_b)
    return usable - s.weights_b


def memory_batch_cap(s: Setup, l_in: int, l_out: int) -> int:
    """Sequences whose KV fits the pool (0 when not even one does)."""
    pool = kv_pool_bytes(s, l_in, l_out)
    if pool <= 0.0 or s.kv_token_b <= 0.0:
        return 0
    return int(pool / (s.kv_token_b * tokens_per_sequence(s, l_in, l_out)))


def token_budget_cap(s: Setup, l_in: int, l_out: int) -> float:
    """Largest decode batch the per-iteration token budget sustains in steady state.

    Each iteration carries ``B`` decode tokens and, on average, ``B L_in / (L_out - 1)`` prompt
    tokens, so ``B (1 + L_in / (L_out - 1)) <= max_num_tokens``. With ``max_num_tokens = 0``
    (trtllm-bench) the budget is sized to the batch up to ``auto_token_cap``.
    """
    n_dec = max(l_out - 1, 1)
    return token_budget(s, l_in, l_out) / (1.0 + l_in / n_dec)


def mean_context(l_in: int, l_out: int) -> float:
    """Mean context (tokens) of a decoding sequence: prompt plus half the output."""
    return l_in + (l_out - 1) / 2.0


def prefill_per_iteration(b: float, l_in: int, l_out: int) -> float:
    """Prompt tokens per iteration averaged over time with ``b`` decoding sequences."""
    return b * l_in / max(l_out - 1, 1)


@dataclass(frozen=True, slots=True)
class Mix:
    """Steady-state iteration mix with ``b`` sequences decoding (seconds).

    Prompts replace finished sequences at ``B / (L_out - 1)`` prompts per iteration. A prompt is
    processed in ``n_ch`` chunks (1 without chunked prefill or when it fits the token budget);
    ``demand = B n_ch / (L_out - 1)`` chunks per iteration. When ``demand >= 1`` every iteration
    carries ``demand`` chunks (fluid); otherwise a fraction ``f = demand`` of iterations carries
    one chunk and the rest are pure decode. So ``tau = (1 - f) tau0 + f tau1``, ``tau1`` being an
    iteration that carries chunks, and one request's prompt adds ``delta = n_ch (tau1 - tau0) /
    max(1, demand)`` of GPU time. ``s1`` is the first-token service time: the ``n_ch`` iterations
    that carry the request's own chunks. ``service`` is the prompt queue's service time per
    prompt: a prompt-carrying iteration takes ``tau1`` and admits ``room = budget - B`` prompt
    tokens (at least one whole prompt without chunked prefill), so ``tau1 L_in / room``.
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
    n_ch = 1
    if s.chunked and room < l_in:
        n_ch = math.ceil(l_in / max(room, 256.0))
    elif room < l_in:
        room = float(l_in)
    chunk = l_in / n_ch
    demand = b * n_ch / n_dec
    tau0 = iteration_time(s, b, 0.0, c, l_in)
    if demand >= 1.0:
        f = 1.0
        tau1 = iteration_time(s, b, demand * chunk, c, l_in)
        delta = (tau1 - tau0) * n_ch / demand
    else:
        f = demand
        tau1 = iteration_time(s, b, chunk, c, l_in)
        delta = (tau1 - tau0) * n_ch
    tau = (1.0 - f) * tau0 + f * tau1
    residual = ((1.0 - f) * tau0 * tau0 + f * tau1 * tau1) / (2.0 * tau)
    return Mix(tau0, tau1, tau, f, max(delta, 0.0), n_ch * tau1, tau1 * l_in / room, residual)


def arrival_rate(s: Setup, b: float, l_in: int, l_out: int) -> float:
    """Requests per second that keep ``b`` sequences decoding (Little's law on the decode
    phase): ``lambda = B / ((L_out - 1) tau(B))``."""
    if b <= 0.0:
        return 0.0
    lo = max(l_out, 2)
    return b / ((lo - 1) * iteration_mix(s, b, l_in, lo).tau)
