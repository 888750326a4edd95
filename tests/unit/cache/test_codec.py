"""The plan cache's codec: a solved plan goes in and an equal value comes out; entries of
another format version, or not decodable, read as misses."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import msgspec

from service.cache.codec import FORMAT_VERSION, PlanCodec, plan_key
from service.domain.llm import resolve_model
from service.domain.perfmodel import Slo
from service.domain.planner import (
    Alternative,
    BucketSummary,
    Fleet,
    FleetLine,
    Plan,
    PlanConstraints,
    PlanRequest,
    Rejection,
    Relaxation,
    Savings,
    SolvedPlan,
    WorkloadBucket,
)


def solved_plan() -> SolvedPlan:
    line = FleetLine(
        gpu="l40s",
        provider="vast",
        region="Japan",
        instance_type="1x-L40S",
        pricing="on_demand",
        tensor_parallel=1,
        replicas=2,
        instances=2,
        cards=2,
        usd_per_hour=1.2,
        qps_capacity=25.19,
        assigned_qps=20.0,
        ttft_ms=126.2,
        tpot_ms=math.inf,
        utilization=0.794,
        buckets=(("b0", 20.0),),
    )
    fleet = Fleet(lines=(line,), usd_per_hour=1.2, total_cards=2, qps_capacity=25.19)
    plan = Plan(
        status="over_budget",
        fleet=fleet,
        usd_per_million_output_tokens=0.13,
        alternatives=(Alternative("l40s", Fleet((line,), 1.2, 2, None)),),
        savings_vs_best_single_type=Savings("l40s", 0.0, 0.0),
        rejected=(Rejection("l4", "cannot_meet_slo", "TPOT 89.4 ms > SLO 50 ms", 410.2, 89.4),),
        max_qps_within_budget=12.5,
        explanation=("Cheapest fleet ...",),
        assumptions=("Poisson arrivals",),
        buckets=(BucketSummary("b0", 1.0, 512, 128, 20.0),),
        prices_as_of=datetime(2026, 6, 3, tzinfo=UTC),
        relaxations=(
            Relaxation("budget", 1.2, ("l40s",), "A budget of $1.20/hour", budget_usd_per_hour=1.2),
            Relaxation("gpu", 1.5, ("l4",), "Also the GPU l4", tpot_ms=90.0, gpus=("l4", "l40s")),
        ),
    )
    request = PlanRequest(
        model=resolve_model({"params_b": 34.0, "name": "mine"}),
        precision="fp8",
        kv_precision="bf16",
        engine="vllm",
        qps=20.0,
        buckets=(WorkloadBucket("b0", 1.0, 512, 128),),
        slo=Slo(1000.0, 50.0, None, 95.0),
        budget_usd_per_hour=1.0,
        constraints=PlanConstraints(gpus=("l4", "l40s"), pricing="owned", max_cards=(("l4", 3),)),
        as_of=datetime(2026, 6, 1, tzinfo=UTC),
        model_spec={"params_b": 34.0, "name": "mine"},
    )
    return SolvedPlan("0123456789abcdef0123456789abcdef", 7, request, plan)


def test_a_plan_round_trips_to_an_equal_value() -> None:
    codec = PlanCodec()
    value = solved_plan()
    decoded = codec.decode(codec.encode(value))
    assert decoded == value
    assert decoded is not None and decoded.request.model_spec == {"params_b": 34.0, "name": "mine"}
    assert decoded.plan.fleet is not None and decoded.plan.fleet.lines[0].tpot_ms == math.inf


def test_another_format_version_reads_as_a_miss() -> None:
    older = PlanCodec(version=FORMAT_VERSION - 1)
    assert PlanCodec().decode(older.encode(solved_plan())) is None


def test_entries_that_do_not_decode_read_as_misses() -> None:
    codec = PlanCodec()
    assert codec.decode(b'{"plan_id": "rendered JSON of format 1"}') is None
    assert codec.decode(b"\x00garbage") is None
    assert codec.decode(msgspec.msgpack.encode((FORMAT_VERSION, {"plan_id": 3}))) is None


def test_keys_carry_the_format_version() -> None:
    assert plan_key("ab" * 16) == f"plans:v{FORMAT_VERSION}:{'ab' * 16}"
