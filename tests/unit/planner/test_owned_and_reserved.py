"""Owned and reserved pricing: a request's own card prices and power prices, every bundled
purchase price sourced and dated, and a pricing kind the catalog lacks said per GPU (not an
SLO failure)."""

from __future__ import annotations

import csv
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from service.api.schemas.flat import body_from_data
from service.api.schemas.plan_fields import plan_request_from_flat
from service.api.schemas.plan_request import PlanRequestIn
from service.domain.catalog import CatalogSnapshot, latest_per_offer
from service.domain.errors import InvalidInput, UnknownGpu
from service.domain.planner import (
    ConstraintsDraft,
    OwnedCost,
    PlanConstraints,
    PlanDraft,
    PlanRequest,
    WorkloadDraft,
    canonical_document,
    canonical_request,
    plan,
)
from service.domain.planner.offers import no_price_reason, offers_for
from service.store.csv_format import (
    bundled_text,
    parse_gpus_csv,
    parse_prices_csv,
    parse_purchase_gaps_csv,
)
from tests.support.plan_requests import plan_request

DATA = Path(__file__).resolve().parents[3] / "service" / "data"


@cache
def snapshot() -> CatalogSnapshot:
    gpus = tuple(parse_gpus_csv(bundled_text("gpus.csv")))
    prices = latest_per_offer(parse_prices_csv(bundled_text("prices.csv")))
    gaps = tuple(parse_purchase_gaps_csv(bundled_text("purchase_gaps.csv")))
    return CatalogSnapshot(revision=1, gpus=gpus, prices=prices, gaps=gaps)


def request(**constraints: Any) -> PlanRequest:
    return plan_request(**constraints)


def draft(constraints: ConstraintsDraft) -> PlanDraft:
    return PlanDraft(
        model="llama-3.1-8b",
        workload=WorkloadDraft(qps=5.0, prompt_tokens=512, output_tokens=128),
        constraints=constraints,
    )


def price_rows() -> list[dict[str, str]]:
    with (DATA / "prices.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def purchase_rows() -> list[dict[str, str]]:
    return [r for r in price_rows() if r["kind"] == "purchase"]


def purchase_gaps() -> dict[str, str]:
    """GPUs the catalog has no purchase price for, with the documented reason."""
    with (DATA / "purchase_gaps.csv").open(newline="") as f:
        return {r["gpu_id"]: r["reason"] for r in csv.DictReader(f)}


def test_every_purchase_row_is_dated_and_says_what_its_price_is() -> None:
    rows = purchase_rows()
    assert len({r["gpu_id"] for r in rows}) >= 29
    for row in rows:
        assert row["source"].startswith("http"), row
        assert row["observed_at"][:4].isdigit(), row
        # a purchase price says whether it is a list price, a street estimate or a listing
        assert any(
            word in row["source"]
            for word in (
                "list price",
                "launch price",
                "street",
                "Street",
                "MSRP",
                "listing",
                "estimate",
                "secondary",
            )
        ), row


def test_every_gpu_with_a_purchase_row_has_an_owned_offer_and_no_other_does() -> None:
    snap = snapshot()
    purchased = {r["gpu_id"] for r in purchase_rows()}
    gaps = purchase_gaps()
    for gpu in snap.gpus:
        gap = snap.gap_reason(gpu.id, "purchase")
        offers, why = offers_for(gpu, snap.prices, PlanConstraints(pricing="owned"), gap=gap)
        assert bool(offers) == (gpu.id in purchased), (gpu.id, why)
        if not offers:
            assert gpu.id in gaps and gap == gaps[gpu.id], gpu.id
            assert why is not None and gaps[gpu.id] in why and "card_usd" in why, gpu.id


def test_the_owned_reason_gives_the_documented_gap_or_says_the_catalog_has_none() -> None:
    gaps = purchase_gaps()
    documented = no_price_reason("h200-nvl", "owned", gaps["h200-nvl"])
    assert documented == (
        f"no owned price for h200-nvl: {gaps['h200-nvl']}; give card_usd for it in "
        "constraints.owned"
    )
    # a GPU with no gap record (one added through the API, say) is still named, with the remedy
    assert no_price_reason("my-card", "owned") == (
        "no owned price for my-card: the catalog has no purchase price for it; give card_usd "
        "for it in constraints.owned"
    )
    # a documented reason ending in a full stop does not end the sentence early
    assert no_price_reason("x", "owned", "sold in systems only.") == (
        "no owned price for x: sold in systems only; give card_usd for it in constraints.owned"
    )


def test_a_plan_names_the_documented_reason_of_each_gap_gpu_and_solves_the_others() -> None:
    gaps = purchase_gaps()
    p = plan(request(gpus=("h200-nvl", "gh200", "l4"), pricing="owned"), snapshot())
    assert p.status == "optimal" and p.fleet is not None
    assert {line.gpu for line in p.fleet.lines} == {"l4"}
    reasons = {r.gpu: (r.code, r.reason) for r in p.rejected}
    assert set(reasons) == {"h200-nvl", "gh200"}
    for gpu, (code, reason) in reasons.items():
        assert code == "no_price"
        assert reason.startswith(f"no owned price for {gpu}: {gaps[gpu]}"), reason
    # a snapshot without the gap records still rejects them per GPU, with the generic reason
    bare = replace(snapshot(), gaps=())
    alone = plan(request(gpus=("h200-nvl",), pricing="owned"), bare)
    assert alone.status == "no_price"
    assert [r.reason for r in alone.rejected] == [no_price_reason("h200-nvl", "owned")]


def test_a_card_price_given_in_the_request_prices_a_gpu_the_catalog_cannot() -> None:
    # The A10G is sold only inside AWS instances: no purchase price, a documented gap.
    assert not any(p.gpu_id == "a10g" and p.kind == "purchase" for p in snapshot().prices)
    assert "a10g" in purchase_gaps()
    without = plan(request(gpus=("a10g",), pricing="owned"), snapshot())
    assert without.status == "no_price"
    assert [r.code for r in without.rejected] == ["no_price"]
    assert "no owned price for a10g" in without.rejected[0].reason
    assert "card_usd" in without.rejected[0].reason
    owned = OwnedCost(card_usd=(("a10g", 2500.0),), usd_per_kwh_by_gpu=(("a10g", 0.30),))
    given = plan(request(gpus=("a10g",), pricing="owned", owned=owned), snapshot())
    assert given.status == "optimal" and given.fleet is not None
    line = given.fleet.lines[0]
    assert line.provider == "request" and line.provider_kind == "purchase"
    # amortised card plus power at the A10G's 300 W x PUE 1.3 x its own 0.30 USD/kWh
    assert line.usd_per_hour / line.cards == pytest.approx(
        2500.0 / (36 * 730) + 300 * 1.3 * 0.30 / 1000
    )


def test_an_owned_plan_is_costed_at_a_newly_added_catalog_purchase_price() -> None:
    # The L4 was once refused for owned pricing; its dated listing price now costs the plan.
    (row,) = [r for r in purchase_rows() if r["gpu_id"] == "l4"]
    p = plan(request(gpus=("l4",), pricing="owned"), snapshot())
    assert p.status == "optimal" and p.fleet is not None
    line = p.fleet.lines[0]
    assert (line.provider, line.provider_kind, line.instance_type) == (
        "street",
        "purchase",
        row["instance_type"],
    )
    assert line.price_observed_at is not None
    assert line.price_observed_at.isoformat()[:10] == row["observed_at"][:10]
    cost = OwnedCost()
    (l4,) = [g for g in snapshot().gpus if g.id == "l4"]
    assert l4.tdp_w is not None
    amortised = float(row["usd"]) / (cost.amortization_months * 730)
    power = l4.tdp_w * cost.pue * cost.kwh_price("l4") / 1000
    assert line.usd_per_hour / line.cards == pytest.approx(amortised + power)


def test_a_reserved_plan_uses_a_newly_covered_instance_family() -> None:
    # AWS p5 (8 x H100 SXM) has a published 1-year rate; before it, only CoreWeave's did.
    (row,) = [
        r
        for r in price_rows()
        if r["provider"] == "aws" and r["kind"] == "reserved_1y" and r["gpu_id"] == "h100-sxm"
    ]
    p = plan(request(gpus=("h100-sxm",), pricing="reserved_1y", providers=("aws",)), snapshot())
    assert p.status == "optimal" and p.fleet is not None
    (line,) = p.fleet.lines
    assert (line.provider, line.instance_type, line.pricing) == (
        "aws",
        row["instance_type"],
        "reserved_1y",
    )
    # billed by the whole 8-GPU instance at the per-GPU reserved rate
    assert line.cards % int(row["gpus_per_instance"]) == 0
    assert line.usd_per_hour == pytest.approx(line.cards * float(row["usd"]))
    # the 3-year term is still not published for it: said per GPU, not an SLO failure
    three = plan(request(gpus=("h100-sxm",), pricing="reserved_3y", providers=("aws",)), snapshot())
    assert three.status == "no_price"
    assert [r.code for r in three.rejected] == ["no_price"]


@pytest.mark.parametrize(
    ("gpu", "region"), [("l4", "europe-west4"), ("h100-sxm", "asia-southeast1")]
)
def test_a_reserved_plan_restricted_to_a_region_outside_the_us_is_costed_at_its_committed_rate(
    gpu: str, region: str
) -> None:
    # GCP's committed use prices cover every region where the machine is offered on demand, so
    # a team that must stay in one region gets a reserved plan there, at that region's rate.
    rows = {
        (r["instance_type"], r["kind"]): float(r["usd"])
        for r in price_rows()
        if r["provider"] == "gcp" and r["region"] == region and r["gpu_id"] == gpu
    }
    for term in ("reserved_1y", "reserved_3y"):
        p = plan(
            request(gpus=(gpu,), pricing=term, providers=("gcp",), regions=(region,)), snapshot()
        )
        assert p.status == "optimal" and p.fleet is not None, p.rejected
        for line in p.fleet.lines:
            assert (line.provider, line.region, line.pricing) == ("gcp", region, term)
            per_card = rows[(line.instance_type, term)]
            assert line.usd_per_hour == pytest.approx(line.cards * per_card)
            # below what the same machine costs on demand there
            assert per_card < rows[(line.instance_type, "on_demand")]


def test_a_request_card_price_replaces_the_catalogs_for_that_gpu_only() -> None:
    catalog = plan(request(gpus=("h100-sxm",), pricing="owned"), snapshot())
    cheaper = OwnedCost(card_usd=(("h100-sxm", 10_000.0),))
    mine = plan(request(gpus=("h100-sxm",), pricing="owned", owned=cheaper), snapshot())
    assert catalog.fleet is not None and mine.fleet is not None
    assert catalog.fleet.lines[0].provider == "street"
    assert mine.fleet.lines[0].provider == "request"
    assert mine.fleet.usd_per_hour < catalog.fleet.usd_per_hour


def test_a_pricing_kind_without_data_is_said_per_gpu_and_is_not_an_slo_failure() -> None:
    p = plan(request(gpus=("h100-pcie", "a40"), pricing="reserved_3y"), snapshot())
    assert p.status == "no_price" and p.fleet is None
    reasons = {r.gpu: r.reason for r in p.rejected}
    # each says the catalog has none of the kind, and the pricing the GPU's own prices allow
    choice = {"on_demand": "on_demand", "spot": "spot", "purchase": "owned"}
    for gpu in ("h100-pcie", "a40"):
        kinds = {q.kind for q in snapshot().prices if q.gpu_id == gpu}
        assert "purchase" in kinds and "reserved_3y" not in kinds
        allowed = [choice[k] for k in choice if k in kinds]
        assert reasons[gpu] == (
            f"no reserved_3y price for {gpu}: no provider in the catalog has reserved_3y "
            f"prices for it (it is priced for: {', '.join(allowed)})"
        )
    assert reasons["h100-pcie"] in p.explanation[0]
    assert "SLO" not in " ".join(r.code for r in p.rejected)
    # with one GPU that has the kind, the others are still named per GPU
    mixed = plan(request(gpus=("h100-pcie", "l40s"), pricing="reserved_3y"), snapshot())
    assert mixed.status == "optimal" and mixed.fleet is not None
    assert {line.gpu for line in mixed.fleet.lines} == {"l40s"}
    assert {r.gpu: r.reason for r in mixed.rejected} == {"h100-pcie": reasons["h100-pcie"]}


def test_card_prices_resolve_aliases_and_enter_the_canonical_request() -> None:
    c = ConstraintsDraft(
        pricing="owned",
        owned=OwnedCost(card_usd=(("L4", 2500),), usd_per_kwh_by_gpu=(("l4", 0.2),)),
    )
    r = canonical_request(draft(c), snapshot())
    assert r.constraints.owned.card_usd == (("l4", 2500.0),)
    owned = canonical_document(r)["constraints"]["owned"]
    assert owned["card_usd"] == {"l4": 2500.0} and owned["usd_per_kwh_by_gpu"] == {"l4": 0.2}
    plain = canonical_request(draft(replace(c, owned=OwnedCost())), snapshot())
    assert "card_usd" not in canonical_document(plain)["constraints"]["owned"]


@pytest.mark.parametrize(
    ("owned", "field"),
    [
        (OwnedCost(card_usd=(("l4", 2500.0),)), "constraints.owned.card_usd"),
        (OwnedCost(usd_per_kwh_by_gpu=(("l4", 0.2),)), "constraints.owned.usd_per_kwh_by_gpu"),
    ],
)
def test_owned_card_prices_need_owned_pricing(owned: OwnedCost, field: str) -> None:
    c = ConstraintsDraft(pricing="on_demand", owned=owned)
    with pytest.raises(InvalidInput) as caught:
        canonical_request(draft(c), snapshot())
    assert caught.value.field == field


def test_an_unknown_gpu_in_card_usd_is_named() -> None:
    c = ConstraintsDraft(pricing="owned", owned=OwnedCost(card_usd=(("nope-9000", 1.0),)))
    with pytest.raises(UnknownGpu) as caught:
        canonical_request(draft(c), snapshot())
    assert caught.value.field == "constraints.owned.card_usd.nope-9000"


def test_card_prices_from_the_command_line_and_the_body_agree() -> None:
    flat = plan_request_from_flat(
        {
            "model": "llama-3.1-8b",
            "qps": 5,
            "prompt_tokens": 512,
            "output_tokens": 128,
            "pricing": "owned",
            "card_usd": ("l4=2500", "t4=900.5"),
            "usd_per_kwh": 0.2,
            "usd_per_kwh_by_gpu": ("l4=0.3",),
        }
    )
    owned = flat.constraints.owned
    assert owned is not None
    assert owned.card_usd == {"l4": 2500.0, "t4": 900.5}
    assert owned.usd_per_kwh == 0.2 and owned.usd_per_kwh_by_gpu == {"l4": 0.3}
    with pytest.raises(InvalidInput) as caught:
        plan_request_from_flat(
            {
                "model": "llama-3.1-8b",
                "qps": 5,
                "prompt_tokens": 512,
                "output_tokens": 128,
                "card_usd": ("l4=cheap",),
            }
        )
    assert caught.value.field == "constraints.owned.card_usd"


@pytest.mark.parametrize("value", [0, -5, 20_000_000])
def test_a_card_price_out_of_range_is_refused_naming_the_field(value: float) -> None:
    body = {
        "model": "llama-3.1-8b",
        "workload": {"qps": 5, "prompt_tokens": 512, "output_tokens": 128},
        "constraints": {"pricing": "owned", "owned": {"card_usd": {"l4": value}}},
    }
    with pytest.raises(InvalidInput) as caught:
        body_from_data(PlanRequestIn, body)
    assert caught.value.field is not None
    assert caught.value.field.startswith("constraints.owned.card_usd")
