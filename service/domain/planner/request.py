"""What a fleet request asks for (pure values; units in the names).

A *replica* is one model instance over ``tensor_parallel`` cards; a *card* is one GPU; ``qps`` is
requests per second; a *line* of a fleet is one (GPU, tensor-parallel degree, price offer)
with its replica count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from service.domain.llm import ResolvedModel
from service.domain.perfmodel import Engine, KvPrecision, Precision, Slo
from service.domain.vocabulary import PricingChoice

HOURS_PER_MONTH = 730.0


@dataclass(frozen=True, slots=True)
class OwnedCost:
    """Cost model of owned cards (``pricing = owned``).

    Per card-hour: ``purchase_usd / (amortization_months * 730)`` plus
    ``tdp_w * pue * usd_per_kwh / 1000``. Defaults: 36 months (a common straight-line
    depreciation period for servers), 0.12 USD/kWh (a typical US commercial tariff) and PUE 1.3
    (a typical modern data centre); all three are request parameters.
    """

    amortization_months: float = 36.0
    usd_per_kwh: float = 0.12
    pue: float = 1.3


@dataclass(frozen=True, slots=True)
class WorkloadBucket:
    """One request shape of the workload and its share of the total QPS (shares sum to 1)."""

    key: str
    share: float
    prompt_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class PlanConstraints:
    """What the fleet may use. GPU ids are resolved catalog ids; ``None`` means "any".
    ``pricing = "owned"`` amortises purchase prices and adds power (``owned``)."""

    gpus: tuple[str, ...] | None = None
    exclude_gpus: tuple[str, ...] = ()
    providers: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None
    pricing: PricingChoice = "on_demand"
    max_cards: tuple[tuple[str, int], ...] = ()
    allow_mix: bool = True
    headroom: float = 0.0
    min_replicas: int = 1
    tensor_parallel: tuple[int, ...] = (1, 2, 4, 8)
    allow_pcie_tensor_parallel: bool = False
    owned: OwnedCost = field(default_factory=OwnedCost)


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """A fleet request with every default filled (the canonical form the plan id hashes)."""

    model: ResolvedModel
    precision: Precision
    kv_precision: KvPrecision
    engine: Engine
    qps: float
    buckets: tuple[WorkloadBucket, ...]
    slo: Slo
    budget_usd_per_hour: float | None = None
    constraints: PlanConstraints = field(default_factory=PlanConstraints)
    as_of: datetime | None = None
    time_limit_s: float = 2.0

    def demand_qps(self, bucket: WorkloadBucket) -> float:
        return self.qps * bucket.share
