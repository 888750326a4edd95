"""What a fleet request asks for (pure values; units in the names).

``PlanRequest`` is the *canonical* request: every default filled, GPU names resolved to catalog
ids, lists sorted and de-duplicated, the request mix merged and normalised, a budget in USD per
hour. ``canonical.canonical_request`` builds it from a ``draft.PlanDraft`` (what a caller gave);
``identity`` encodes it deterministically and hashes that to the plan id.

A *replica* is one model instance over ``tensor_parallel`` cards; a *card* is one GPU; ``qps`` is
requests per second; a *line* of a fleet is one (GPU, tensor-parallel degree, price offer)
with its replica count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from service.domain.llm import ResolvedModel
from service.domain.perfmodel import Slo
from service.domain.profiles.values import CalibrationProfile
from service.domain.providers import DEFAULT_PROVIDERS
from service.domain.vocabulary import Engine, KvPrecision, Precision, PricingChoice, RoutingMode

HOURS_PER_MONTH = 730.0


@dataclass(frozen=True, slots=True)
class OwnedCost:
    """Cost model of owned cards (``pricing = owned``).

    Per card-hour: ``purchase_usd / (amortization_months * 730)`` plus
    ``tdp_w * pue * usd_per_kwh / 1000``. Defaults: 36 months (a common straight-line
    depreciation period for servers), 0.12 USD/kWh (a typical US commercial tariff) and PUE 1.3
    (a typical modern data centre); all three are request parameters.

    ``card_usd`` pairs (GPU id, USD per card): the caller's own purchase price, used for that
    GPU instead of the catalog's purchase prices. ``usd_per_kwh_by_gpu`` pairs (GPU id, USD per
    kWh): the power price where that GPU's cards run, instead of ``usd_per_kwh``. Both sorted by
    GPU id once canonical; in a draft the names may be aliases.
    """

    amortization_months: float = 36.0
    usd_per_kwh: float = 0.12
    pue: float = 1.3
    card_usd: tuple[tuple[str, float], ...] = ()
    usd_per_kwh_by_gpu: tuple[tuple[str, float], ...] = ()

    def kwh_price(self, gpu_id: str) -> float:
        """USD per kWh for cards of ``gpu_id``."""
        return dict(self.usd_per_kwh_by_gpu).get(gpu_id, self.usd_per_kwh)


@dataclass(frozen=True, slots=True)
class MixingPolicy:
    """When a fleet may mix GPU types.

    * ``max_gpu_types`` (default 2): each GPU type is another node pool, image and on-call
      runbook; two covers the usual "big card for long prompts, small card for the rest".
    * ``min_mix_savings_percent`` (default 10): a mixed fleet is returned only when it costs at
      least this much less than the cheapest single-type fleet, since below that the saving
      is within the performance model's own error and does not pay for a second pool.
    * ``allow_mixed_vendors`` (default False): NVIDIA and AMD cards need different images,
      drivers and engine builds; a fleet stays with one vendor unless this is set.
    """

    max_gpu_types: int = 2
    min_mix_savings_percent: float = 10.0
    allow_mixed_vendors: bool = False


@dataclass(frozen=True, slots=True)
class Spread:
    """Where the fleet must be spread. ``min_providers`` / ``min_regions`` (a region is a
    provider's): the fleet uses at least that many; from 2 up it also survives losing any one
    of them, the rest carrying the whole target load (headroom included) within the SLO.
    1 (the default): no condition, since one provider is what most teams buy from."""

    min_providers: int = 1
    min_regions: int = 1

    @property
    def asked(self) -> bool:
        """Whether any condition is set (a value of 2 or more)."""
        return self.min_providers >= 2 or self.min_regions >= 2


@dataclass(frozen=True, slots=True)
class PlanPolicy:
    """How this service plans beyond what a request says (service settings): part of every
    plan's id, since it changes the answer, but not of the canonical request a caller can POST
    again.

    ``default_providers``: provider kinds or ids a request that names no providers may use
    (``GPUPLAN_DEFAULT_PROVIDERS``; ``providers.allowed_by_policy``). ``price_max_age_days``:
    a fleet line whose price was observed more than this many days before the plan's
    prices-as-of moment is flagged in the explanation (``GPUPLAN_PRICE_MAX_AGE_DAYS``; ``None``:
    never)."""

    default_providers: tuple[str, ...] = DEFAULT_PROVIDERS
    price_max_age_days: int | None = 180

    def key(self) -> str:
        """A stable spelling of the policy for the plan id."""
        age = "off" if self.price_max_age_days is None else str(self.price_max_age_days)
        return f"providers={','.join(self.default_providers)};max_age_days={age}"


@dataclass(frozen=True, slots=True)
class PlanDefaults:
    """Server-wide defaults for what a request leaves out (``GPUPLAN_*`` settings).
    ``headroom`` ``None``: derived per GPU family from the model's validation error
    (``perfmodel.headroom``). ``policy``: which providers a request naming none may use and
    when a price is too old (:class:`PlanPolicy`)."""

    headroom: float | None = None
    mixing: MixingPolicy = field(default_factory=MixingPolicy)
    policy: PlanPolicy = field(default_factory=PlanPolicy)


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
    ``pricing = "owned"`` amortises purchase prices and adds power (``owned``). ``headroom``
    ``None``: each card's capacity is derated by the model's validation error for its GPU
    family and the engine (``perfmodel.headroom``); a number applies that fraction to every
    card. ``min_replicas``: every fleet line (GPU, tensor-parallel degree, offer) hosts at least
    this many replicas. ``spread``: how many providers and regions the fleet spans and
    survives losing (:class:`Spread`)."""

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
    mixing: MixingPolicy = field(default_factory=MixingPolicy)
    allow_marketplaces: bool = False
    spread: Spread = field(default_factory=Spread)


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """A fleet request with every default filled (the canonical form the plan id hashes).

    ``model_spec`` is a custom model as the caller gave it (``{"params_b": ...}`` or
    ``{"hf_config": {...}}``); ``None`` for a preset, which is then named by
    ``model.arch.id``. ``time_limit_s`` (seconds per MILP solve) is how long to try, not part
    of what is asked: it is left out of the canonical encoding and so of the plan id.
    ``policy`` is the service's (settings), not the caller's: it is in the plan id, not in the
    canonical encoding a caller can POST again.
    ``engine_version`` is the engine build the plan runs on (canonically the resolved one, so a
    recalibration that changes the default build changes the plan id); ``None``: the newest.
    ``calibration``: the team's calibration profile (one version) whose corrections the
    capacities use; its ``name@vN`` is part of the identity, so a new version re-keys plans.
    ``routing``: ``by_shape`` (default) lets the planner send request shapes to different
    lines when that is cheaper; ``shared`` makes every line serve the whole mix (any line may
    take any request), priced as such.
    """

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
    engine_version: str | None = None
    model_spec: Mapping[str, Any] | None = field(default=None, hash=False)
    policy: PlanPolicy = field(default_factory=PlanPolicy)
    calibration: CalibrationProfile | None = None
    routing: RoutingMode = "by_shape"

    def demand_qps(self, bucket: WorkloadBucket) -> float:
        return self.qps * bucket.share
