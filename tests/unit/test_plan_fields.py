"""The one definition of a plan request's flat inputs: query string and CLI options become the
same body as the POST, limits come from the body, and errors name the caller's own field."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from service.api.schemas.flat import field_type
from service.api.schemas.plan_fields import (
    PLAN_FIELDS,
    plan_flat_name,
    plan_request_from_flat,
)
from service.api.schemas.plan_request import MIN_QPS, PlanRequestIn
from service.domain.errors import InvalidInput


def test_every_field_names_a_body_path_with_a_type() -> None:
    for field in PLAN_FIELDS:
        spec = field_type(PlanRequestIn, field)
        assert spec.base is not None, field.name
    qps = field_type(PlanRequestIn, next(f for f in PLAN_FIELDS if f.name == "qps"))
    assert qps.base is float and qps.limits == {"ge": MIN_QPS, "le": 1_000_000}
    percentile = field_type(PlanRequestIn, next(f for f in PLAN_FIELDS if f.name == "percentile"))
    assert percentile.default == 95.0 and percentile.limits == {"ge": 50, "le": 99.9}


def test_flat_values_make_the_same_request_as_the_body() -> None:
    flat: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "qps": 9.0,
        "mix": ("0.5:300:100", "0.5:3000:200"),
        "tpot_ms": 70.0,
        "budget_usd_per_month": 7300.0,
        "gpus": "l40s, h100,,",
        "exclude_gpus": "",
        "max_cards": ("h100=8",),
        "allow_mix": False,
        "as_of": "2025-06-01T00:00:00Z",
    }
    body = {
        "model": "llama-3.1-8b",
        "workload": {
            "qps": 9,
            "mix": [
                {"share": 0.5, "prompt_tokens": 300, "output_tokens": 100},
                {"share": 0.5, "prompt_tokens": 3000, "output_tokens": 200},
            ],
        },
        "slo": {"tpot_ms": 70},
        "budget": {"usd_per_month": 7300},
        "constraints": {"gpus": ["l40s", "h100"], "max_cards": {"h100": 8}, "allow_mix": False},
        "as_of": "2025-06-01T00:00:00Z",
    }
    from_flat = plan_request_from_flat(flat).to_draft()
    assert from_flat == msgspec.convert(body, PlanRequestIn).to_draft()
    assert plan_request_from_flat({"model": "x", "qps": 1.0}).budget is None


@pytest.mark.parametrize(
    ("flat", "field"),
    [
        ({"qps": -1.0}, "workload.qps"),
        ({"gpus": ",".join(f"g{i}" for i in range(65))}, "constraints.gpus"),
        ({"mix": ("0.5:300",)}, "workload.mix"),
        ({"max_cards": ("h100:8",)}, "constraints.max_cards"),
        ({"percentile": 10.0}, "slo.percentile"),
    ],
)
def test_invalid_flat_values_name_the_body_path(flat: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        plan_request_from_flat({"model": "llama-3.1-8b", "qps": 1.0, **flat})
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("path", "query", "cli"),
    [
        ("workload.qps", "qps", "qps"),
        ("workload.prompt_tokens", "prompt_tokens", "prompt_tokens"),
        ("constraints.gpus[3]", "gpus", "gpus"),
        ("constraints.exclude_gpus", "exclude_gpus", "exclude_gpus"),
        ("budget", "budget_usd_per_hour", "budget"),
        ("constraints.max_cards.h100", "constraints.max_cards.h100", "max_cards"),
        ("workload.mix[1]", "workload.mix[1]", "mix"),
        ("model", "model", "model"),
        (None, None, None),
    ],
)
def test_body_paths_translate_to_flat_names(path: str | None, query: str, cli: str) -> None:
    assert plan_flat_name(path, query=True) == query
    assert plan_flat_name(path, query=False) == cli
