"""Candidates: every allowed (GPU, tensor-parallel degree, price offer) as a solver option,
with per-bucket capacity from the performance model; GPUs with no usable option are rejected
with the reason. Of the offers of one GPU and instance shape only the cheapest becomes an
option (``offers.cheapest_per_shape``), and at each tensor-parallel degree an instance that
smaller, no dearer instances split exactly is left out (``_split_is_cheaper``).

With the default headroom (``constraints.headroom`` ``None``) an option's capacity is the
modelled one divided by ``1 + e``, ``e`` the model's validation error for the card's GPU
family and the engine build (``perfmodel.headroom``); the solver then needs no headroom of its
own. An explicit headroom is applied by the solver to the demand instead (the same thing for
every card)."""

from dataclasses import dataclass

from service.domain.catalog import CatalogSnapshot, GpuSpec, price_kind_for
from service.domain.perfmodel import (
    Capacity,
    Deployment,
    RequestShape,
    Slo,
    max_qps_under_slo_many,
)
from service.domain.perfmodel.engine_hardware import (
    engine_hardware_reason,
    engine_precision_reason,
)
from service.domain.perfmodel.hardware import accuracy_family, kv_plan, precision_plan
from service.domain.perfmodel.headroom import ModelHeadroom, model_error_headroom
from service.domain.planner.offers import Offer, cheapest_per_shape, offers_for, place_of
from service.domain.planner.request import PlanConstraints, PlanRequest, Spread
from service.domain.planner.result import Rejection
from service.domain.solver import (
    Bucket,
    FleetOption,
    FleetProblem,
)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One solver option with what the planner needs to turn it back into a fleet line.

    ``headroom``: the model-error headroom the option's capacity is derated by (``None`` with
    an explicit headroom); ``option.capacity_qps`` is the modelled capacity divided by
    ``1 + headroom.fraction``, :meth:`model_capacity_qps` the modelled one."""

    option: FleetOption
    offer: Offer
    deployment: Deployment
    replicas_per_unit: int
    replica_capacity: tuple[Capacity, ...]
    headroom: ModelHeadroom | None = None

    def model_capacity_qps(self, bucket: int) -> float:
        """Requests/s of bucket ``bucket`` one unit sustains by the model, before headroom."""
        return self.replica_capacity[bucket].qps * self.replicas_per_unit


@dataclass(frozen=True, slots=True)
class Candidates:
    items: dict[str, Candidate]
    rejected: dict[str, Rejection]
    considered: tuple[str, ...]


def _option_key(offer: Offer, tp: int) -> str:
    return "|".join(
        (
            offer.gpu_id,
            f"tp{tp}",
            offer.provider,
            offer.region,
            offer.pricing,
            offer.instance_type,
        )
    )


def allowed_gpus(request: PlanRequest, snapshot: CatalogSnapshot) -> tuple[GpuSpec, ...]:
    c = request.constraints
    wanted = set(c.gpus) if c.gpus is not None else None
    excluded = set(c.exclude_gpus)
    return tuple(
        g for g in snapshot.gpus if (wanted is None or g.id in wanted) and g.id not in excluded
    )


def deployment(request: PlanRequest, gpu: GpuSpec, tp: int) -> Deployment:
    """One replica of the request's model on ``tp`` cards of ``gpu``, as the plan runs it."""
    c = request.constraints
    return Deployment(
        gpu=gpu,
        tensor_parallel=tp,
        precision=request.precision,
        kv_precision=request.kv_precision,
        engine=request.engine,
        engine_version=request.engine_version,
        allow_pcie_tensor_parallel=c.allow_pcie_tensor_parallel,
        correction=request.calibration.correction_for(request.engine, accuracy_family(gpu))
        if request.calibration is not None
        else None,
    )


def unsupported_format(request: PlanRequest, gpu: GpuSpec) -> str:
    """Why ``gpu`` cannot hold the request's weight or KV-cache format at any tensor-parallel
    degree ("" when it can): no kernels for it on the card's generation, or none in the
    request's engine."""
    weights = engine_precision_reason(request.engine, gpu, request.precision)
    weights = weights or precision_plan(gpu, request.precision).reason
    if weights:
        return weights
    return kv_plan(gpu, request.kv_precision)[2]


def build_candidates(request: PlanRequest, snapshot: CatalogSnapshot) -> Candidates:
    """Options per (GPU, tensor-parallel degree, offer) with per-bucket capacities."""
    c = request.constraints
    shapes = tuple(RequestShape(b.prompt_tokens, b.output_tokens) for b in request.buckets)
    items: dict[str, Candidate] = {}
    rejected: dict[str, Rejection] = {}
    gpus = allowed_gpus(request, snapshot)
    priced: list[tuple[GpuSpec, list[Offer]]] = []
    for gpu in gpus:
        offers, why = gpu_offers(snapshot, gpu, c, request.policy.default_providers)
        if not offers:
            rejected[gpu.id] = Rejection(gpu.id, "no_price", why or "no price")
        elif unsupported := engine_hardware_reason(request.engine, gpu):
            rejected[gpu.id] = Rejection(gpu.id, "unsupported_engine", unsupported)
        elif unsupported := unsupported_format(request, gpu):
            rejected[gpu.id] = Rejection(gpu.id, "unsupported_format", unsupported)
        else:
            priced.append((gpu, offers))
    tps = sorted(set(c.tensor_parallel))
    deps = {
        (gpu.id, tp): deployment(request, gpu, tp)
        for gpu, _ in priced
        for tp in tps
        if tp <= gpu.nvlink_domain or c.allow_pcie_tensor_parallel
    }
    capacities = dict(
        zip(
            deps,
            max_qps_under_slo_many(request.model.arch, list(deps.values()), shapes, request.slo),
            strict=True,
        )
    )
    for gpu, offers in priced:
        margin = (
            model_error_headroom(
                gpu,
                request.engine,
                request.engine_version,
                hybrid=request.model.arch.ssm_layers > 0,
            )
            if c.headroom is None
            else None
        )
        derate = 1.0 + margin.fraction if margin is not None else 1.0
        fit_reason: str | None = None
        slo_reason: str | None = None
        slo_excess = float("inf")
        shape_reason: str | None = None
        topology_limited = False
        for tp in tps:
            if (gpu.id, tp) not in deps:
                topology_limited = True
                continue
            dep = deps[gpu.id, tp]
            caps = capacities[gpu.id, tp]
            if all(cap.qps <= 0 for cap in caps):
                reason = caps[0].reason or f"cannot serve at tensor_parallel={tp}"
                if caps[0].limited_by == "does_not_fit":
                    fit_reason = f"tensor_parallel={tp}: {reason}"
                elif (excess := _slo_excess(caps[0], request.slo)) < slo_excess:
                    # the degree that comes closest to the limit: a larger one can be slower
                    # (its all-reduces cross PCIe), and the nearest miss is the useful one
                    slo_reason, slo_excess = f"tensor_parallel={tp}: {reason}", excess
                    if all(o.unit(tp) is None for o in offers):
                        slo_reason += (
                            f" (nor does any allowed offer have {tp} cards in one instance; "
                            f"the largest has {max(o.cards_per_instance for o in offers)})"
                        )
                continue
            units = [
                (offer, offer.unit(tp))
                for offer in offers
                if not _split_is_cheaper(offer, offers, tp, c.spread)
            ]
            usable = [(o, u) for o, u in units if u is not None]
            if not usable:
                largest = max(o.cards_per_instance for o in offers)
                shape_reason = (
                    f"tensor_parallel={tp} needs {tp} cards in one instance; the allowed offers "
                    f"have at most {largest}"
                )
                continue
            for offer, unit in usable:
                cards, replicas, usd = unit
                key = _option_key(offer, tp)
                items[key] = Candidate(
                    option=FleetOption(
                        key=key,
                        gpu_id=gpu.id,
                        cards_per_unit=cards,
                        usd_per_hour=usd,
                        capacity_qps=tuple(cap.qps * replicas / derate for cap in caps),
                        replicas_per_unit=replicas,
                        provider=offer.provider,
                        region=offer.region,
                    ),
                    offer=offer,
                    deployment=dep,
                    replicas_per_unit=replicas,
                    replica_capacity=caps,
                    headroom=margin,
                )
        if not any(k.startswith(gpu.id + "|") for k in items):
            rejected[gpu.id] = rejection(
                gpu, slo_reason, shape_reason, fit_reason, topology_limited
            )
    return Candidates(items, rejected, tuple(g.id for g in gpus))


def _slo_excess(cap: Capacity, slo: Slo) -> float:
    """How far a replica ruled out at zero load is from meeting every limit: the largest of
    its latencies over their limits (1.33 for a TPOT of 20 ms against 15 ms)."""
    return max(
        (
            value / limit
            for value, limit in (
                (cap.ttft_ms, slo.ttft_ms),
                (cap.tpot_ms, slo.tpot_ms),
                (cap.e2e_ms, slo.e2e_ms),
            )
            if limit
        ),
        default=float("inf"),
    )


def gpu_offers(
    snapshot: CatalogSnapshot,
    gpu: GpuSpec,
    c: PlanConstraints,
    default_providers: tuple[str, ...],
) -> tuple[list[Offer], str | None]:
    """The cheapest allowed offer of each instance shape of ``gpu`` (per place when the request
    spreads the fleet: ``offers_for`` then ``cheapest_per_shape``), and why there is none;
    memoised in the snapshot per everything the answer depends on, so the next plan at the
    same catalog revision skips the scan."""
    key = (
        "offers",
        gpu.id,
        c.pricing,
        c.providers,
        c.regions,
        c.spread.min_providers >= 2,
        c.spread.min_regions >= 2,
        c.allow_marketplaces,
        default_providers,
        c.owned if c.pricing == "owned" else None,
    )

    def compute() -> tuple[list[Offer], str | None]:
        prices = snapshot.prices_by_gpu.get(gpu.id, ())
        gap = snapshot.gap_reason(gpu.id, price_kind_for(c.pricing))
        allowed, why = offers_for(
            gpu, prices, c, default_providers, gap, regions_of=snapshot.provider_regions
        )
        return cheapest_per_shape(allowed, c.spread), why

    offers, why = snapshot.remember(key, compute)
    return list(offers), why


def _split_is_cheaper(offer: Offer, offers: list[Offer], tp: int, spread: Spread) -> bool:
    """Whether a smaller instance of the same GPU, in the same place as far as ``spread``
    counts places (``offers.place_of``), hosts replicas of ``tp`` cards at no higher price per
    card and divides ``offer``'s instance exactly: then ``k`` of it give the same replicas as
    one ``offer`` for no more money, in finer steps, so ``offer`` is never needed at this
    tensor-parallel degree (it may still be at a larger one)."""
    size = offer.cards_per_instance
    place = place_of(offer, spread) if spread.asked else None
    return size > 0 and any(
        0 < o.cards_per_instance < size
        and o.cards_per_instance % tp == 0
        and size % o.cards_per_instance == 0
        and o.usd_per_card_hour <= offer.usd_per_card_hour
        and (place is None or place_of(o, spread) == place)
        for o in offers
    )


def rejection(
    gpu: GpuSpec,
    slo_reason: str | None,
    shape_reason: str | None,
    fit_reason: str | None,
    topology_limited: bool,
) -> Rejection:
    """The most useful reason a GPU has no option: an SLO miss (at the tensor-parallel degree
    that comes closest to the limit) beats an instance-shape problem beats not fitting in
    memory (at the largest tensor-parallel degree the topology allows)."""
    if slo_reason is not None:
        return Rejection(gpu.id, "cannot_meet_slo", slo_reason)
    if shape_reason is not None:
        return Rejection(gpu.id, "instance_too_small", shape_reason)
    topology = (
        f"; larger tensor-parallel groups need NVLink (domain: {gpu.nvlink_domain} "
        f"card{'s' if gpu.nvlink_domain > 1 else ''}) unless allow_pcie_tensor_parallel is set"
        if topology_limited
        else ""
    )
    if fit_reason is None:
        return Rejection(
            gpu.id, "does_not_fit", "no allowed tensor-parallel degree is possible" + topology
        )
    return Rejection(gpu.id, "does_not_fit", fit_reason + topology)


def fleet_problem(request: PlanRequest, candidates: Candidates) -> FleetProblem:
    c = request.constraints
    return FleetProblem(
        buckets=tuple(Bucket(b.key, request.demand_qps(b)) for b in request.buckets),
        options=tuple(candidates.items[k].option for k in sorted(candidates.items)),
        headroom=c.headroom if c.headroom is not None else 0.0,
        min_replicas=c.min_replicas,
        max_cards=c.max_cards,
        allow_mix=c.allow_mix,
        max_gpu_types=c.mixing.max_gpu_types,
        budget_usd_per_hour=request.budget_usd_per_hour,
        time_limit_s=request.time_limit_s,
        shared=request.routing == "shared",
        line_min_replicas=c.min_replicas,
        min_providers=c.spread.min_providers,
        min_regions=c.spread.min_regions,
    )
