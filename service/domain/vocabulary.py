"""The closed vocabularies of gpuplan, each defined once: wire types, database checks, CLI
choices and the performance model all import these names.

Adding a value here is the whole change for a spelling; what a new engine or precision *means*
lives in ``perfmodel`` (see CONTRIBUTING.md for the checklists).
"""

from __future__ import annotations

from typing import Literal, TypeVar, get_args

Precision = Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"]
"""Weight (and, where the card supports it, GEMM compute) format."""
KvPrecision = Literal["bf16", "fp16", "fp8"]
"""KV-cache element format."""
Engine = Literal["vllm", "trtllm", "sglang", "tgi"]
"""Serving engine whose calibrated constants an estimate uses."""
Bottleneck = Literal[
    "compute", "memory_bandwidth", "interconnect", "kv_capacity", "batch_limit", "token_budget"
]
"""What limits one engine iteration (or the batch) at the estimated operating point: a
resource, or at saturation the limit that caps the running batch (KV cache, the engine's
``max_num_seqs``/``max_batch_size``/``max_running_requests``, its per-iteration token budget)."""
AttentionKind = Literal["mha", "gqa", "mla"]
"""Multi-head, grouped-query or multi-head latent attention."""
TensorParallel = Literal[1, 2, 4, 8, 16, 32, 64, 72]
"""Tensor-parallel degrees a request may allow."""
PricingChoice = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "owned"]
"""How a fleet request pays for cards (``owned`` amortises purchase prices)."""
PriceKindName = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "purchase"]
"""The kind of one price observation in the catalog (``purchase`` is per card, not per hour)."""
RoutingMode = Literal["by_shape", "shared"]
"""How requests reach fleet lines: ``by_shape``, shapes may be split across lines (the gateway
routes by length); ``shared``, every line serves the whole request mix."""
PlanStatusName = Literal["optimal", "over_budget", "infeasible", "time_limit", "no_price"]
"""The outcome of a plan solve; ``no_price``: no allowed GPU has a price of the pricing kind the
request asks for (nothing was solved, so nothing is said about the SLO)."""

PRECISIONS: tuple[Precision, ...] = get_args(Precision)
KV_PRECISIONS: tuple[KvPrecision, ...] = get_args(KvPrecision)
ENGINES: tuple[Engine, ...] = get_args(Engine)
TENSOR_PARALLEL_DEGREES: tuple[TensorParallel, ...] = get_args(TensorParallel)
PRICING_CHOICES: tuple[PricingChoice, ...] = get_args(PricingChoice)
PRICE_KIND_NAMES: tuple[PriceKindName, ...] = get_args(PriceKindName)
ROUTING_MODES: tuple[RoutingMode, ...] = get_args(RoutingMode)

T = TypeVar("T", bound=str)


def one_of(choices: tuple[T, ...], raw: str, what: str) -> T:
    """``raw`` as a member of ``choices`` (a vocabulary's tuple above), or ``ValueError`` saying
    what was expected. Narrows a plain string to the Literal type, for parsers of text input."""
    for choice in choices:
        if choice == raw:
            return choice
    raise ValueError(f"unknown {what} {raw!r}; expected one of {', '.join(choices)}")
