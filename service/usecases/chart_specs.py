"""Vega-Lite specifications of the curves around a plan (plain dictionaries, JSON-ready).

The same specification is answered beside the curve's data (a portal renders it natively, in
its own style) and rendered to SVG and PNG by :mod:`service.usecases.charts`. Data is inline
(no URL to load); titles and axis titles carry units. The light or dark look is a rendering
theme, not part of the specification.
"""

from __future__ import annotations

from typing import Any, Literal

from service.domain.planner import PlanRequest
from service.domain.planner.sweep import PLAN_SERIES, LoadCurve, PerGpu, SloCurve

VEGA_LITE_VERSION = "6.4"
SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.4.1.json"
CurveName = Literal["cost-vs-load", "cost-vs-slo", "per-gpu"]
CURVES: tuple[CurveName, ...] = ("cost-vs-load", "cost-vs-slo", "per-gpu")

_WIDTH = 560
_HEIGHT = 320
_SLO_TITLES = {"tpot_ms": "TPOT limit (ms)", "ttft_ms": "TTFT limit (ms)"}


def _subtitle(request: PlanRequest) -> str:
    limits = [
        f"{name} ≤ {value:g} ms"
        for name, value in (
            ("TTFT", request.slo.ttft_ms),
            ("TPOT", request.slo.tpot_ms),
            ("E2E", request.slo.e2e_ms),
        )
        if value is not None
    ]
    slo = f"p{request.slo.percentile:g} " + ", ".join(limits) if limits else "no latency limit"
    return f"{request.model.arch.id} · {request.qps:g} requests/s · {slo}"


def _series_label(name: str) -> str:
    return "plan (mix allowed)" if name == PLAN_SERIES else f"{name} only"


def cost_vs_load_spec(curve: LoadCurve, request: PlanRequest) -> dict[str, Any]:
    """Step lines of USD/hour against offered load, one per policy (the plan's, then each GPU
    alone); a dashed rule at the requested load and, with a budget, one at the budget. Each
    point's cost holds from the previous point up to it (``step-before``): the cheapest fleet
    at a load also serves every smaller load."""
    values = [
        {
            "series": _series_label(s.name),
            "qps": round(p.x, 6),
            "usd_per_hour": round(p.usd_per_hour, 4),
        }
        for s in curve.series
        for p in s.points
        if p.usd_per_hour is not None
    ]
    order = [_series_label(s.name) for s in curve.series]
    layers: list[dict[str, Any]] = [
        {
            "data": {"values": values},
            "mark": {"type": "line", "interpolate": "step-before", "point": True},
            "encoding": {
                "x": {
                    "field": "qps",
                    "type": "quantitative",
                    "title": "Offered load (requests/s)",
                },
                "y": {"field": "usd_per_hour", "type": "quantitative", "title": "Cost (USD/hour)"},
                "color": {
                    "field": "series",
                    "type": "nominal",
                    "title": "Fleet",
                    "sort": order,
                },
                "strokeWidth": {
                    "condition": {"test": f"datum.series === '{order[0]}'", "value": 3}
                    if order
                    else {"test": "false", "value": 3},
                    "value": 1.5,
                },
                "tooltip": [
                    {"field": "series", "type": "nominal", "title": "Fleet"},
                    {"field": "qps", "type": "quantitative", "title": "Load (requests/s)"},
                    {
                        "field": "usd_per_hour",
                        "type": "quantitative",
                        "title": "Cost (USD/hour)",
                        "format": ".2f",
                    },
                ],
            },
        },
        {
            "data": {"values": [{"qps": curve.requested_qps, "label": "requested load"}]},
            "mark": {"type": "rule", "strokeDash": [6, 4], "color": "#888888"},
            "encoding": {
                "x": {"field": "qps", "type": "quantitative"},
                "tooltip": [{"field": "label", "type": "nominal"}],
            },
        },
    ]
    if curve.budget_usd_per_hour is not None:
        layers.append(
            {
                "data": {
                    "values": [{"usd_per_hour": curve.budget_usd_per_hour, "label": "budget"}]
                },
                "mark": {"type": "rule", "strokeDash": [2, 3], "color": "#d62728"},
                "encoding": {
                    "y": {"field": "usd_per_hour", "type": "quantitative"},
                    "tooltip": [{"field": "label", "type": "nominal"}],
                },
            }
        )
    return {
        "$schema": SCHEMA_URL,
        "title": {
            "text": "Cost vs load: cheapest fleet at each load (USD/hour)",
            "subtitle": _subtitle(request),
        },
        "width": _WIDTH,
        "height": _HEIGHT,
        "layer": layers,
    }


def cost_vs_slo_spec(curve: SloCurve, request: PlanRequest) -> dict[str, Any]:
    """One panel per moved limit: USD/hour of the plan's policy against that limit (ms), a
    dashed rule at the requested value."""
    requested = dict(curve.requested)
    panels = []
    for s in curve.series:
        values = [
            {"limit_ms": round(p.x, 6), "usd_per_hour": round(p.usd_per_hour, 4)}
            for p in s.points
            if p.usd_per_hour is not None
        ]
        title = _SLO_TITLES.get(s.name, s.name)
        panels.append(
            {
                "width": _WIDTH // 2,
                "height": _HEIGHT,
                "title": f"Cost vs {title.split(' ')[0]} limit",
                "layer": [
                    {
                        "data": {"values": values},
                        "mark": {"type": "line", "interpolate": "linear", "point": True},
                        "encoding": {
                            "x": {
                                "field": "limit_ms",
                                "type": "quantitative",
                                "title": f"p{curve.percentile:g} {title}",
                                "scale": {"type": "log"},
                                "axis": {"labelOverlap": "greedy"},
                            },
                            "y": {
                                "field": "usd_per_hour",
                                "type": "quantitative",
                                "title": "Cost (USD/hour)",
                            },
                            "tooltip": [
                                {"field": "limit_ms", "type": "quantitative", "title": title},
                                {
                                    "field": "usd_per_hour",
                                    "type": "quantitative",
                                    "title": "Cost (USD/hour)",
                                    "format": ".2f",
                                },
                            ],
                        },
                    },
                    {
                        "data": {"values": [{"limit_ms": requested[s.name], "label": "requested"}]},
                        "mark": {"type": "rule", "strokeDash": [6, 4], "color": "#888888"},
                        "encoding": {
                            "x": {"field": "limit_ms", "type": "quantitative"},
                            "tooltip": [{"field": "label", "type": "nominal"}],
                        },
                    },
                ],
            }
        )
    return {
        "$schema": SCHEMA_URL,
        "title": {
            "text": "Cost vs latency SLO: cheapest fleet as a limit tightens or loosens",
            "subtitle": _subtitle(request),
        },
        "hconcat": panels,
    }


def per_gpu_spec(table: PerGpu, request: PlanRequest) -> dict[str, Any]:
    """Two bar charts over the GPUs, cheapest first: cost per million output tokens and the
    most load one replica sustains under the SLO (both at full load, for the request's mix)."""
    values = [
        {
            "gpu": row.gpu,
            "option": f"{row.provider} {row.instance_type} (tp{row.tensor_parallel})",
            "usd_per_million_output_tokens": round(row.usd_per_million_output_tokens, 4),
            "max_qps_per_replica": round(row.max_qps_per_replica, 4),
            "usd_per_replica_hour": round(row.usd_per_replica_hour, 4),
        }
        for row in table.rows
    ]
    order = [row.gpu for row in table.rows]
    tooltip = [
        {"field": "gpu", "type": "nominal", "title": "GPU"},
        {"field": "option", "type": "nominal", "title": "Cheapest option"},
        {
            "field": "usd_per_million_output_tokens",
            "type": "quantitative",
            "title": "USD per million output tokens",
            "format": ".2f",
        },
        {
            "field": "max_qps_per_replica",
            "type": "quantitative",
            "title": "Max load per replica (requests/s)",
            "format": ".3f",
        },
        {
            "field": "usd_per_replica_hour",
            "type": "quantitative",
            "title": "USD per replica-hour",
            "format": ".2f",
        },
    ]

    def bars(field: str, title: str, heading: str) -> dict[str, Any]:
        return {
            "width": _WIDTH // 2,
            "height": max(60, 24 * len(values)),
            "title": heading,
            "mark": {"type": "bar"},
            "encoding": {
                "y": {"field": "gpu", "type": "nominal", "sort": order, "title": "GPU"},
                "x": {"field": field, "type": "quantitative", "title": title},
                "tooltip": tooltip,
            },
        }

    return {
        "$schema": SCHEMA_URL,
        "title": {"text": "Per GPU for this workload", "subtitle": _subtitle(request)},
        "data": {"values": values},
        "hconcat": [
            bars(
                "usd_per_million_output_tokens",
                "USD per million output tokens",
                "Cost per million output tokens (at full load)",
            ),
            bars(
                "max_qps_per_replica",
                "Requests/s per replica",
                "Max load per replica under the SLO",
            ),
        ],
    }
