"""The flat inputs of a plan request, defined once: the ``GET /v1/plan`` query parameters and
the ``gpuplan plan`` options are both made from ``PLAN_FIELDS`` (types, limits and defaults
come from the POST body's wire types, ``plan_request``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.api.schemas.flat import FlatField, body_from_data, body_from_flat, flat_name
from service.api.schemas.plan_request import PlanRequestIn

PLAN_FIELDS: tuple[FlatField, ...] = (
    FlatField("model", "model", "Preset id or alias.", required=True),
    FlatField("qps", "workload.qps", "Total requests/s.", required=True),
    FlatField("prompt_tokens", "workload.prompt_tokens", required=True),
    FlatField("output_tokens", "workload.output_tokens", required=True),
    FlatField(
        "mix",
        "workload.mix",
        "A request shape and its share (repeat; shares sum to 1).",
        shape="mix",
        query=False,
    ),
    FlatField("ttft_ms", "slo.ttft_ms"),
    FlatField("tpot_ms", "slo.tpot_ms"),
    FlatField("e2e_ms", "slo.e2e_ms"),
    FlatField("percentile", "slo.percentile"),
    FlatField("budget_usd_per_hour", "budget.usd_per_hour"),
    FlatField("budget_usd_per_month", "budget.usd_per_month", query=False),
    FlatField("gpus", "constraints.gpus", "Comma-separated ids or aliases.", shape="names"),
    FlatField("exclude_gpus", "constraints.exclude_gpus", "Comma-separated.", shape="names"),
    FlatField("providers", "constraints.providers", "Comma-separated.", shape="names"),
    FlatField(
        "allow_marketplaces",
        "constraints.allow_marketplaces",
        "With no providers named, also use marketplace offers.",
        cli_off="no-marketplaces",
    ),
    FlatField("regions", "constraints.regions", "Comma-separated.", shape="names", query=False),
    FlatField("pricing", "constraints.pricing"),
    FlatField(
        "max_cards",
        "constraints.max_cards",
        "Availability cap in cards (repeat).",
        shape="caps",
        query=False,
    ),
    FlatField(
        "card_usd",
        "constraints.owned.card_usd",
        "Your purchase price per card, USD, for pricing=owned (repeat GPU=USD).",
        shape="amounts",
        query=False,
    ),
    FlatField(
        "usd_per_kwh",
        "constraints.owned.usd_per_kwh",
        "Power price, USD/kWh, for pricing=owned.",
        query=False,
    ),
    FlatField(
        "usd_per_kwh_by_gpu",
        "constraints.owned.usd_per_kwh_by_gpu",
        "Power price per GPU, USD/kWh, for pricing=owned (repeat GPU=USD).",
        shape="amounts",
        query=False,
    ),
    FlatField("precision", "precision", "Weight format (default: the checkpoint's format)."),
    FlatField("kv_cache_precision", "kv_cache_precision"),
    FlatField("engine", "engine"),
    FlatField("engine_version", "engine_version", "Engine release, e.g. 0.6 (default: newest)."),
    FlatField("calibration", "calibration", "Calibration profile: name, name@vN or reference."),
    FlatField("headroom", "constraints.headroom"),
    FlatField("min_replicas", "constraints.min_replicas", "Fewest replicas on every fleet line."),
    FlatField(
        "min_providers",
        "constraints.spread.min_providers",
        "Fewest providers; from 2 up the fleet survives losing any one.",
    ),
    FlatField(
        "min_regions",
        "constraints.spread.min_regions",
        "Fewest regions; from 2 up the fleet survives losing any one.",
    ),
    FlatField("allow_mix", "constraints.allow_mix", cli_off="single-type"),
    FlatField(
        "allow_pcie_tensor_parallel",
        "constraints.allow_pcie_tensor_parallel",
        cli_off="nvlink-tensor-parallel-only",
    ),
    FlatField("max_gpu_types", "constraints.mixing.max_gpu_types"),
    FlatField("min_mix_savings_percent", "constraints.mixing.min_mix_savings_percent"),
    FlatField(
        "allow_mixed_vendors", "constraints.mixing.allow_mixed_vendors", cli_off="one-vendor"
    ),
    FlatField(
        "routing",
        "routing",
        "by_shape (shapes may go to different lines) or shared (every line serves the mix).",
    ),
    FlatField("as_of", "as_of", "Plan with the prices known at this ISO 8601 moment.", query=False),
)


def plan_request_from_flat(values: Mapping[str, Any]) -> PlanRequestIn:
    """Flat ``values`` (query parameters or CLI options, by field name) as a request body;
    ``InvalidInput`` naming the body path at fault."""
    return body_from_data(PlanRequestIn, body_from_flat(PLAN_FIELDS, values))


def plan_flat_name(path: str | None, *, query: bool) -> str | None:
    """The query parameter (``query``) or CLI field that holds body ``path``."""
    return flat_name(PLAN_FIELDS, path, query=query)
