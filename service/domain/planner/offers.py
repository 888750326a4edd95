"""Priced offers: which ways of paying for cards the request allows, and what a unit costs.

A cloud offer is an instance type with ``gpus_per_instance`` cards, billed whole. A replica's
cards must sit in one instance (tensor parallelism across machines is slow), so an offer can
host tensor-parallel degree ``t`` only when ``t <= gpus_per_instance``, and one instance then
hosts ``gpus_per_instance // t`` replicas. The billed *unit* is the instance.

Owned cards are bought one at a time: the unit is one replica of ``t`` cards, each costing
``purchase_usd / (amortization_months * 730) + tdp_w * pue * usd_per_kwh / 1000`` per hour.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from service.domain.catalog import (
    GLOBAL_REGION,
    GpuSpec,
    PricePoint,
    price_kind_for,
    provider_regions,
)
from service.domain.planner.request import HOURS_PER_MONTH, OwnedCost, PlanConstraints, Spread
from service.domain.providers import DEFAULT_PROVIDERS, allowed_by_policy, provider_kind
from service.domain.vocabulary import PRICING_CHOICES, PricingChoice


@dataclass(frozen=True, slots=True)
class Offer:
    """One way to buy cards of one GPU.

    ``usd_per_card_hour`` is the effective price of one card; ``cards_per_instance`` how many
    cards one cloud instance holds (0 for owned cards: no instance, bought singly);
    ``observed_at`` when the price it comes from was observed.
    """

    gpu_id: str
    provider: str
    region: str
    instance_type: str
    pricing: PricingChoice
    usd_per_card_hour: float
    cards_per_instance: int
    observed_at: datetime | None = None

    def unit(self, tensor_parallel: int) -> tuple[int, int, float] | None:
        """``(cards, replicas, usd_per_hour)`` of one billed unit hosting replicas of
        ``tensor_parallel`` cards, or ``None`` when one replica does not fit in a unit."""
        if self.cards_per_instance == 0:
            return tensor_parallel, 1, self.usd_per_card_hour * tensor_parallel
        if tensor_parallel > self.cards_per_instance:
            return None
        replicas = self.cards_per_instance // tensor_parallel
        return self.cards_per_instance, replicas, self.usd_per_card_hour * self.cards_per_instance


def owned_card_hour_usd(purchase_usd: float, gpu: GpuSpec, cost: OwnedCost) -> float | None:
    """Amortised purchase plus power per card-hour; ``None`` without a TDP figure."""
    if gpu.tdp_w is None:
        return None
    amortised = purchase_usd / (cost.amortization_months * HOURS_PER_MONTH)
    power = gpu.tdp_w * cost.pue * cost.kwh_price(gpu.id) / 1000.0
    return amortised + power


REQUEST_PROVIDER = "request"
"""The provider name of an owned-card price the request itself gives (``card_usd``)."""
REQUEST_INSTANCE = "card (price given in the request)"


def no_price_reason(
    gpu_id: str,
    pricing: PricingChoice,
    documented: str | None = None,
    prices: Iterable[PricePoint] = (),
) -> str:
    """Why ``gpu_id`` has no offer of ``pricing``: the catalog holds no such price. ``documented``
    is the catalog's recorded reason for the gap (``CatalogSnapshot.gap_reason``); without one
    the answer says the catalog has none. A price a request may give itself (an owned card's
    ``card_usd``) is named; for any other kind, the pricing choices the GPU's ``prices`` do
    allow."""
    why = documented.strip().rstrip(".") if documented else None
    if pricing == "owned":
        return (
            f"no owned price for {gpu_id}: {why or 'the catalog has no purchase price for it'}; "
            "give card_usd for it in constraints.owned"
        )
    reason = f"no {pricing} price for {gpu_id}: " + (
        why or f"no provider in the catalog has {pricing} prices for it"
    )
    kinds = {p.kind for p in prices if p.gpu_id == gpu_id}
    choices = [c for c in PRICING_CHOICES if c != pricing and price_kind_for(c) in kinds]
    if choices:
        reason += f" (it is priced for: {', '.join(choices)})"
    return reason


SHAPE_NOT_STATED = "(unspecified)"
"""What an instance type ends with when its source names no instance shape (a third party's
per-GPU-hour figure for a provider that sells whole 8-GPU machines): a quote of what a GPU-hour
costs, not an offer of something that can be bought, so no plan is costed at it. (A price
posted without an instance type is the caller's own statement of a one-GPU unit, spelt
``unspecified``, and is planned on.)"""


def shape_is_stated(instance_type: str) -> bool:
    """Whether an instance type names what is sold (not :data:`SHAPE_NOT_STATED`)."""
    return not instance_type.endswith(SHAPE_NOT_STATED)


def offers_for(
    gpu: GpuSpec,
    prices: Sequence[PricePoint],
    constraints: PlanConstraints,
    default_providers: tuple[str, ...] = DEFAULT_PROVIDERS,
    gap: str | None = None,
    regions_of: Mapping[str, frozenset[str]] | None = None,
) -> tuple[list[Offer], str | None]:
    """The allowed offers of one GPU, and why there are none when the list is empty (``gap``:
    the catalog's documented reason it has no price of the request's kind, if any).

    A request that names regions gets offers in them, and a provider's ``global`` price (one
    price for all its regions) only where that provider is present in one of them: its named
    regions are ``regions_of[provider]`` (``CatalogSnapshot.provider_regions``; by default,
    those of ``prices``). A ``global`` price of a provider with no named region matching the
    request (AWS's for a request kept to ``europe-west4``, a price whose source names no
    region at all) cannot be placed there and is left out. A quote that states no instance
    shape (:data:`SHAPE_NOT_STATED`) is no offer. A request that spreads over regions
    (``spread.min_regions`` of 2 or more) uses no ``global`` cloud price at all: a line whose
    region is unknown cannot be counted as a region of its own, nor its loss survived. Purchase
    prices have no region and pass any region filter.

    A request that names providers may use theirs; one that names none, the offers the
    service's ``default_providers`` admit (``providers.allowed_by_policy``), plus marketplace
    offers when it sets ``allow_marketplaces``. Owned cards are priced from purchase prices,
    which no provider policy limits; an owned request's own ``card_usd`` for the GPU replaces
    the catalog's purchase prices."""
    kind = price_kind_for(constraints.pricing)
    if constraints.pricing == "owned":
        given = dict(constraints.owned.card_usd).get(gpu.id)
        if given is not None:
            card_hour = owned_card_hour_usd(given, gpu, constraints.owned)
            if card_hour is None:
                return [], "no TDP figure to cost the power of owned cards"
            offer = Offer(
                gpu.id, REQUEST_PROVIDER, GLOBAL_REGION, REQUEST_INSTANCE, "owned", card_hour, 0
            )
            return [offer], None
    providers = set(constraints.providers) if constraints.providers is not None else None
    regions = set(constraints.regions) if constraints.regions is not None else None
    own = [p for p in prices if p.gpu_id == gpu.id]
    quoted = [p for p in own if p.kind == kind]
    if not quoted:
        return [], no_price_reason(gpu.id, constraints.pricing, gap, own)
    of_kind = [p for p in quoted if shape_is_stated(p.instance_type)]
    if not of_kind:
        where = sorted({p.provider for p in quoted})
        return [], (
            f"no {constraints.pricing} price for {gpu.id} names what is sold: the quotes "
            f"(at: {', '.join(where)}) state no instance shape, so no fleet can be bought from "
            "them"
        )
    present: Mapping[str, frozenset[str]] = {}
    if regions is not None:
        present = regions_of if regions_of is not None else provider_regions(prices)
    placed = constraints.spread.min_regions >= 2

    def in_place(p: PricePoint) -> bool:
        if p.region != GLOBAL_REGION:
            return regions is None or p.region in regions
        if kind == "purchase":
            return True
        if placed:
            return False
        return regions is None or not regions.isdisjoint(present.get(p.provider, ()))

    in_region = [p for p in of_kind if in_place(p)]
    if placed and not in_region and any(p.region == GLOBAL_REGION for p in of_kind):
        where = sorted({p.provider for p in of_kind})
        return [], (
            f"no {constraints.pricing} price for {gpu.id} in a named region: spread.min_regions "
            f"counts each line's region, and its prices (at: {', '.join(where)}) name none"
        )
    by_policy = providers is None and constraints.pricing != "owned"
    allowed = [
        p
        for p in in_region
        if (p.provider in providers if providers is not None else True)
        and (
            not by_policy
            or allowed_by_policy(default_providers, p.provider, p.instance_type)
            or (
                constraints.allow_marketplaces
                and provider_kind(p.provider, p.instance_type) == "marketplace"
            )
        )
    ]
    if not allowed:
        where = sorted({p.provider for p in of_kind})
        if by_policy and in_region:
            return [], (
                f"no {constraints.pricing} price for {gpu.id} from the default providers "
                f"({', '.join(default_providers)}); priced at: {', '.join(where)} (name them in "
                "providers, or set allow_marketplaces for marketplace offers)"
            )
        shapeless = sorted(
            {p.provider for p in quoted if not shape_is_stated(p.instance_type)}
            & (providers if providers is not None else set())
        )
        return [], (
            f"no {constraints.pricing} price for {gpu.id} from the allowed providers/regions "
            f"(priced at: {', '.join(where)})"
            + (
                f"; the quotes of {', '.join(shapeless)} state no instance shape, so no fleet "
                "can be bought from them"
                if shapeless
                else ""
            )
        )
    offers: list[Offer] = []
    for p in allowed:
        if constraints.pricing == "owned":
            card_hour = owned_card_hour_usd(p.usd, gpu, constraints.owned)
            if card_hour is None:
                continue
            offers.append(
                Offer(
                    gpu.id,
                    p.provider,
                    p.region,
                    p.instance_type,
                    constraints.pricing,
                    card_hour,
                    0,
                    p.observed_at,
                )
            )
        else:
            offers.append(
                Offer(
                    gpu.id,
                    p.provider,
                    p.region,
                    p.instance_type,
                    constraints.pricing,
                    p.usd,
                    p.gpus_per_instance,
                    p.observed_at,
                )
            )
    if not offers:
        return [], "no TDP figure to cost the power of owned cards"
    return offers, None


def place_of(offer: Offer, spread: Spread | None) -> tuple[str, str]:
    """The place a spread request counts ``offer`` in: ``(provider, region)`` from
    ``min_regions = 2`` up, ``(provider, "")`` from ``min_providers = 2`` up, else one place
    for all (``("", "")``). Offers in different places are never interchangeable to it."""
    if spread is None or (spread.min_providers < 2 and spread.min_regions < 2):
        return ("", "")
    return (offer.provider, offer.region if spread.min_regions >= 2 else "")


def places_searched(spread: Spread) -> int:
    """How many regions a region spread searches per GPU and instance shape: as many as it
    asks for (:func:`cheapest_per_shape`)."""
    return spread.min_regions


def cheapest_per_shape(offers: list[Offer], spread: Spread | None = None) -> list[Offer]:
    """The cheapest offer of each instance shape (cards per instance; 0 for owned cards), per
    place when the request spreads the fleet (``spread``): per provider from
    ``min_providers = 2`` up, per region (a provider's) from ``min_regions = 2`` up.

    Two offers of one GPU with the same shape give the solver identical units (same cards, same
    replicas, same capacity) at different prices, and there is no limit on how many units of an
    offer a fleet may buy, so the dearer one is never in a cheapest fleet: it is left out before
    the MILP, which keeps the problem small on a catalog of thousands of offers. Offers of
    different shapes are all kept (a smaller instance is a finer step; a larger one may be the
    only home of a tensor-parallel group). Ties go to the first by provider, region and instance
    type, so the result does not depend on the input order.

    A spread request also counts places, and a dearer offer elsewhere may be the second
    provider or region a fleet needs (RunPod's A100 80GB costs the same in all its regions, so
    the cheapest per shape alone would keep one region and leave a two-region fleet
    infeasible). Within one place the argument above holds, so that is where it prunes. Over
    regions the search is also bounded: of the regions offering a GPU and shape (any
    provider's), the ``min_regions`` cheapest (:func:`places_searched`); different GPUs and
    shapes may still take the fleet to more regions. A fleet that survives losing a
    region gets cheaper the more regions it spreads over (the rest must carry the whole load),
    so this bound can cost money at loads that would fill more regions; it keeps such a solve
    to seconds, where identical offers in a dozen regions let the MILP run to its time limit
    and past the service's deadline. Plans say so in their assumptions.
    """
    best: dict[tuple[int, str, str], Offer] = {}
    for offer in offers:
        key = (offer.cards_per_instance, *place_of(offer, spread))
        held = best.get(key)
        if held is None or _rank(offer) < _rank(held):
            best[key] = offer
    if spread is None or spread.min_regions < 2:
        return [best[key] for key in sorted(best)]
    searched: dict[int, list[Offer]] = {}
    for (shape, _, _), offer in best.items():
        searched.setdefault(shape, []).append(offer)
    limit = places_searched(spread)
    kept = [o for group in searched.values() for o in sorted(group, key=_rank)[:limit]]
    return sorted(kept, key=lambda o: (o.cards_per_instance, o.provider, o.region))


def _rank(offer: Offer) -> tuple[float, str, str, str]:
    return (offer.usd_per_card_hour, offer.provider, offer.region, offer.instance_type)
