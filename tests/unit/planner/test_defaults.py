"""Defaults a reviewer can sign: headroom from the model's own validation error, and the mixing
policy (at most two GPU types, a mix only when it saves at least 10 %, one vendor)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from service.domain.catalog import GpuSpec
from service.domain.perfmodel import Slo
from service.domain.perfmodel.calibration import hybrid_validation, resolve_profile
from service.domain.perfmodel.hardware import accuracy_family, calibration_group
from service.domain.perfmodel.headroom import THROUGHPUT_METRICS, model_error_headroom
from service.domain.planner import MixingPolicy, Plan, WorkloadBucket, plan
from service.domain.planner.sweep import PLAN_SERIES, cost_vs_load, cost_vs_slo
from tests.unit.planner.test_planner import NO_POLICY, cost, request, snapshot

SHORT_LONG = (WorkloadBucket("b0", 0.8, 512, 200), WorkloadBucket("b1", 0.2, 4000, 300))
SLO_70B = Slo(ttft_ms=1500, tpot_ms=60, e2e_ms=None, percentile=95)


def gpu(gpu_id: str) -> GpuSpec:
    return next(g for g in snapshot().gpus if g.id == gpu_id)


def seventy_b(qps: float, gpus: tuple[str, ...], **constraints: Any) -> Plan:
    # The mixing examples below are sized on every offer, marketplace ones included.
    constraints.setdefault("allow_marketplaces", True)
    return plan(
        request(
            model="llama-3.1-70b",
            qps=qps,
            buckets=SHORT_LONG,
            precision="fp8",
            slo=SLO_70B,
            gpus=gpus,
            **constraints,
        ),
        snapshot(),
    )


# ---- headroom ------------------------------------------------------------------------------


def test_the_default_headroom_is_the_builds_throughput_error_on_the_cards_family() -> None:
    card = gpu("h100-sxm")
    family = calibration_group(card).group
    build = resolve_profile("vllm", None)
    cells = [
        c.median_ape
        for c in build.validation
        if c.family == family and c.metric in THROUGHPUT_METRICS
    ]
    assert cells, "the default vllm build is validated on Hopper"
    margin = model_error_headroom(card, "vllm", None)
    assert margin.fraction == round(max(cells), 2)
    assert margin.family == family and margin.build == build.name
    assert f"{margin.fraction * 100:.0f}%" in margin.basis


def test_an_unmeasured_family_gets_the_builds_largest_error() -> None:
    build = resolve_profile("vllm", None)
    measured = {c.family for c in build.validation}
    unmeasured = next(g for g in snapshot().gpus if calibration_group(g).group not in measured)
    worst = max(c.median_ape for c in build.validation if c.metric in THROUGHPUT_METRICS)
    margin = model_error_headroom(unmeasured, "vllm", None)
    assert margin.fraction == round(worst, 2)
    assert "no vllm" in margin.basis


def test_a_card_on_borrowed_constants_never_gets_the_lenders_measured_error() -> None:
    """MI300X is predicted with hopper-hbm efficiencies x 0.85 (a judgement): the error measured
    on H100s and H200s says nothing about it, so its headroom is the build's largest error, as
    for any family the build was never measured on."""
    mi300x, h100 = gpu("mi300x"), gpu("h100-sxm")
    assert calibration_group(mi300x).group == calibration_group(h100).group == "hopper-hbm"
    assert accuracy_family(mi300x) == "cdna3-hbm"
    build = resolve_profile("vllm", None)
    assert not any(c.family == "cdna3-hbm" for c in build.validation)
    worst = max(c.median_ape for c in build.validation if c.metric in THROUGHPUT_METRICS)
    margin = model_error_headroom(mi300x, "vllm", None)
    assert margin.family == "cdna3-hbm"
    assert margin.fraction == round(worst, 2)
    assert "no vllm" in margin.basis and "cdna3-hbm" in margin.basis
    assert margin.fraction >= model_error_headroom(h100, "vllm", None).fraction


def test_a_hybrid_model_gets_at_least_the_error_measured_on_hybrid_models() -> None:
    """Mamba-2 layers have no fitted constant: a hybrid model's headroom is at least the
    engine's throughput error on published hybrid-model measurements, and says so; a
    transformer's is unchanged."""
    b200 = gpu("b200")
    hybrid_cells = [c for c in hybrid_validation("vllm") if c.metric in THROUGHPUT_METRICS]
    assert hybrid_cells, "Vultr's Nemotron 3 Nano runs validate vllm on hybrid models"
    worst = round(max(c.median_ape for c in hybrid_cells), 2)
    plain = model_error_headroom(b200, "vllm", None)
    hybrid = model_error_headroom(b200, "vllm", None, hybrid=True)
    assert hybrid.fraction == max(plain.fraction, worst)
    if worst > plain.fraction:
        assert "hybrid Mamba-2" in hybrid.basis and f"{worst * 100:.0f}%" in hybrid.basis
    # an engine without hybrid measurements takes the largest measured with any engine
    other = model_error_headroom(b200, "sglang", None, hybrid=True)
    assert other.fraction >= worst
    assert model_error_headroom(b200, "sglang", None).fraction <= other.fraction


def test_derived_headroom_on_one_card_equals_that_explicit_headroom() -> None:
    """On one GPU type, derating capacity by 1 + e is the same fleet as planning for
    (1 + e) x the load: same cost, same cards."""
    margin = model_error_headroom(gpu("h100-sxm"), "vllm", None)
    derived = plan(request(qps=60, gpus=("h100-sxm",), headroom=None), snapshot())
    explicit = plan(request(qps=60, gpus=("h100-sxm",), headroom=margin.fraction), snapshot())
    assert derived.fleet is not None and explicit.fleet is not None
    assert cost(derived) == pytest.approx(cost(explicit))
    assert derived.fleet.total_cards == explicit.fleet.total_cards


def test_default_headroom_keeps_every_line_below_its_modelled_capacity() -> None:
    p = plan(request(qps=60, gpus=("h100-sxm", "l40s", "l4"), headroom=None), snapshot())
    assert p.fleet is not None
    for line in p.fleet.lines:
        e = model_error_headroom(gpu(line.gpu), "vllm", None).fraction
        assert e > 0
        assert line.utilization <= 1 / (1 + e) + 1e-6
        assert line.assigned_qps <= line.qps_capacity / (1 + e) * (1 + 1e-6)
    none = plan(request(qps=60, gpus=("h100-sxm", "l40s", "l4"), headroom=0.0), snapshot())
    assert cost(p) >= cost(none) - 1e-9


def test_the_assumptions_state_the_headroom_and_where_it_comes_from() -> None:
    p = plan(request(qps=60, gpus=("h100-sxm",), headroom=None), snapshot())
    margin = model_error_headroom(gpu("h100-sxm"), "vllm", None)
    said = [a for a in p.assumptions if a.startswith("Headroom")]
    assert len(said) == 1
    assert f"{margin.fraction * 100:.0f}% on {margin.family}" in said[0]
    assert "validation error" in said[0]
    assert any("headroom for the model's error" in s for s in p.explanation)


# ---- mixing policy ---------------------------------------------------------------------------


def test_a_small_saving_returns_the_single_type_and_names_the_mix() -> None:
    """At 30 req/s H100 + B200 beats the best single type by about 3 %: under the default
    threshold of 10 % the plan is the single type; the mixed fleet and its saving are named."""
    gpus = ("h100-sxm", "b200")
    free = seventy_b(30, gpus)
    assert free.fleet is not None and len({x.gpu for x in free.fleet.lines}) == 2
    policy = MixingPolicy()  # the defaults
    p = seventy_b(30, gpus, mixing=policy)
    assert p.fleet is not None and p.mixing is not None
    assert len({x.gpu for x in p.fleet.lines}) == 1
    best_single = p.alternatives[0]
    assert cost(p) == pytest.approx(best_single.fleet.usd_per_hour)
    d = p.mixing
    assert d.rule == "mix_saving_below_threshold"
    assert d.mixed_fleet is not None
    assert d.mixed_fleet.usd_per_hour == pytest.approx(cost(free))
    saving = (best_single.fleet.usd_per_hour - cost(free)) / best_single.fleet.usd_per_hour * 100
    assert 0 < saving < policy.min_mix_savings_percent
    assert d.saving_percent == pytest.approx(saving)
    sentence = next(s for s in p.explanation if s.startswith("Mixing rule"))
    assert f"{saving:.1f}%" in sentence and "min_mix_savings_percent=10%" in sentence


def test_a_single_type_chosen_by_the_mixing_rule_still_says_what_the_budget_buys() -> None:
    gpus = ("h100-sxm", "b200")
    budget = cost(seventy_b(30, gpus, mixing=MixingPolicy())) * 1.5
    p = seventy_b(30, gpus, mixing=MixingPolicy(), budget=budget)
    assert p.mixing is not None and p.mixing.rule == "mix_saving_below_threshold"
    assert p.status == "optimal" and p.fleet is not None
    assert p.max_qps_within_budget is not None and p.max_qps_within_budget > 30
    assert any(s.startswith("Within the budget") for s in p.explanation)
    # the GPU the plan uses carries the load it names, alone and within the budget
    (gpu,) = {x.gpu for x in p.fleet.lines}
    at = seventy_b(p.max_qps_within_budget, (gpu,), budget=budget)
    assert at.status == "optimal" and cost(at) <= budget + 1e-6


def test_a_saving_above_the_threshold_keeps_the_mix() -> None:
    gpus = ("h100-sxm", "b200")
    free = seventy_b(22, gpus)
    assert free.fleet is not None and len({x.gpu for x in free.fleet.lines}) == 2
    p = seventy_b(22, gpus, mixing=MixingPolicy())
    assert p.mixing is not None and p.mixing.rule == "mix_saves_enough"
    assert p.mixing.saving_percent is not None and p.mixing.saving_percent >= 10
    assert cost(p) == pytest.approx(cost(free))


def test_the_threshold_is_a_request_setting() -> None:
    gpus = ("h100-sxm", "b200")
    loose = seventy_b(30, gpus, mixing=MixingPolicy(min_mix_savings_percent=1.0))
    assert loose.mixing is not None and loose.mixing.rule == "mix_saves_enough"
    assert loose.fleet is not None and len({x.gpu for x in loose.fleet.lines}) == 2


def test_one_type_is_the_same_as_no_mixing() -> None:
    gpus = ("h100-sxm", "b200", "l40s")
    one = seventy_b(20, gpus, mixing=MixingPolicy(max_gpu_types=1))
    no_mix = seventy_b(20, gpus, allow_mix=False)
    assert one.mixing is not None and one.mixing.rule == "single_type_required"
    assert cost(one) == pytest.approx(cost(no_mix))
    assert one.fleet is not None and len({x.gpu for x in one.fleet.lines}) == 1


def _vendors(p: Plan, vendor: dict[str, str]) -> set[str]:
    assert p.fleet is not None
    return {vendor[x.gpu] for x in p.fleet.lines}


def test_one_vendor_unless_mixed_vendors_are_allowed() -> None:
    """On MI300X, MI325X and H100 there are loads where the cheapest fleet mixes AMD and NVIDIA
    (the first one is used); the default keeps one vendor: the cheaper of the AMD-only and
    NVIDIA-only plans."""
    gpus = ("mi300x", "mi325x", "h100-sxm")
    vendor = {g.id: g.vendor for g in snapshot().gpus}
    open_policy = MixingPolicy(max_gpu_types=0, min_mix_savings_percent=0.0)
    qps, mixed = next(
        (q, p)
        for q in range(20, 81, 2)
        if len(_vendors(p := seventy_b(q, gpus, mixing=NO_POLICY), vendor)) == 2
    )
    one = seventy_b(qps, gpus, mixing=open_policy)
    assert len(_vendors(one, vendor)) == 1
    per_vendor = [
        seventy_b(qps, tuple(g for g in gpus if vendor[g] == v), mixing=open_policy)
        for v in ("AMD", "NVIDIA")
    ]
    assert cost(one) == pytest.approx(min(cost(p) for p in per_vendor if p.fleet is not None))
    assert cost(one) > cost(mixed) + 1e-9
    # the same plan with helper threads (single types on them, the rest here)
    with ThreadPoolExecutor(max_workers=2) as helpers:
        beside = plan(
            request(
                model="llama-3.1-70b", qps=qps, buckets=SHORT_LONG, precision="fp8",
                slo=SLO_70B, gpus=gpus, mixing=open_policy, allow_marketplaces=True,
            ),
            snapshot(),
            executor=helpers,
        )  # fmt: skip
    assert beside == one


@pytest.mark.parametrize(
    ("qps", "gpus"),
    [
        (40, ("h100-sxm", "b200")),
        (32, ("mi300x", "mi325x", "h100-sxm")),
        (20, ("h100-sxm", "b200")),
    ],
)
def test_the_cost_curves_follow_the_mixing_policy(qps: float, gpus: tuple[str, ...]) -> None:
    """The plan's series of the cost curves is the plan's cost at the request: below the
    threshold (40 req/s), under the one-vendor rule (32 req/s) and above the threshold."""
    r = request(
        model="llama-3.1-70b",
        qps=qps,
        buckets=SHORT_LONG,
        precision="fp8",
        slo=SLO_70B,
        gpus=gpus,
        mixing=MixingPolicy(),
    )
    solved = plan(r, snapshot())
    load = {s.name: s for s in cost_vs_load(r, snapshot()).series}[PLAN_SERIES]
    at = [p.x for p in load.points].index(r.qps)
    assert load.points[at].usd_per_hour == pytest.approx(cost(solved))
    slo = cost_vs_slo(r, snapshot()).series[0]
    at = [p.x for p in slo.points].index(SLO_70B.tpot_ms or 0.0)
    assert slo.points[at].usd_per_hour == pytest.approx(cost(solved))
