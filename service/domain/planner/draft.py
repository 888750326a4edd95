"""A fleet request as a caller gave it, before canonicalisation (pure values).

Every entry point (the POST body, the ``GET /v1/plan`` query string, ``gpuplan plan``) turns
its input into a ``PlanDraft``; ``canonical.canonical_request`` turns a draft into the
canonical ``PlanRequest``. A draft may be inconsistent (a mix *and* a single shape, shares not
summing to 1, unknown GPU names): canonicalisation finds that and names the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from service.domain.perfmodel import Slo
from service.domain.planner.request import OwnedCost, Spread
from service.domain.vocabulary import Engine, KvPrecision, Precision, PricingChoice, RoutingMode


@dataclass(frozen=True, slots=True)
class MixShare:
    """One request shape and its share of the total QPS."""

    share: float
    prompt_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class WorkloadDraft:
    """``qps`` (requests/s) with one ``prompt_tokens``/``output_tokens`` pair, or a ``mix``."""

    qps: float
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    mix: tuple[MixShare, ...] | None = None


@dataclass(frozen=True, slots=True)
class BudgetDraft:
    """One of ``usd_per_hour`` or ``usd_per_month`` (730 hours) should be given."""

    usd_per_hour: float | None = None
    usd_per_month: float | None = None


@dataclass(frozen=True, slots=True)
class MixingDraft:
    """The mixing policy as asked; ``None`` takes the server's default."""

    max_gpu_types: int | None = None
    min_mix_savings_percent: float | None = None
    allow_mixed_vendors: bool | None = None


@dataclass(frozen=True, slots=True)
class ConstraintsDraft:
    """GPU names may be ids or aliases in any case; ``max_cards`` pairs (name, cards).
    ``headroom`` ``None`` takes the server's default (by default derived from the model's
    validation error)."""

    gpus: tuple[str, ...] | None = None
    exclude_gpus: tuple[str, ...] = ()
    providers: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None
    pricing: PricingChoice = "on_demand"
    max_cards: tuple[tuple[str, int], ...] = ()
    allow_mix: bool = True
    headroom: float | None = None
    min_replicas: int = 1
    tensor_parallel: tuple[int, ...] = (1, 2, 4, 8)
    allow_pcie_tensor_parallel: bool = True
    owned: OwnedCost = field(default_factory=OwnedCost)
    mixing: MixingDraft = field(default_factory=MixingDraft)
    allow_marketplaces: bool = False
    spread: Spread = field(default_factory=Spread)


DEFAULT_SLO = Slo(ttft_ms=None, tpot_ms=None, e2e_ms=None, percentile=95.0)


@dataclass(frozen=True, slots=True)
class PlanDraft:
    """What was asked. ``model`` is a preset id or alias, or a custom model mapping;
    ``precision`` ``None`` plans the format of the model's published checkpoint."""

    model: str | Mapping[str, Any]
    workload: WorkloadDraft
    precision: Precision | None = None
    kv_cache_precision: KvPrecision = "bf16"
    engine: Engine = "vllm"
    engine_version: str | None = None
    calibration: str | None = None
    slo: Slo = DEFAULT_SLO
    budget: BudgetDraft | None = None
    constraints: ConstraintsDraft = field(default_factory=ConstraintsDraft)
    as_of: datetime | None = None
    routing: RoutingMode = "by_shape"
