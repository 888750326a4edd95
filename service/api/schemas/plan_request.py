"""The POST /v1/plans body: wire types with their limits, and the domain draft they give.

Limits live here once, in ``Meta``: the OpenAPI schema, the ``GET /v1/plan`` query parameters
and the ``gpuplan plan`` options (``plan_fields``) all read them from these types.
Cross-field rules (mix or single shape, shares summing to 1, one budget unit, names known to
the catalog) are the domain's: ``service.domain.planner.canonical``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import Meta

from service.api.schemas.calibrations import CalibrationSpec
from service.api.schemas.common import WireIn
from service.api.schemas.models import ModelIn
from service.domain.moments import WINDOW
from service.domain.perfmodel import Slo
from service.domain.planner import (
    MIN_SHAPE_QPS,
    BudgetDraft,
    ConstraintsDraft,
    MixingDraft,
    MixShare,
    OwnedCost,
    PlanDraft,
    Spread,
    WorkloadDraft,
)
from service.domain.vocabulary import (
    Engine,
    KvPrecision,
    Precision,
    PricingChoice,
    RoutingMode,
    TensorParallel,
)

MAX_BUCKETS = 16
MAX_PLACES = 16
"""Most providers or regions a spread may ask for."""
MAX_TOKENS = 2_000_000
MIN_QPS = MIN_SHAPE_QPS
"""Requests per second, at least (see ``MIN_SHAPE_QPS``); each shape of a mix must carry it too."""

Tokens = Annotated[int, Meta(ge=1, le=MAX_TOKENS, description="Tokens per request.")]
Ms = Annotated[float, Meta(gt=0, le=3_600_000, description="Milliseconds.")]
GpuName = Annotated[str, Meta(min_length=1, max_length=64, description="GPU id or alias.")]
ShortName = Annotated[str, Meta(min_length=1, max_length=64)]
WeightPrecision = Annotated[
    Precision,
    Meta(
        description=(
            "Weight format to serve. Default: the format of the checkpoint named: a quantized "
            "checkpoint's name suffix (Qwen/Qwen3-32B-FP8, -AWQ, -GPTQ-Int8, -NVFP4), a pasted "
            "config.json's quantization_config, else the publisher's release (fp8 for "
            "DeepSeek-V3/R1/V3.1/V3.2 and Meta's Llama 3.1 405B FP8, fp4 for gpt-oss's MXFP4 "
            "experts, bf16 for the rest)."
        )
    ),
]
EngineVersion = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=16,
        pattern=r"^v?[0-9]{1,4}(\.[0-9]{1,4}){0,3}$",
        description=(
            'Engine release to model, e.g. "0.6" (patch releases share their minor series\'s '
            "build). Default: the newest calibrated build. An unknown one is a 422 listing the "
            "known ones."
        ),
    ),
]


class MixBucketIn(WireIn, kw_only=True):
    share: Annotated[
        float, Meta(gt=0, le=1, description="Share of the total QPS (shares sum to 1).")
    ]
    prompt_tokens: Tokens
    output_tokens: Tokens


class WorkloadIn(WireIn, kw_only=True):
    """The load: ``qps`` with one ``prompt_tokens``/``output_tokens`` pair, or a ``mix`` of
    request shapes whose shares sum to 1 (the mix replaces the pair)."""

    qps: Annotated[float, Meta(ge=MIN_QPS, le=1_000_000, description="Total requests per second.")]
    prompt_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    mix: Annotated[list[MixBucketIn], Meta(min_length=1, max_length=MAX_BUCKETS)] | None = None


class SloIn(WireIn, kw_only=True):
    """Latency limits at ``percentile``; leave one out for no limit on it."""

    ttft_ms: Ms | None = None
    tpot_ms: Ms | None = None
    e2e_ms: Ms | None = None
    percentile: Annotated[float, Meta(ge=50, le=99.9, description="e.g. 95 for p95.")] = 95.0


class BudgetIn(WireIn, kw_only=True):
    """One of ``usd_per_hour`` or ``usd_per_month`` (730 hours)."""

    usd_per_hour: Annotated[float, Meta(gt=0, le=100_000_000)] | None = None
    usd_per_month: Annotated[float, Meta(gt=0, le=100_000_000_000)] | None = None


class OwnedCostIn(WireIn, kw_only=True):
    """Cost of owned cards: amortised purchase plus power (defaults documented in README)."""

    amortization_months: Annotated[float, Meta(gt=0, le=240)] = 36.0
    usd_per_kwh: Annotated[float, Meta(ge=0, le=10)] = 0.12
    pue: Annotated[float, Meta(ge=1, le=5)] = 1.3
    card_usd: Annotated[
        dict[GpuName, Annotated[float, Meta(gt=0, le=10_000_000)]],
        Meta(
            max_length=64,
            description=(
                "Your purchase price in USD per card, by GPU id or alias: used for that GPU "
                "instead of the catalog's purchase prices (pricing=owned only)."
            ),
        ),
    ] = msgspec.field(default_factory=dict)
    usd_per_kwh_by_gpu: Annotated[
        dict[GpuName, Annotated[float, Meta(ge=0, le=10)]],
        Meta(
            max_length=64,
            description=(
                "Power price in USD/kWh where that GPU's cards run, by GPU id or alias, "
                "instead of usd_per_kwh (pricing=owned only)."
            ),
        ),
    ] = msgspec.field(default_factory=dict)


class MixingIn(WireIn, kw_only=True):
    """When a fleet may mix GPU types; a field left out takes the server's default (built in:
    2 types, 10 % saving, one vendor; reasons in the README)."""

    max_gpu_types: (
        Annotated[
            int,
            Meta(ge=1, le=16, description="Most GPU types in the fleet (default 2; 1: one type)."),
        ]
        | None
    ) = None
    min_mix_savings_percent: (
        Annotated[
            float,
            Meta(
                ge=0,
                le=100,
                description="A mixed fleet is returned only when it costs at least this many "
                "percent less than the cheapest single-type fleet (default 10).",
            ),
        ]
        | None
    ) = None
    allow_mixed_vendors: (
        Annotated[
            bool, Meta(description="Whether one fleet may mix NVIDIA and AMD (default false).")
        ]
        | None
    ) = None

    def to_draft(self) -> MixingDraft:
        return MixingDraft(
            self.max_gpu_types, self.min_mix_savings_percent, self.allow_mixed_vendors
        )


class SpreadIn(WireIn, kw_only=True):
    """Where the fleet must be spread; from 2 up it also survives losing any one."""

    min_providers: Annotated[
        int,
        Meta(
            ge=1,
            le=MAX_PLACES,
            description="Fewest distinct providers the fleet uses; from 2 up, losing any one "
            "provider leaves the rest carrying the whole target load within the SLO.",
        ),
    ] = 1
    min_regions: Annotated[
        int,
        Meta(
            ge=1,
            le=MAX_PLACES,
            description="Fewest distinct regions (a provider's region) the fleet uses; from 2 "
            "up, losing any one region leaves the rest carrying the whole target load.",
        ),
    ] = 1

    def to_domain(self) -> Spread:
        return Spread(self.min_providers, self.min_regions)


class ConstraintsIn(WireIn, kw_only=True):
    gpus: Annotated[list[GpuName], Meta(min_length=1, max_length=64)] | None = None
    exclude_gpus: Annotated[list[GpuName], Meta(max_length=64)] = msgspec.field(
        default_factory=list
    )
    providers: Annotated[list[ShortName], Meta(min_length=1, max_length=32)] | None = None
    regions: (
        Annotated[
            list[ShortName],
            Meta(
                min_length=1,
                max_length=64,
                description=(
                    "Regions the fleet may use (all when absent). A provider's one price for all "
                    "its regions (region `global`) counts only where that provider has one of "
                    "these regions in the catalog; purchase prices have no region."
                ),
            ),
        ]
        | None
    ) = None
    pricing: PricingChoice = "on_demand"
    max_cards: Annotated[
        dict[GpuName, Annotated[int, Meta(ge=0, le=1_000_000)]],
        Meta(max_length=64, description="Availability cap in cards per GPU id or alias."),
    ] = msgspec.field(default_factory=dict)
    allow_mix: bool = True
    headroom: (
        Annotated[
            float,
            Meta(
                ge=0,
                le=10,
                description="0.2 plans for 1.2 x the load. Left out: the server's default, "
                "built in as the performance model's validation error for the engine and each "
                "card's GPU family.",
            ),
        ]
        | None
    ) = None
    min_replicas: Annotated[
        int,
        Meta(
            ge=0,
            le=100_000,
            description="Fewest replicas on every fleet line (GPU, tensor-parallel degree and "
            "offer): 2 keeps each line serving after it loses a replica.",
        ),
    ] = 1
    tensor_parallel: Annotated[list[TensorParallel], Meta(min_length=1, max_length=8)] = (
        msgspec.field(default_factory=lambda: [1, 2, 4, 8])
    )
    allow_pcie_tensor_parallel: Annotated[
        bool,
        Meta(
            description="Tensor-parallel groups larger than the card's NVLink domain all-reduce "
            "over PCIe (its generation and lanes; through host memory where the cards have no "
            "peer-to-peer), up to the instance's card count. false: NVLink-sized groups only."
        ),
    ] = True
    # null (as a plan's echoed request shows it for other pricing kinds): the defaults.
    owned: OwnedCostIn | None = None
    mixing: MixingIn = msgspec.field(default_factory=MixingIn)
    spread: SpreadIn = msgspec.field(default_factory=SpreadIn)
    allow_marketplaces: Annotated[
        bool,
        Meta(
            description=(
                "With no providers named, also use marketplace offers (Vast.ai, RunPod "
                "Community). Default: the service's provider policy only."
            )
        ),
    ] = False

    def to_draft(self) -> ConstraintsDraft:
        o = self.owned if self.owned is not None else OwnedCostIn()
        return ConstraintsDraft(
            gpus=tuple(self.gpus) if self.gpus is not None else None,
            exclude_gpus=tuple(self.exclude_gpus),
            providers=tuple(self.providers) if self.providers is not None else None,
            regions=tuple(self.regions) if self.regions is not None else None,
            pricing=self.pricing,
            max_cards=tuple(self.max_cards.items()),
            allow_mix=self.allow_mix,
            headroom=self.headroom,
            min_replicas=self.min_replicas,
            tensor_parallel=tuple(self.tensor_parallel),
            allow_pcie_tensor_parallel=self.allow_pcie_tensor_parallel,
            allow_marketplaces=self.allow_marketplaces,
            owned=OwnedCost(
                o.amortization_months,
                o.usd_per_kwh,
                o.pue,
                tuple(o.card_usd.items()),
                tuple(o.usd_per_kwh_by_gpu.items()),
            ),
            mixing=self.mixing.to_draft(),
            spread=self.spread.to_domain(),
        )


# Most requests leave the constraints at their defaults: they share one draft value (the
# comparison costs a fraction of building one, on the cached path).
_DEFAULT_CONSTRAINTS = ConstraintsIn()
_DEFAULT_CONSTRAINTS_DRAFT = _DEFAULT_CONSTRAINTS.to_draft()


class PlanRequestIn(WireIn, kw_only=True):
    """A fleet request."""

    model: ModelIn
    precision: WeightPrecision | None = None
    kv_cache_precision: KvPrecision = "bf16"
    engine: Engine = "vllm"
    engine_version: EngineVersion | None = None
    calibration: CalibrationSpec | None = None
    workload: WorkloadIn
    slo: SloIn = msgspec.field(default_factory=SloIn)
    budget: BudgetIn | None = None
    constraints: ConstraintsIn = msgspec.field(default_factory=ConstraintsIn)
    as_of: (
        Annotated[
            datetime, Meta(tz=True, description=f"Plan with the prices known then ({WINDOW}).")
        ]
        | None
    ) = None
    routing: Annotated[
        RoutingMode,
        Meta(
            description="by_shape (default): request shapes may go to different fleet lines "
            "when that is cheaper, and the plan's routing gives the gateway its length "
            "cut-offs. shared: every line serves the whole mix, so any line may take any "
            "request; the plan is priced that way."
        ),
    ] = "by_shape"

    def to_draft(self) -> PlanDraft:
        """The request as the domain takes it (still to be canonicalised)."""
        w, s, b = self.workload, self.slo, self.budget
        mix = (
            tuple(MixShare(m.share, m.prompt_tokens, m.output_tokens) for m in w.mix)
            if w.mix is not None
            else None
        )
        return PlanDraft(
            model=self.model if isinstance(self.model, str) else self.model.to_mapping(),
            workload=WorkloadDraft(w.qps, w.prompt_tokens, w.output_tokens, mix),
            precision=self.precision,
            kv_cache_precision=self.kv_cache_precision,
            engine=self.engine,
            engine_version=self.engine_version,
            calibration=self.calibration,
            slo=Slo(s.ttft_ms, s.tpot_ms, s.e2e_ms, s.percentile),
            budget=BudgetDraft(b.usd_per_hour, b.usd_per_month) if b is not None else None,
            constraints=(
                _DEFAULT_CONSTRAINTS_DRAFT
                if self.constraints == _DEFAULT_CONSTRAINTS
                else self.constraints.to_draft()
            ),
            as_of=self.as_of,
            routing=self.routing,
        )
