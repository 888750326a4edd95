"""Per-replica coefficients: everything about a (model, deployment, engine, calibration) that
does not depend on the load, derived once and memoised as a :class:`Setup`.

:func:`build_setup` runs in named steps, each stating its units:

1. ``_hardware``: whether the deployment can run at all (tensor-parallel split, weight and KV
   formats on the card, the scale-up link) and which fitted constants apply;
2. ``_weights``: weight bytes per card and per replica;
3. ``_kv_token_bytes``: KV-cache bytes per token per card (full-context and window layers);
   ``_ssm_state_bytes``: bytes per card of one sequence's Mamba-2 state (hybrid models);
4. ``_activations``: activation/workspace bytes, per budget token and fixed;
5. ``_rates``: achieved memory bandwidth and GEMM/attention throughput;
6. ``_attention_flops``: attention FLOPs per context token (decode) and per prompt token and
   prompt length (prefill);
7. ``_communication``: the all-reduces of one iteration (ring over PCIe; one-shot, two-shot
   or NVLink SHARP on switched and fully meshed domains: :func:`allreduce_algorithms`).

The formulas these coefficients feed are in ``iteration`` (time of one engine iteration) and
``memory`` (the memory plan); the symbols are defined there. Sizing rules per card:

* Weights: ``P b_w / t`` with the embedding and LM head kept 16-bit. Under attention data
  parallelism (TensorRT-LLM's MoE setting, ``EngineProfile.attention_dp_moe``) every non-expert
  weight is replicated on each rank and only routed experts are split; the busiest rank sets
  the expert time (``ep_imbalance``).
* KV per token: ``2 n_l n_kv d_h b_kv / min(t, n_kv)`` (KV heads are replicated once
  ``t > n_kv``), or for MLA ``n_l (kv_lora_rank + qk_rope_head_dim) b_kv`` on every rank
  (replicated, as vLLM/SGLang/TensorRT-LLM do without attention DP); under attention DP each
  rank holds whole-model KV for its own sequences (``/ t``).
* Mamba-2 state per sequence (hybrid models, ``ModelArch.ssm_layers``): ``n_ssm (h p n b_s +
  conv_dim (k - 1) b_a) / t`` (heads and groups split across ranks; ``b_s`` 4 bytes when the
  checkpoint keeps the state fp32). It does not grow with the context; each iteration reads
  and writes it once per running sequence (``state_seq_s``), and the chunked scan of a prompt
  (SSD, the Mamba-2 paper's algorithm) costs ``2 (g Q n + h (Q p + 2 n p))`` FLOPs per token
  and layer at the 16-bit rate (``Q`` the chunk size), beside the mixer's projections, which
  are GEMMs like any other body weight.

Time to first token has no fitted lump: it is queueing (``queueing``) plus the prefill
iteration(s) (``iteration``) plus ``ttft_oh_s``, the request handling outside the GPU iterations
(HTTP parsing, tokenisation, scheduling the request into the next iteration, detokenising and
streaming the first token). That is a few milliseconds on the OpenAI servers of vLLM, SGLang
and TensorRT-LLM, so the fitted ``ttft_overhead_ms`` is capped at
:data:`REQUEST_HANDLING_MAX_MS`; a larger fitted value would stand in for missing queueing or
prefill physics, not for request handling.

Sliding-window and chunked attention layers (``ModelArch.sliding_window`` on
``sliding_window_layers``) read and compute over at most the window in decode and at most twice
the window per prompt token in prefill; their KV cache holds only the window in engines that
allocate it so (``EngineProfile.window_kv``) and the whole context otherwise. Pipeline
parallelism is not modelled. Times are seconds,
memory bytes, rates per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from service.domain.catalog import GpuSpec
from service.domain.llm import ModelArch, ParamCounts, param_counts
from service.domain.perfmodel.calibration import (
    Calibration,
    EngineConstants,
    EngineProfile,
    GroupConstants,
)
from service.domain.perfmodel.engine_hardware import (
    engine_hardware_reason,
    engine_precision_reason,
)
from service.domain.perfmodel.hardware import (
    PCIE_HOST_STAGING_FACTOR,
    LinkPlan,
    PrecisionPlan,
    calibration_group,
    kv_plan,
    link_plan,
    memory_bytes,
    precision_plan,
)
from service.domain.perfmodel.values import Deployment

__all__ = [
    "ACT_BYTES",
    "LOGIT_BYTES",
    "MAX_TP_WITHOUT_LARGE_DOMAIN",
    "REQUEST_HANDLING_MAX_MS",
    "Setup",
    "allreduce_algorithms",
    "allreduce_seconds",
    "build_setup",
]

ACT_BYTES = 2.0  # activations travel in 16-bit between layers
LOGIT_BYTES = 4.0  # fp32 logits buffer
MAX_TP_WITHOUT_LARGE_DOMAIN = 8
# Upper bound (ms) on the fixed request-handling part of TTFT: HTTP parsing, chat template and
# tokenisation (about 10-20 us per token in a Python/Rust tokenizer: 131 tokens in 1.3-2.8 ms,
# github.com/tenstorrent/tt-inference-server/issues/2173), handing the request to the engine
# loop and streaming the first chunk back. About 1-3 ms for short prompts; not fitted (the
# refit keeps ``ttft_overhead_ms`` within it).
REQUEST_HANDLING_MAX_MS = 3.0


@dataclass(frozen=True, slots=True)
class Setup:
    """Per-(model, deployment, engine, calibration) coefficients; see module docstring.

    Memory fields are bytes per card; ``*_s`` fields are seconds (per step, per token, or per
    sequence-context-token as named); ``coll`` the all-reduce algorithms as (seconds, seconds
    per token of the message), ``n_coll`` all-reduces per iteration. ``reject`` is non-empty
    when the deployment cannot run.
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
    kv_win_b: float
    state_seq_b: float
    window: int
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
    kv_win_ctx_s: float
    state_seq_s: float
    attn_dec_win_s: float
    attn_pf_win_s: float
    n_coll: int
    coll: tuple[tuple[float, float], ...]
    oh_step_s: float
    cpu_seq_s: float
    host_serial: bool
    ttft_oh_s: float
    max_batch: int
    max_num_tokens: int
    auto_token_cap: int
    chunked: bool
    prefill_first: bool
    full_reservation: bool


@dataclass(frozen=True, slots=True)
class _Hardware:
    """Step 1: feasibility, formats, link and the fitted constants for this deployment."""

    reject: str
    plan: PrecisionPlan
    kv_b: float
    link: LinkPlan
    group: GroupConstants
    ec: EngineConstants
    derate: float


@dataclass(frozen=True, slots=True)
class _Weights:
    """Step 2: weight parameters (counts) and bytes on one card, bytes on the whole replica."""

    wb: float
    body_card: float
    body16: float
    body_card_b: float
    head_card: float
    exp_card: float
    card_b: float
    replica_b: float


@dataclass(frozen=True, slots=True)
class _Rates:
    """Step 5: achieved bandwidth (bytes/s) and throughputs (FLOP/s) of one card."""

    bw: float
    fg: float
    f16: float
    f_attn: float
    f_moe: float


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
    if model.ssm_layers and model.ssm_heads % t:
        return f"tensor parallel {t} does not divide {model.id}'s {model.ssm_heads} Mamba-2 heads"
    if model.ssm_layers and model.ssm_groups % t and model.ssm_groups != 1:
        return (
            f"tensor parallel {t} does not split {model.id}'s {model.ssm_groups} Mamba-2 groups "
            "evenly"
        )
    if model.attention != "mla":
        kv = model.n_kv_heads
        if (t <= kv and kv % t) or (t > kv and t % kv):
            return (
                f"tensor parallel {t} does not split {model.id}'s {kv} KV heads evenly "
                "(needs a divisor or a multiple of the KV head count)"
            )
    return ""


def _hardware(
    model: ModelArch,
    dep: Deployment,
    profile: EngineProfile,
    cal: Calibration,
    t: int,
    notes: list[str],
) -> _Hardware:
    """Step 1: the first reason the deployment cannot run ("" when it can; first of all the
    engine must run on the card, :mod:`engine_hardware`), the weight and KV formats on the card,
    the tensor-parallel link and the calibration group and engine constants (notes appended
    for every substitution made)."""
    gpu = dep.gpu
    reject = (
        engine_hardware_reason(dep.engine, gpu)
        or engine_precision_reason(dep.engine, gpu, dep.precision)
        or _tp_reject(model, dep)
    )
    plan = precision_plan(gpu, dep.precision, model.fp4_scale_block)
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
    return _Hardware(reject, plan, kv_b, link, group, ec, choice.derate * profile.derate)


def _weights(model: ModelArch, pc: ParamCounts, plan: PrecisionPlan, t: int, dp: bool) -> _Weights:
    """Step 2: weights per card and per replica (bytes); embedding and LM head stay 16-bit,
    and so does the part of the body a checkpoint leaves unquantized (:func:`body_16bit`).

    Under attention DP every non-expert layer runs data-parallel (TP 1), so its weights are
    replicated on each rank; only routed experts are split.
    """
    wb = plan.weight_bytes if plan.weight_bytes > 0 else 2.0
    rep = 1 if dp else t
    body16 = body_16bit(model, pc) if wb < 2.0 else 0.0
    extra16 = body16 * (2.0 - wb)  # bytes the 16-bit part adds over the format
    body_card = pc.body / rep
    head_card = pc.lm_head / rep
    emb_card = pc.embedding / rep
    exp_card = pc.experts_total / t
    head_bytes = 0.0 if model.tie_embeddings else head_card * 2.0
    weights_card = (body_card + exp_card) * wb + extra16 / rep + emb_card * 2.0 + head_bytes
    weights_replica = (
        weights_card * t
        if dp
        else (
            (pc.body + pc.experts_total) * wb
            + extra16
            + (pc.embedding + (0.0 if model.tie_embeddings else pc.lm_head)) * 2.0
        )
    )
    return _Weights(
        wb, body_card, body16, body_card * wb + extra16 / rep, head_card, exp_card,
        weights_card, weights_replica,
    )  # fmt: skip


def body_16bit(model: ModelArch, pc: ParamCounts) -> float:
    """Body parameters a quantized checkpoint leaves 16-bit: none; with
    ``experts_only_quantized`` the whole body (attention, router, dense and shared MLPs: all
    but the routed experts, which are counted apart); with ``ffn_only_quantized`` every
    attention projection and the rest of the first and last layers (their MLPs)."""
    if model.experts_only_quantized:
        return pc.body
    if not model.ffn_only_quantized or model.n_layers <= 0:
        return 0.0
    per_layer_rest = (pc.body - pc.attention) / model.n_layers
    return pc.attention + min(2, model.n_layers) * per_layer_rest


def window_layers(model: ModelArch) -> int:
    """Layers whose attention is limited to ``model.sliding_window`` tokens (0 if none)."""
    if model.sliding_window <= 0:
        return 0
    return min(max(model.sliding_window_layers, 0), model.n_attention_layers)


def _kv_token_bytes(
    model: ModelArch, kv_b: float, t: int, dp: bool, notes: list[str]
) -> tuple[float, float]:
    """Step 3: KV-cache bytes per token per card, ``(full-context layers, window layers)``
    (sharding rules in the module docstring)."""
    # MLA latent: one copy per rank unless ranks own their sequences (attention DP)
    shard_tp = 1 if model.attention == "mla" else min(t, model.n_kv_heads)
    shard = t if dp else shard_tp
    per_layer = model.kv_elements_per_token_layer * (kv_b if kv_b > 0 else 2.0) / shard
    n_w = window_layers(model)
    kv_full, kv_win = (model.n_attention_layers - n_w) * per_layer, n_w * per_layer
    if model.attention == "mla" and t > 1 and not dp:
        notes.append("MLA latent KV cache replicated on every tensor-parallel rank")
    elif model.attention != "mla" and t > model.n_kv_heads and not dp:
        notes.append(
            f"tensor parallel {t} > {model.n_kv_heads} KV heads: KV heads replicated "
            f"{t // model.n_kv_heads}x"
        )
    return kv_full, kv_win


def _ssm_state_bytes(model: ModelArch, t: int) -> float:
    """Step 3b: bytes per card of one sequence's Mamba-2 state (0 without Mamba-2 layers):
    the recurrent state (fp32 when the checkpoint asks for it) and the convolution's last
    inputs, split across the ``t`` ranks with the heads (a single group of B/C projections is
    replicated on every rank, as vLLM does)."""
    if not model.ssm_layers:
        return 0.0
    recurrent = model.ssm_state_elements * (4.0 if model.ssm_state_fp32 else ACT_BYTES) / t
    # B and C are split with their groups, or replicated on every rank when there is one group
    groups = model.ssm_groups / t if model.ssm_groups % t == 0 else float(model.ssm_groups)
    conv_channels = model.ssm_inner / t + 2.0 * groups * model.ssm_state_size
    conv = conv_channels * max(model.ssm_conv_kernel - 1, 0) * ACT_BYTES
    return model.ssm_layers * (recurrent + conv)


def ssd_flops_per_token(model: ModelArch) -> float:
    """FLOPs per prompt token of the Mamba-2 chunked scan (SSD) over all Mamba-2 layers, one
    replica: per chunk of ``Q`` tokens, ``C B^T`` per group (``Q n`` per token), its masked
    product with x per head (``Q p``), the chunk's state (``n p``) and the state's output
    (``n p``); two FLOPs per multiply-add. A decoding token's recurrence is smaller (``~3 n p``
    per head) and is charged the same."""
    if not model.ssm_layers:
        return 0.0
    q, n, p = model.ssm_chunk, model.ssm_state_size, model.ssm_head_dim
    per_layer = 2.0 * (model.ssm_groups * q * n + model.ssm_heads * (q * p + 2 * n * p))
    return model.ssm_layers * per_layer


def _activations(
    model: ModelArch, profile: EngineProfile, cal: Calibration, t: int, dp: bool
) -> tuple[float, float]:
    """Step 4: ``(bytes per token of the iteration budget, fixed bytes)`` per card.

    Sized by the per-iteration token budget T (the engine allocates them up front): residual
    streams and QKV (4 d), the MLP intermediate (gated: 2 ffn / t), and for MoE the permuted
    token copies and expert intermediates of the k routed copies of each token (all ranks'
    tokens under attention DP). Plus a fp32 logits buffer for the decode batch. Scaled by the
    fitted ``act_scale``; a physically motivated estimate, not a count of any one engine's
    buffers.
    """
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
    return act_tok, act_fixed


def _rates(gpu: GpuSpec, hw: _Hardware, cal: Calibration) -> _Rates:
    """Step 5: achieved rates: datasheet peaks times the group's and engine's fitted
    efficiencies and the derate (a non-positive rate becomes 1 so the times stay finite)."""
    group, ec, derate, plan = hw.group, hw.ec, hw.derate, hw.plan
    bw = gpu.memory_bandwidth_gbps * 1e9 * group.eta_m * ec.eff_memory * derate
    f16 = plan.attn_tflops * 1e12 * group.eta_c * ec.eff_compute * derate
    fg = (
        plan.gemm_tflops * 1e12 * group.eta_c * ec.eff_compute * derate * cal.gemm_eff(plan.fp_kind)
    )
    f_attn = f16 * cal.attn_eff
    f_moe = fg * cal.moe_gemm_eff * ec.moe_eff
    if bw <= 0 or fg <= 0 or f16 <= 0:
        bw = bw if bw > 0 else 1.0
        fg = fg if fg > 0 else 1.0
        f16 = f16 if f16 > 0 else 1.0
        f_attn = f_attn if f_attn > 0 else 1.0
        f_moe = f_moe if f_moe > 0 else 1.0
    return _Rates(bw, fg, f16, f_attn, f_moe)


def _attention_flops(model: ModelArch, t: int, n_l: int) -> tuple[float, float]:
    """Step 6: per card over ``n_l`` layers, ``(decode FLOPs per context token, prefill FLOPs per
    prompt token per prompt length)`` (causal prefill halves the square; MLA decode runs
    absorbed)."""
    if model.attention == "mla":
        qk_pf = model.n_heads * (model.qk_nope_head_dim + model.qk_rope_head_dim)
        v_pf = model.n_heads * model.v_head_dim
        qk_dec = model.n_heads * (model.kv_lora_rank + model.qk_rope_head_dim)
        v_dec = model.n_heads * model.kv_lora_rank
    else:
        qk_pf = v_pf = qk_dec = v_dec = model.n_heads * model.head_dim
    attn_dec_flops = 2.0 * n_l * (qk_dec + v_dec) / t
    attn_pf_flops = 1.0 * n_l * (qk_pf + v_pf) / t  # per prompt token per prompt length (causal)
    return attn_dec_flops, attn_pf_flops


def allreduce_algorithms(
    link: LinkPlan, cal: Calibration, t: int
) -> tuple[tuple[float, float], ...]:
    """The all-reduce algorithms a group of ``t`` cards has on ``link``, each as
    ``(latency seconds, seconds per byte of message)``; the engines pick the fastest per message
    size, so an all-reduce of ``m`` bytes takes ``min(lat + m * per_byte)`` (
    :func:`allreduce_seconds`).

    With ``lat`` the per-step latency of the link (one synchronised exchange:
    ``nvlink_latency_us`` on NVLink-class links, ``pcie_latency_us`` on PCIe) and ``B`` the
    bandwidth a card drives into the group (``LinkPlan.gbps_per_direction`` times the fitted
    efficiency):

    * ring (PCIe, partial meshes): ``2 (t - 1)`` steps, each card moves ``2 (t - 1) / t`` of
      the message (NCCL ring; vLLM's custom all-reduce is disabled on more than two PCIe cards,
      github.com/vllm-project/vllm/issues/56128). The latency grows with the group. On PCIe
      without peer-to-peer each step goes through host memory: latency and seconds per byte
      both times ``PCIE_HOST_STAGING_FACTOR``.
    * switched or fully meshed (every pair reachable in one hop): one-shot, 1 step, each card
      reads the ``t - 1`` peer buffers (``(t - 1) m / B``); two-shot, 2 steps (reduce-scatter +
      all-gather), ``2 (t - 1) / t m / B``. vLLM's custom all-reduce (github.com/vllm-project/
      vllm/pull/2192) and TensorRT-LLM's one-shot/two-shot kernels (AllReduceStrategy AUTO)
      switch between them by size; NVIDIA's "3x Faster AllReduce with NVSwitch and TensorRT-LLM
      MultiShot" (developer.nvidia.com blog, 2024) replaces the 2 (t - 1) ring steps by two.
      The latency does not grow with ``t``.
    * NVLink SHARP (``LinkPlan.nvls``, Hopper/Blackwell NVSwitch): 2 steps, the switch
      reduces, so each card sends and receives about the message once (``m / B``); NCCL NVLS
      measures ~6 us on small messages of 8 x H100 (github.com/NVIDIA/nccl/issues/1259).
    """
    if t <= 1 or link.kind == "none":
        return ()
    nv = link.kind == "nvlink"
    lat = (cal.nvlink_latency_us if nv else cal.pcie_latency_us) * 1e-6
    eff = cal.nvlink_bw_eff if nv else cal.pcie_bw_eff
    per_byte = 1.0 / (link.gbps_per_direction * 1e9 * eff)
    ring = 2.0 * (t - 1) / t
    if not nv and not link.peer_to_peer:
        lat *= PCIE_HOST_STAGING_FACTOR
        per_byte *= PCIE_HOST_STAGING_FACTOR
    if not nv or link.topology == "ring":
        return ((2 * (t - 1) * lat, ring * per_byte),)
    algos = [(lat, (t - 1) * per_byte), (2.0 * lat, ring * per_byte)]
    if link.nvls:
        algos.append((2.0 * lat, per_byte))
    return tuple(algos)


def allreduce_seconds(algos: tuple[tuple[float, float], ...], nbytes: float) -> float:
    """Seconds of one all-reduce of ``nbytes`` with the fastest of ``algos`` (0 without any)."""
    best = 0.0
    for i, (lat, per_byte) in enumerate(algos):
        c = lat + per_byte * nbytes
        if i == 0 or c < best:
            best = c
    return best


def _communication(
    model: ModelArch, link: LinkPlan, cal: Calibration, t: int, dp: bool
) -> tuple[int, tuple[tuple[float, float], ...]]:
    """Step 7: ``(collectives per iteration, algorithms as (latency s, seconds per token))``.

    Tensor parallelism needs an all-reduce of ``tokens x d x b_a`` bytes after every residual
    block (:attr:`ModelArch.n_sublayers`: after attention and after the MLP, two per layer of
    a transformer; after each Mamba-2 mixer too); attention DP + expert sharding needs one
    all-reduce-sized exchange per layer (token dispatch/combine around the experts). Algorithms:
    :func:`allreduce_algorithms`.
    """
    algos = allreduce_algorithms(link, cal, t)
    if not algos:
        return 0, ()
    tok_bytes = model.hidden_size * ACT_BYTES
    n_coll = model.n_layers if dp else model.n_sublayers
    return n_coll, tuple((lat, per_byte * tok_bytes) for lat, per_byte in algos)


@lru_cache(maxsize=8192)
def build_setup(
    model: ModelArch, dep: Deployment, profile: EngineProfile, cal: Calibration
) -> Setup:
    """Derive every coefficient of ``iteration.iteration_time`` and the memory plan (pure,
    memoised), in the steps listed in the module docstring."""
    t = max(1, dep.tensor_parallel)
    notes: list[str] = []
    hw = _hardware(model, dep, profile, cal, t, notes)
    pc = param_counts(model)
    dp = profile.attention_dp_moe and model.is_moe and t > 1
    if dp:
        notes.append(
            "MoE with attention data parallelism: every non-expert weight replicated per rank, "
            "routed experts sharded, each rank runs its own sequences"
        )
    w = _weights(model, pc, hw.plan, t, dp)
    if w.body16 > 0:
        kept, quantized = (
            ("attention and the router", "the routed experts")
            if model.experts_only_quantized
            else ("attention and the first and last layers", "the other MLPs")
        )
        notes.append(
            f"{model.id}: the checkpoint keeps {kept} 16-bit ({w.body16 / 1e9:.1f}B of its "
            f"parameters), only {quantized} are {dep.precision}"
        )
    kv_full, kv_win = _kv_token_bytes(model, hw.kv_b, t, dp, notes)
    state_seq = _ssm_state_bytes(model, t)
    if state_seq:
        notes.append(
            f"{model.id}: {model.ssm_layers} Mamba-2 layers hold {state_seq / 1e6:.1f} MB of "
            f"state per sequence per card, read and written every iteration; "
            f"{model.n_attention_layers} attention layers hold a KV cache"
        )
    n_w = window_layers(model)
    window = model.sliding_window if n_w else 0
    if n_w:
        held = "its window" if profile.window_kv else "full length (this engine does not shrink it)"
        notes.append(
            f"{model.id} limits attention to {window} tokens on {n_w} of "
            f"{model.n_attention_layers} "
            f"layers: their KV cache holds {held}"
        )
    # engines without window-sized KV allocate window layers at full length
    kv_token, kv_alloc_win = (kv_full, kv_win) if profile.window_kv else (kv_full + kv_win, 0.0)
    act_tok, act_fixed = _activations(model, profile, cal, t, dp)
    capacity = memory_bytes(dep.gpu)
    r = _rates(dep.gpu, hw, cal)
    attn_dec_flops, attn_pf_flops = _attention_flops(model, t, model.n_attention_layers - n_w)
    attn_dec_win, attn_pf_win = _attention_flops(model, t, n_w)
    n_coll, coll = _communication(model, hw.link, cal, t, dp)
    ec = hw.ec
    der_oh = 1.0 / hw.derate if hw.derate > 0 else 1.0
    # expert parallelism (attention DP shards experts by expert): the busiest rank sets the pace
    imb = cal.ep_imbalance if dp else 1.0
    ranks = t if dp else 1
    return Setup(
        reject=hw.reject,
        notes=tuple(notes),
        tp=t,
        capacity_b=capacity,
        weights_b=w.card_b,
        weights_replica_b=w.replica_b,
        act_fixed_b=act_fixed,
        act_tok_b=act_tok,
        reserve_b=cal.reserve_gb * 1e9 + cal.reserve_frac * capacity,
        kv_fraction=profile.kv_fraction,
        kv_fraction_of_free=profile.kv_fraction_of == "free",
        kv_token_b=kv_token,
        kv_win_b=kv_alloc_win,
        state_seq_b=state_seq,
        window=window,
        w_dense_s=(w.body_card_b + w.head_card * 2.0) / r.bw,
        w_exp_s=w.exp_card * w.wb / r.bw * imb,
        n_exp=model.n_experts,
        top_k=model.experts_per_token,
        g_dense_tok_s=2.0 * ((pc.body - w.body16) / t / r.fg + w.body16 / t / r.f16)
        + ssd_flops_per_token(model) / t / r.f16,
        g_head_tok_s=2.0 * (pc.lm_head / t) / r.f16,
        g_exp_tok_s=2.0 * (pc.experts_active / t) / r.f_moe * imb if model.is_moe else 0.0,
        kv_ctx_s=kv_full / (r.bw * cal.kv_read_eff),
        attn_dec_ctx_s=attn_dec_flops / r.f_attn,
        attn_pf_s=attn_pf_flops / r.f_attn,
        kv_win_ctx_s=kv_win / (r.bw * cal.kv_read_eff),
        state_seq_s=2.0 * state_seq / r.bw,
        attn_dec_win_s=attn_dec_win / r.f_attn,
        attn_pf_win_s=attn_pf_win / r.f_attn,
        n_coll=n_coll,
        coll=coll,
        oh_step_s=(
            ec.step_overhead_ms * 1e-3 + ec.layer_overhead_us * 1e-6 * model.n_sublayers / 2.0
        )
        * der_oh,
        cpu_seq_s=ec.seq_overhead_us * 1e-6 * der_oh,
        host_serial=not profile.host_overlap,
        ttft_oh_s=min(ec.ttft_overhead_ms * der_oh, REQUEST_HANDLING_MAX_MS) * 1e-3,
        max_batch=profile.max_batch * ranks,
        max_num_tokens=profile.max_num_tokens * ranks,
        auto_token_cap=profile.auto_token_cap * ranks,
        chunked=profile.chunked_prefill,
        prefill_first=profile.prefill_first,
        full_reservation=profile.full_reservation,
    )
