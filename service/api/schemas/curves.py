"""Curves around a plan on the wire: each curve's data with its units and a Vega-Lite
specification of its chart (``vega_lite``), built from the domain's curves
(``domain.planner.sweep``). Numbers are rounded for reading."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from service.api.schemas.common import ReqPerS, UsdPerHour, WireOut
from service.domain.planner.sweep import CostSeries, GpuEconomics, LoadCurve, SloCurve
from service.usecases.charts import CurveOutcome

VegaLite = Annotated[
    dict[str, Any],
    Meta(
        description="A Vega-Lite specification of the chart (inline data; "
        "https://vega.github.io/schema/vega-lite/v6.json), for a portal to render natively."
    ),
]


class AxisOut(WireOut, kw_only=True):
    """What one coordinate of the points is."""

    field: str
    title: str
    unit: str


class CurvePointOut(WireOut, kw_only=True):
    x: float
    usd_per_hour: Annotated[
        UsdPerHour | None, Meta(description="USD per hour; null where no fleet meets the request.")
    ]


class CostSeriesOut(WireOut, kw_only=True):
    name: Annotated[
        str,
        Meta(
            description="`plan` (the plan's own constraints, GPUs mixed if allowed), a GPU id "
            "(that GPU alone), or the latency metric whose limit moves (`tpot_ms`, `ttft_ms`)."
        ),
    ]
    gpu: str | None
    points: list[CurvePointOut]

    @classmethod
    def from_domain(cls, series: CostSeries) -> CostSeriesOut:
        return cls(
            name=series.name,
            gpu=series.gpu,
            points=[
                CurvePointOut(
                    x=round(p.x, 4),
                    usd_per_hour=None if p.usd_per_hour is None else round(p.usd_per_hour, 4),
                )
                for p in series.points
            ],
        )


class _CurveBase(WireOut, kw_only=True):
    plan_id: str
    catalog_revision: int
    title: str
    vega_lite: VegaLite


class CostVsLoadOut(_CurveBase, kw_only=True, tag_field="curve", tag="cost-vs-load"):
    """USD/hour of the cheapest fleet at each offered load, for the plan's policy and for each
    GPU alone; budget ignored (shown beside)."""

    x: AxisOut
    y: AxisOut
    requested_qps: ReqPerS
    budget_usd_per_hour: UsdPerHour | None
    solves: Annotated[int, Meta(description="MILP solves the sweep made.")]
    series: list[CostSeriesOut]


class CostVsSloOut(_CurveBase, kw_only=True, tag_field="curve", tag="cost-vs-slo"):
    """USD/hour of the plan's policy as the TPOT, then the TTFT, limit moves around the
    requested value (x in ms), the other limits as requested."""

    x: AxisOut
    y: AxisOut
    percentile: float
    requested_ms: Annotated[
        dict[str, float], Meta(description="The requested limit of each moved metric (ms).")
    ]
    series: list[CostSeriesOut]


class GpuEconomicsOut(WireOut, kw_only=True):
    gpu: str
    tensor_parallel: int
    provider: str
    instance_type: str
    pricing: str
    usd_per_replica_hour: UsdPerHour
    max_qps_per_replica: Annotated[
        float, Meta(description="Requests per second one replica sustains under the SLO.")
    ]
    usd_per_million_output_tokens: Annotated[
        float, Meta(description="USD per million output tokens at that load.")
    ]

    @classmethod
    def from_domain(cls, row: GpuEconomics) -> GpuEconomicsOut:
        return cls(
            gpu=row.gpu,
            tensor_parallel=row.tensor_parallel,
            provider=row.provider,
            instance_type=row.instance_type,
            pricing=row.pricing,
            usd_per_replica_hour=round(row.usd_per_replica_hour, 4),
            max_qps_per_replica=round(row.max_qps_per_replica, 4),
            usd_per_million_output_tokens=round(row.usd_per_million_output_tokens, 4),
        )


class PerGpuOut(_CurveBase, kw_only=True, tag_field="curve", tag="per-gpu"):
    """Per GPU with a usable option, its cheapest per output token with replicas at the most
    load the SLO allows (no headroom), for the request's mix; cheapest first."""

    rows: list[GpuEconomicsOut]


CurveOut = CostVsLoadOut | CostVsSloOut | PerGpuOut

_USD = AxisOut(field="usd_per_hour", title="Cost", unit="USD/hour")


def curve_out(outcome: CurveOutcome) -> CurveOut:
    curve = outcome.curve
    title = outcome.spec["title"]["text"]
    common: dict[str, Any] = {
        "plan_id": outcome.plan_id,
        "catalog_revision": outcome.revision,
        "title": title,
        "vega_lite": outcome.spec,
    }
    if isinstance(curve, LoadCurve):
        return CostVsLoadOut(
            **common,
            x=AxisOut(field="x", title="Offered load, before headroom", unit="requests/s"),
            y=_USD,
            requested_qps=curve.requested_qps,
            budget_usd_per_hour=curve.budget_usd_per_hour,
            solves=curve.solves,
            series=[CostSeriesOut.from_domain(s) for s in curve.series],
        )
    if isinstance(curve, SloCurve):
        return CostVsSloOut(
            **common,
            x=AxisOut(field="x", title="Latency limit of the series' metric", unit="ms"),
            y=_USD,
            percentile=curve.percentile,
            requested_ms=dict(curve.requested),
            series=[CostSeriesOut.from_domain(s) for s in curve.series],
        )
    return PerGpuOut(**common, rows=[GpuEconomicsOut.from_domain(r) for r in curve.rows])


ChartName = Literal[
    "cost-vs-load",
    "cost-vs-load.svg",
    "cost-vs-load.png",
    "cost-vs-slo",
    "cost-vs-slo.svg",
    "cost-vs-slo.png",
    "per-gpu",
    "per-gpu.svg",
    "per-gpu.png",
]
