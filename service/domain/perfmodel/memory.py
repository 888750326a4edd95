"""The memory plan of one card: weights, activations, runtime reserve and the KV-cache pool,
and the running batch they allow.

Memory per card: usable bytes ``M`` (``hardware.memory_bytes``), weights ``W`` and KV bytes per
token (``coefficients``), activations ``act`` sized by the per-iteration token budget,
``reserve = reserve_gb + reserve_frac M``. The KV pool is ``f (M - W - act - reserve)``
(fraction of free memory, TensorRT-LLM) or ``f M - W - act - reserve`` (fraction of total,
vLLM/SGLang/TGI). A sequence holds ``L_in + L_out`` tokens (full reservation) or
``L_in + L_out/2`` on average (paged); ``T`` tokens of a sequence take ``kv T + kv_w min(T, W)``
bytes, ``kv_w`` being the sliding-window layers when the engine sizes their cache to the window
``W`` (``coefficients``), plus the fixed Mamba-2 state of a hybrid model's sequence
(``state``, whatever its length).

Bytes per card; tokens; sequences. Pure: no I/O.
"""

from __future__ import annotations

from service.domain.perfmodel.coefficients import Setup

__all__ = [
    "activation_bytes",
    "beside_decode_share",
    "kv_pool_bytes",
    "memory_batch_cap",
    "sequence_kv_bytes",
    "token_budget",
    "token_budget_cap",
    "tokens_per_sequence",
    "usable_bytes",
]


def tokens_per_sequence(s: Setup, l_in: int, l_out: int) -> float:
    """KV tokens charged per running sequence (full reservation or paged mean residency)."""
    return float(l_in + l_out) if s.full_reservation else l_in + l_out / 2.0


def sequence_kv_bytes(s: Setup, tokens: float) -> float:
    """KV-cache bytes per card that one sequence of ``tokens`` tokens holds (with its Mamba-2
    state, in a hybrid model)."""
    return s.kv_token_b * tokens + s.kv_win_b * min(tokens, float(s.window)) + s.state_seq_b


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
    per_seq = sequence_kv_bytes(s, float(l_in + l_out))
    seqs = s.kv_fraction * free / per_seq if per_seq > 0 else 0.0
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
    per_seq = sequence_kv_bytes(s, tokens_per_sequence(s, l_in, l_out))
    if pool <= 0.0 or per_seq <= 0.0:
        return 0
    return int(pool / per_seq)


def beside_decode_share(s: Setup, l_in: int, l_out: int) -> float:
    """Share of the other requests' prompt work that can run beside one request's decode.

    A prompt is prefilled into KV blocks. While a sequence decodes in a pool that holds fewer
    than two sequences (``n = pool / per-sequence`` in ``[1, 2)``), the next request can take
    only the blocks that sequence leaves free, so at most ``n - 1`` of its prompt is prefilled
    beside that decode (paged engines fill free blocks; a reserving engine admits none: the
    free blocks are the upper bound); the rest runs once the sequence completes, in iterations
    with no decode. With room for two or more sequences every prompt can be prefilled beside
    running decodes, and all of the prompt work is charged to them (1.0). Not even one
    sequence fitting is the caller's rejection (1.0 here).
    """
    pool = kv_pool_bytes(s, l_in, l_out)
    per_seq = sequence_kv_bytes(s, tokens_per_sequence(s, l_in, l_out))
    if pool <= 0.0 or per_seq <= 0.0:
        return 1.0
    return min(max(pool / per_seq - 1.0, 0.0), 1.0)


def token_budget_cap(s: Setup, l_in: int, l_out: int) -> float:
    """Largest decode batch the per-iteration token budget sustains in steady state.

    Each iteration carries ``B`` decode tokens and, on average, ``B L_in / (L_out - 1)`` prompt
    tokens, so ``B (1 + L_in / (L_out - 1)) <= max_num_tokens``. With ``max_num_tokens = 0``
    (trtllm-bench) the budget is sized to the batch up to ``auto_token_cap``.
    """
    n_dec = max(l_out - 1, 1)
    return token_budget(s, l_in, l_out) / (1.0 + l_in / n_dec)
