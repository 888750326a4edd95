"""The serving engines' default batch and KV-cache limits, resolved for one card and model.

A plain ``engine`` in an estimate means that engine as it starts with no flags. Some of its
defaults depend on the card (and for SGLang on the model), so the public profile (documented
structure in ``calibration``) is specialised here before the memory plan and batch caps use it
(:func:`card_profile`). Profiles passed explicitly (``estimate_with``, the benchmark harnesses
with their own flags) are taken as they are.

* vLLM V1 (chunked prefill, 0.8 and later): the OpenAI server's ``max_num_seqs`` /
  ``max_num_batched_tokens`` are 1024 / 8192 on cards with at least 70 GiB that are not A100s,
  256 / 2048 elsewhere (``EngineArgs.get_batch_defaults`` in ``vllm/engine/arg_utils.py``; the
  A100 exception follows vLLM PR #17885, where the larger budget lowered A100 throughput);
  ``gpu_memory_utilization`` 0.9 of the card's memory holds weights, activations and the KV
  cache. vLLM V0 (no chunked prefill): 256 sequences on every card.
* SGLang (``ServerArgs._handle_gpu_memory_settings`` in ``python/sglang/srt/server_args.py``,
  the GPU-memory heuristic of sglang PR #10975): with the card's memory ``G`` in MiB,
  ``chunked_prefill_size`` is 2048 below 35 GiB, 4096 below 60 GiB, 8192 below 160 GiB and
  16384 above; ``cuda_graph_max_bs`` 8 below 20 GiB, 24/80 (TP < 4 / >= 4) below 35 GiB,
  32/160 below 60 GiB, 256/512 below 160 GiB, 512 above; the reserve is
  ``512 + 1.5 max(chunked_prefill_size, 2048) + 2 cuda_graph_max_bs + 1024 TP / 8`` MiB, at
  least 10 GiB on cards over 60 GiB, and ``mem_fraction_static = round((G - reserve) / G, 3)``
  (0.836 on an H100 80GB, 0.907 on an H200). That fraction holds weights and the KV pool; the
  activations live in the reserve, so the KV fraction handed to the memory plan (which takes
  activations out separately) is ``mem_fraction_static + activations / M``.
  ``max_running_requests`` is ``min(pool // 2, clamp(pool / context_len * 512, 2048, 4096))``
  for a pool of ``pool`` KV tokens (``Scheduler.__init__`` and ``ModelRunner.init_memory_pool``).
* TensorRT-LLM (``trtllm-serve``, ``tensorrt_llm/commands/serve.py``): ``max_batch_size`` 2048
  and ``max_num_tokens`` 8192 (``BuildConfig`` defaults in ``tensorrt_llm/builder.py``), KV
  cache 0.9 of the memory free after weights and buffers, ``GUARANTEED_NO_EVICT``: the
  documented structure already, on every card.
* TGI: the documented structure on every card.

A specialised profile's note ends with the values it uses on the card, so the assumptions of an
estimate or a plan say which limits it assumed there.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from service.domain.llm import ModelArch
from service.domain.perfmodel.calibration import Calibration, EngineProfile
from service.domain.perfmodel.coefficients import build_setup
from service.domain.perfmodel.hardware import memory_bytes
from service.domain.perfmodel.memory import activation_bytes, kv_pool_bytes
from service.domain.perfmodel.values import Deployment

__all__ = [
    "VLLM_LARGE_CARD_GIB",
    "card_profile",
    "sglang_memory_settings",
    "sglang_running_requests",
    "vllm_batch_defaults",
]

GIB = 1024.0**3
MIB = 1024.0**2
VLLM_LARGE_CARD_GIB = 70.0


def vllm_batch_defaults(gpu_name: str, device_bytes: float) -> tuple[int, int]:
    """vLLM V1 OpenAI-server ``(max_num_seqs, max_num_batched_tokens)`` on a card."""
    if device_bytes >= VLLM_LARGE_CARD_GIB * GIB and "a100" not in gpu_name.lower():
        return 1024, 8192
    return 256, 2048


def sglang_memory_settings(device_bytes: float, tp: int) -> tuple[float, int]:
    """SGLang's ``(mem_fraction_static, chunked_prefill_size)`` for a card of ``device_bytes``
    in a tensor-parallel group of ``tp`` (see the module docstring)."""
    g = device_bytes / MIB
    if g < 20 * 1024:
        chunk, graph_bs = 2048, 8
    elif g < 35 * 1024:
        chunk, graph_bs = 2048, (24 if tp < 4 else 80)
    elif g < 60 * 1024:
        chunk, graph_bs = 4096, (32 if tp < 4 else 160)
    elif g < 160 * 1024:
        chunk, graph_bs = 8192, (256 if tp < 4 else 512)
    else:
        chunk, graph_bs = 16384, 512
    reserve = 512.0 + 1.5 * max(chunk, 2048) + 2.0 * graph_bs + 1024.0 * tp / 8.0
    if g > 60 * 1024:
        reserve = max(reserve, 10.0 * 1024)
    return round((g - reserve) / g, 3), chunk


def sglang_running_requests(pool_tokens: float, context_len: int) -> int:
    """SGLang's default ``max_running_requests`` for a KV pool of ``pool_tokens`` tokens."""
    slots = min(max(int(pool_tokens / max(context_len, 1) * 512), 2048), 4096)
    return max(1, min(int(pool_tokens) // 2, slots))


@lru_cache(maxsize=2048)
def card_profile(
    model: ModelArch, dep: Deployment, profile: EngineProfile, cal: Calibration
) -> EngineProfile:
    """``profile`` (an engine's documented defaults) with the limits that engine derives from
    the card and model when started without flags (module docstring). Memoised."""
    t = max(1, dep.tensor_parallel)
    device = memory_bytes(dep.gpu)
    if dep.engine == "vllm" and profile.chunked_prefill:
        seqs, tokens = vllm_batch_defaults(dep.gpu.name, device)
        cards = (
            "cards of 70 GiB or more other than A100s"
            if seqs == 1024
            else "A100s and cards under 70 GiB"
        )
        limits = (
            f"max_num_seqs {seqs}, max_num_batched_tokens {tokens} on {dep.gpu.id} "
            f"(vLLM's defaults for {cards})"
        )
        return replace(
            profile, max_batch=seqs, max_num_tokens=tokens, note=_with(profile.note, limits)
        )
    if dep.engine != "sglang":
        return profile
    mfs, chunk = sglang_memory_settings(device, t)
    where = f"on {dep.gpu.id} (SGLang's defaults for its memory"
    settings = f"mem_fraction_static {mfs:.3f}, chunked_prefill_size {chunk}"
    sized = replace(
        profile,
        max_num_tokens=chunk,
        kv_fraction=mfs,
        kv_fraction_of="total",
        note=_with(profile.note, f"{settings} {where})"),
    )
    s = build_setup(model, dep, sized, cal)
    if s.reject or s.capacity_b <= 0.0:
        return sized
    # the budget is fixed, so activations (and the pool) do not depend on the request shape
    kv_fraction = mfs + activation_bytes(s, 1, 2) / s.capacity_b
    sized = replace(sized, kv_fraction=kv_fraction)
    s = build_setup(model, dep, sized, cal)
    pool = kv_pool_bytes(s, 1, 2)
    per_token = s.kv_token_b + s.kv_win_b  # a token held by every layer
    if pool <= 0.0 or per_token <= 0.0:
        return sized
    running = sglang_running_requests(pool / per_token, model.max_context)
    return replace(
        sized,
        max_batch=running,
        note=_with(
            profile.note, f"{settings}, max_running_requests {running} {where} and {model.id})"
        ),
    )


def _with(note: str, limits: str) -> str:
    """``note`` followed by the card's limits."""
    return f"{note}; {limits}" if note else limits
