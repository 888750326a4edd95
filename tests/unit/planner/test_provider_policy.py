"""Offers a team can provision: the service's default provider policy (GPUPLAN_DEFAULT_PROVIDERS)
when a request names no providers, marketplace offers only when asked for, and prices older
than GPUPLAN_PRICE_MAX_AGE_DAYS flagged per fleet line and for the plan."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from functools import cache
from typing import Any

import pytest

from service.domain.catalog import CatalogSnapshot
from service.domain.planner import (
    ConstraintsDraft,
    PlanDefaults,
    PlanDraft,
    PlanPolicy,
    PlanRequest,
    WorkloadDraft,
    canonical_document,
    canonical_request,
    plan,
    plan_id,
)
from service.domain.planner.offers import SHAPE_NOT_STATED, shape_is_stated
from service.domain.providers import DEFAULT_PROVIDERS, allowed_by_policy, provider_kind
from service.settings import SettingsError, load_settings
from service.usecases.seed_catalog import seed_snapshot
from tests.support.plan_requests import plan_request


@cache
def snapshot() -> CatalogSnapshot:
    return seed_snapshot()


def request(policy: PlanPolicy | None = None, **constraints: Any) -> PlanRequest:
    return plan_request(qps=20.0, policy=policy, **constraints)


def kinds(p: Any) -> set[str]:
    assert p.fleet is not None
    return {line.provider_kind for line in p.fleet.lines}


@pytest.mark.parametrize(
    ("entries", "provider", "instance", "allowed"),
    [
        (DEFAULT_PROVIDERS, "aws", "p5.48xlarge", True),
        (DEFAULT_PROVIDERS, "lambda", "gpu_1x_h100_pcie", True),
        (DEFAULT_PROVIDERS, "runpod", "1x_H100_SECURE", True),
        (DEFAULT_PROVIDERS, "runpod", "1x_H100_COMMUNITY", False),
        (DEFAULT_PROVIDERS, "vast", "1x-H100", False),
        (DEFAULT_PROVIDERS, "examplecloud", "ex.8x", False),
        (("aws", "runpod"), "runpod", "1x_H100_SECURE", True),
        (("aws", "runpod"), "runpod", "1x_H100_COMMUNITY", False),
        (("aws", "runpod"), "gcp", "a3-highgpu-8g", False),
        (("aws", "vast"), "vast", "1x-H100", True),
        (("hyperscaler", "marketplace"), "runpod", "1x_H100_COMMUNITY", True),
        (("examplecloud",), "examplecloud", "ex.8x", True),
    ],
)
def test_a_policy_admits_by_kind_or_by_provider(
    entries: tuple[str, ...], provider: str, instance: str, allowed: bool
) -> None:
    assert allowed_by_policy(entries, provider, instance) is allowed


def test_a_request_naming_no_providers_plans_on_the_default_policy_only() -> None:
    default = plan(request(), snapshot())
    assert default.status == "optimal"
    assert kinds(default) <= {"hyperscaler", "gpu_cloud"}
    assert any(
        "default policy (hyperscaler, gpu_cloud; GPUPLAN_DEFAULT_PROVIDERS)" in a
        and "marketplace offers (Vast.ai, RunPod Community) left out" in a
        for a in default.assumptions
    )
    # marketplaces only when asked for: H100s are cheapest on a marketplace, so asking for
    # marketplace offers uses them
    h100 = plan(request(gpus=("h100-sxm",)), snapshot())
    anything = plan(request(gpus=("h100-sxm",), allow_marketplaces=True), snapshot())
    assert anything.fleet is not None and h100.fleet is not None
    assert anything.fleet.usd_per_hour < h100.fleet.usd_per_hour
    assert kinds(h100) <= {"hyperscaler", "gpu_cloud"}
    assert "marketplace" in kinds(anything)
    assert any("marketplace offers added (allow_marketplaces)" in a for a in anything.assumptions)
    by_name = plan(request(providers=("vast",)), snapshot())
    assert kinds(by_name) == {"marketplace"}
    assert any(a == "Providers: as requested (vast)." for a in by_name.assumptions)


def test_an_operator_policy_narrows_what_a_request_without_providers_may_use() -> None:
    aws_only = PlanPolicy(default_providers=("aws",))
    p = plan(request(aws_only), snapshot())
    assert p.fleet is not None and {line.provider for line in p.fleet.lines} == {"aws"}
    assert any("default policy (aws;" in a for a in p.assumptions)
    # a GPU AWS does not offer is rejected, naming the policy and where it is priced
    rtx = plan(request(aws_only, gpus=("rtx-a6000",)), snapshot())
    assert rtx.status == "no_price"
    (why,) = rtx.rejected
    assert why.reason.startswith(
        "no on_demand price for rtx-a6000 from the default providers (aws)"
    )
    assert "priced at:" in why.reason and "allow_marketplaces" in why.reason


def test_owned_pricing_is_not_limited_by_the_provider_policy() -> None:
    p = plan(
        request(PlanPolicy(default_providers=("aws",)), gpus=("h100-sxm",), pricing="owned"),
        snapshot(),
    )
    assert p.fleet is not None and p.fleet.lines[0].provider == "street"


def test_the_policy_is_part_of_the_plan_id_but_not_of_the_request_a_caller_posts() -> None:
    draft = PlanDraft(
        model="llama-3.1-8b",
        workload=WorkloadDraft(qps=5.0, prompt_tokens=512, output_tokens=128),
        constraints=ConstraintsDraft(),
    )
    snap = snapshot()
    ids = {
        plan_id(canonical_request(draft, snap, defaults=PlanDefaults(policy=policy)), snap.revision)
        for policy in (
            PlanPolicy(),
            PlanPolicy(default_providers=("aws",)),
            PlanPolicy(price_max_age_days=None),
        )
    }
    assert len(ids) == 3
    posted = canonical_document(
        canonical_request(draft, snap, defaults=PlanDefaults(policy=PlanPolicy(("aws",))))
    )
    assert posted == canonical_document(canonical_request(draft, snap))
    asked = canonical_request(
        replace(draft, constraints=ConstraintsDraft(allow_marketplaces=True)), snap
    )
    assert asked.constraints.allow_marketplaces is True
    assert plan_id(asked, snap.revision) not in ids


def test_old_prices_are_flagged_per_fleet_line_and_for_the_plan() -> None:
    # The SkyPilot snapshot is dated 2025-04-01, the newest catalog prices 2026-06-03.
    p = plan(request(gpus=("l40s",), providers=("runpod",)), snapshot())
    assert p.fleet is not None and p.prices_as_of is not None
    line = p.fleet.lines[0]
    assert line.price_observed_at is not None
    age = (p.prices_as_of - line.price_observed_at).days
    assert age > 180
    flagged = [s for s in p.explanation if s.startswith("Stale price: ")]
    assert len(flagged) == len(p.fleet.lines)
    assert f"{age} days before the prices-as-of date" in flagged[0]
    assert "limit 180 days" in flagged[0]
    assert p.explanation[-1].startswith(f"{len(p.fleet.lines)} of {len(p.fleet.lines)} fleet line")
    # a limit above the age, or none, flags nothing
    for policy in (PlanPolicy(price_max_age_days=age + 1), PlanPolicy(price_max_age_days=None)):
        calm = plan(request(policy, gpus=("l40s",), providers=("runpod",)), snapshot())
        assert not any("Stale price" in s or "older than" in s for s in calm.explanation)


def test_a_fresh_price_is_not_flagged() -> None:
    p = plan(request(gpus=("h100-sxm",), providers=("aws",)), snapshot())
    assert p.fleet is not None and p.prices_as_of is not None
    for line in p.fleet.lines:
        assert line.price_observed_at is not None
        assert p.prices_as_of - line.price_observed_at <= timedelta(days=180)
    assert not any(s.startswith("Stale price") for s in p.explanation)


def test_the_settings_read_the_policy() -> None:
    default = load_settings({"HOME": "/h"})
    assert default.default_providers == ("hyperscaler", "gpu_cloud")
    assert default.price_max_age_days == 180
    custom = load_settings(
        {
            "HOME": "/h",
            "GPUPLAN_DEFAULT_PROVIDERS": " AWS, gcp,lambda ,aws",
            "GPUPLAN_PRICE_MAX_AGE_DAYS": "90",
        }
    )
    assert custom.default_providers == ("aws", "gcp", "lambda")
    assert custom.price_max_age_days == 90
    off = load_settings({"HOME": "/h", "GPUPLAN_PRICE_MAX_AGE_DAYS": "off"})
    assert off.price_max_age_days is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GPUPLAN_DEFAULT_PROVIDERS", ",,"),
        ("GPUPLAN_DEFAULT_PROVIDERS", "aws, no spaces please"),
        ("GPUPLAN_PRICE_MAX_AGE_DAYS", "0"),
        ("GPUPLAN_PRICE_MAX_AGE_DAYS", "soon"),
    ],
)
def test_a_bad_policy_setting_names_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        load_settings({"HOME": "/h", name: value})


def test_provider_kinds_of_the_policy_words() -> None:
    assert provider_kind("vast") == "marketplace"
    assert provider_kind("request") == "purchase"


def test_a_line_costed_at_its_gpus_alone_says_the_host_is_extra() -> None:
    """GCP's T4 runs in an N1 machine the catalog does not price: a plan on it says, per line,
    that the cost leaves out the VM; a plan on whole instances says nothing of the kind."""
    p = plan(request(gpus=("t4",), providers=("gcp",)), snapshot())
    assert p.fleet is not None and p.fleet.lines
    assert all("(GPU only, host VM extra)" in line.instance_type for line in p.fleet.lines)
    said = [s for s in p.explanation if s.startswith("Host VM not priced: ")]
    assert len(said) == len(p.fleet.lines)
    assert p.fleet.lines[0].instance_type in said[0] and "lower bound" in said[0]
    whole = plan(request(gpus=("l4",), providers=("gcp",)), snapshot())
    assert whole.fleet is not None
    assert not any(s.startswith("Host VM not priced") for s in whole.explanation)


def test_a_quote_that_states_no_instance_shape_is_not_planned_on() -> None:
    # CoreWeave sells H100s as whole 8-GPU machines; the catalog's only CoreWeave figures are a
    # third party's per-GPU-hour quotes with no instance shape, the cheapest H100 in it. A fleet
    # of single cards at that price cannot be bought.
    quotes = [p for p in snapshot().prices if p.provider == "coreweave"]
    assert quotes and all(p.instance_type.endswith(SHAPE_NOT_STATED) for p in quotes)
    for pricing in ("on_demand", "reserved_1y"):
        only = plan(
            request(gpus=("h100-sxm",), providers=("coreweave",), pricing=pricing), snapshot()
        )
        assert only.status == "no_price" and only.fleet is None
        (why,) = [r.reason for r in only.rejected]
        assert "state no instance shape" in why and "coreweave" in why
        anywhere = plan(request(gpus=("h100-sxm",), pricing=pricing), snapshot())
        assert anywhere.fleet is not None
        assert all(line.provider != "coreweave" for line in anywhere.fleet.lines)
    # a price posted without an instance type is the caller's own one-GPU unit, and is used
    assert shape_is_stated("unspecified") and not shape_is_stated("H100 (unspecified)")
