"""Canonicalisation and plan identity: defaults, aliases, sorting, mix merging, budgets, errors
naming their field, and plan ids that equivalent requests share and releases keep."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from typing import Any

import pytest

from service.domain.catalog import CatalogSnapshot, latest_per_offer
from service.domain.errors import DomainError, InvalidInput, UnknownGpu, UnknownModel
from service.domain.perfmodel import Slo
from service.domain.planner import (
    BudgetDraft,
    ConstraintsDraft,
    MixingDraft,
    MixingPolicy,
    MixShare,
    OwnedCost,
    PlanDefaults,
    PlanDraft,
    WorkloadDraft,
    canonical_bytes,
    canonical_document,
    canonical_request,
    plan_id,
)
from service.store.csv_format import bundled_text, parse_gpus_csv, parse_prices_csv


@cache
def snapshot() -> CatalogSnapshot:
    gpus = tuple(parse_gpus_csv(bundled_text("gpus.csv")))
    prices = latest_per_offer(parse_prices_csv(bundled_text("prices.csv")))
    return CatalogSnapshot(revision=1, gpus=gpus, prices=prices)


def draft(**changes: Any) -> PlanDraft:
    base = PlanDraft(
        model="llama-3.1-8b", workload=WorkloadDraft(qps=12.0, prompt_tokens=512, output_tokens=128)
    )
    return replace(base, **changes)


def pid(d: PlanDraft) -> str:
    return plan_id(canonical_request(d, snapshot()), snapshot().revision)


def test_defaults_are_filled() -> None:
    request = canonical_request(draft(), snapshot())
    doc = canonical_document(request)
    assert doc["precision"] == "bf16" and doc["engine"] == "vllm"
    assert doc["slo"] == {"ttft_ms": None, "tpot_ms": None, "e2e_ms": None, "percentile": 95.0}
    assert doc["budget"] is None and doc["as_of"] is None
    c = doc["constraints"]
    assert c["pricing"] == "on_demand" and c["tensor_parallel"] == [1, 2, 4, 8]
    assert c["min_replicas"] == 1 and c["allow_mix"] is True and c["owned"] is None
    assert doc["workload"] == {
        "qps": 12.0,
        "mix": [{"share": 1.0, "prompt_tokens": 512, "output_tokens": 128}],
    }


def test_aliases_resolve_and_lists_sort_and_dedupe() -> None:
    request = canonical_request(
        draft(
            model="meta-llama/Llama-3.1-8B-Instruct",
            constraints=ConstraintsDraft(
                gpus=("L40S", "h100", "l4", "H100 SXM"),
                exclude_gpus=("A10G", "a10g"),
                providers=(" Lambda", "AWS", "aws"),
                regions=("us-east-1 ", "eu-west-1"),
                tensor_parallel=(8, 2, 2, 1),
                max_cards=(("H100", 8), ("h100-sxm", 4), ("l4", 2)),
            ),
        ),
        snapshot(),
    )
    c = request.constraints
    assert canonical_document(request)["model"] == "llama-3.1-8b"
    assert c.gpus == ("h100-sxm", "l4", "l40s")
    assert c.exclude_gpus == ("a10g",)
    assert c.providers == ("aws", "lambda") and c.regions == ("eu-west-1", "us-east-1")
    assert c.tensor_parallel == (1, 2, 8)
    assert c.max_cards == (("h100-sxm", 4), ("l4", 2))  # two caps on one GPU: the smaller


def test_mix_shapes_merge_sort_and_normalise() -> None:
    mix = (
        MixShare(0.25, 3000, 200),
        MixShare(0.25, 300, 100),
        MixShare(0.5, 300, 100),
    )
    request = canonical_request(draft(workload=WorkloadDraft(qps=9, mix=mix)), snapshot())
    shapes = [(b.key, b.prompt_tokens, b.output_tokens, b.share) for b in request.buckets]
    assert shapes == [("b0", 300, 100, 0.75), ("b1", 3000, 200, 0.25)]
    assert request.qps == 9.0 and isinstance(request.qps, float)


def test_a_monthly_budget_becomes_hourly() -> None:
    monthly = canonical_request(draft(budget=BudgetDraft(usd_per_month=7300)), snapshot())
    assert monthly.budget_usd_per_hour == pytest.approx(10.0)
    hourly = canonical_request(draft(budget=BudgetDraft(usd_per_hour=10)), snapshot())
    assert pid(draft(budget=BudgetDraft(usd_per_hour=10))) == plan_id(hourly, 1)
    assert canonical_document(hourly)["budget"] == {"usd_per_hour": 10.0}


def test_as_of_moves_to_utc_and_owned_costs_count_only_when_owned() -> None:
    moment = datetime(2025, 6, 1, 2, 0, tzinfo=timezone(timedelta(hours=2)))
    request = canonical_request(draft(as_of=moment), snapshot())
    assert request.as_of == datetime(2025, 6, 1, 0, 0, tzinfo=UTC)
    assert request.as_of is not None and request.as_of.tzinfo is UTC
    spot = ConstraintsDraft(pricing="spot", owned=OwnedCost(pue=2.0))
    assert pid(draft(constraints=spot)) == pid(draft(constraints=ConstraintsDraft(pricing="spot")))
    owned = canonical_request(draft(constraints=ConstraintsDraft(pricing="owned")), snapshot())
    assert canonical_document(owned)["constraints"]["owned"] == {
        "amortization_months": 36.0,
        "usd_per_kwh": 0.12,
        "pue": 1.3,
    }


def test_equivalent_requests_share_a_plan_id() -> None:
    plain = draft(
        slo=Slo(2000.0, 50.0, None, 95.0),
        constraints=ConstraintsDraft(gpus=("l4", "l40s", "h100-sxm"), headroom=0.2),
    )
    spelled_otherwise = draft(
        model="Llama-3.1-8B",
        workload=WorkloadDraft(qps=12, mix=(MixShare(1, 512, 128),)),
        slo=Slo(2000, 50, None, 95),
        constraints=ConstraintsDraft(gpus=("H100", "L40S", "l4", "l4"), headroom=0.2),
    )
    assert pid(plain) == pid(spelled_otherwise)
    assert canonical_bytes(canonical_request(plain, snapshot())) == canonical_bytes(
        canonical_request(spelled_otherwise, snapshot())
    )
    assert pid(plain) != pid(replace(plain, engine="sglang"))
    later = replace(snapshot(), revision=2)
    assert plan_id(canonical_request(plain, later), 2) != pid(plain)


def test_the_time_limit_is_not_part_of_the_id() -> None:
    quick = canonical_request(draft(), snapshot(), time_limit_s=0.5)
    slow = canonical_request(draft(), snapshot(), time_limit_s=9.0)
    assert quick.time_limit_s == 0.5 and plan_id(quick, 1) == plan_id(slow, 1)


def test_plan_ids_are_stable_across_releases() -> None:
    """Ids of the README's requests on the bundled catalog, with the engine build pinned (the
    default build follows the calibration): a change here re-keys every plan (and needs
    PLAN_ID_VERSION bumped)."""
    query_example = draft(
        model="llama-3.1-70b",
        precision="fp8",
        engine_version="0.11",
        workload=WorkloadDraft(qps=40.0, prompt_tokens=1024, output_tokens=256),
        slo=Slo(1500.0, 60.0, None, 95.0),
        budget=BudgetDraft(usd_per_hour=150.0),
    )
    assert pid(query_example) == "01c0ad34b8f7f87db17e8a45920dfe76"
    mix_example = replace(
        query_example,
        workload=WorkloadDraft(qps=40.0, mix=(MixShare(0.8, 512, 200), MixShare(0.2, 4000, 300))),
        constraints=ConstraintsDraft(
            headroom=0.2, min_replicas=2, providers=("aws", "gcp", "azure", "lambda", "runpod")
        ),
    )
    assert pid(mix_example) == "f302543fce05a8cb6a3216e8ad2a06af"
    custom = draft(
        model={"params_b": 34.0, "n_kv_heads": 8, "name": "mine"},
        workload=WorkloadDraft(qps=2.0, prompt_tokens=2048, output_tokens=512),
        engine_version="0.11",
    )
    assert pid(custom) == "72609ae3d7f50e152708b7856caf3599"


@pytest.mark.parametrize(
    ("changes", "error", "field"),
    [
        (
            {"workload": WorkloadDraft(qps=1, prompt_tokens=100)},
            InvalidInput,
            "workload.output_tokens",
        ),
        (
            {"workload": WorkloadDraft(qps=1, output_tokens=100)},
            InvalidInput,
            "workload.prompt_tokens",
        ),
        (
            {"workload": WorkloadDraft(qps=1, prompt_tokens=1, mix=(MixShare(1, 1, 1),))},
            InvalidInput,
            "workload.mix",
        ),
        (
            {"workload": WorkloadDraft(qps=1, mix=(MixShare(0.5, 10, 10),))},
            InvalidInput,
            "workload.mix",
        ),
        (
            {"workload": WorkloadDraft(qps=1, prompt_tokens=200_000, output_tokens=10)},
            InvalidInput,
            "workload.prompt_tokens",
        ),
        (
            {
                "workload": WorkloadDraft(
                    qps=1, mix=(MixShare(0.5, 10, 10), MixShare(0.5, 200_000, 1))
                )
            },
            InvalidInput,
            "workload.mix[1]",
        ),
        ({"budget": BudgetDraft(usd_per_hour=1, usd_per_month=730)}, InvalidInput, "budget"),
        ({"budget": BudgetDraft()}, InvalidInput, "budget"),
        ({"model": "llama-9-700b"}, UnknownModel, "model"),
        ({"model": {"params_b": -3}}, InvalidInput, "model.params_b"),
        (
            {"constraints": ConstraintsDraft(gpus=("l4", "h1000"))},
            UnknownGpu,
            "constraints.gpus[1]",
        ),
        (
            {"constraints": ConstraintsDraft(exclude_gpus=("nope",))},
            UnknownGpu,
            "constraints.exclude_gpus[0]",
        ),
        (
            {"constraints": ConstraintsDraft(max_cards=(("h1000", 2),))},
            UnknownGpu,
            "constraints.max_cards.h1000",
        ),
        (
            {
                "workload": WorkloadDraft(
                    qps=1.0, mix=(MixShare(1 - 1e-9, 512, 128), MixShare(1e-9, 2048, 128))
                )
            },
            InvalidInput,
            "workload.mix",
        ),
        (
            {"workload": WorkloadDraft(qps=5e-324, prompt_tokens=1, output_tokens=1)},
            InvalidInput,
            "workload.qps",
        ),
        (
            {"as_of": datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-23)))},
            InvalidInput,
            "as_of",
        ),
    ],
)
def test_each_error_names_its_field(
    changes: dict[str, object], error: type[DomainError], field: str
) -> None:
    with pytest.raises(error) as caught:
        canonical_request(draft(**changes), snapshot())
    assert caught.value.field == field


def test_what_a_request_leaves_out_takes_the_server_defaults() -> None:
    built_in = canonical_request(draft(), snapshot()).constraints
    assert built_in.headroom is None  # derived per GPU family from the model's error
    assert built_in.mixing == MixingPolicy(2, 10.0, False)
    server = PlanDefaults(headroom=0.25, mixing=MixingPolicy(3, 5.0, True))
    served = canonical_request(draft(), snapshot(), defaults=server).constraints
    assert served.headroom == 0.25 and served.mixing == MixingPolicy(3, 5.0, True)
    # the plan id names the values used, so two servers with different defaults never share one
    other = plan_id(canonical_request(draft(), snapshot(), defaults=server), 1)
    assert other != pid(draft())


def test_a_request_overrides_the_server_defaults_field_by_field() -> None:
    server = PlanDefaults(headroom=0.25, mixing=MixingPolicy(3, 5.0, True))
    asked = draft(
        constraints=ConstraintsDraft(headroom=0.0, mixing=MixingDraft(min_mix_savings_percent=20.0))
    )
    c = canonical_request(asked, snapshot(), defaults=server).constraints
    assert c.headroom == 0.0
    assert c.mixing == MixingPolicy(3, 20.0, True)
    doc = canonical_document(canonical_request(asked, snapshot(), defaults=server))
    assert doc["constraints"]["mixing"] == {
        "max_gpu_types": 3,
        "min_mix_savings_percent": 20.0,
        "allow_mixed_vendors": True,
    }


def test_no_mixing_is_one_gpu_type() -> None:
    single = canonical_request(draft(constraints=ConstraintsDraft(allow_mix=False)), snapshot())
    one = canonical_request(
        draft(constraints=ConstraintsDraft(mixing=MixingDraft(max_gpu_types=1))), snapshot()
    )
    assert single.constraints.mixing.max_gpu_types == 1 == one.constraints.mixing.max_gpu_types
    assert not single.constraints.allow_mix and not one.constraints.allow_mix
    assert canonical_bytes(single) == canonical_bytes(one)
