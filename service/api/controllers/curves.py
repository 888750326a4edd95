"""Curves endpoints: the cost-vs-load, cost-vs-SLO and per-GPU curves of a stored plan (by id)
or of a request (POST body, or the ``GET /v1/plan`` query string), as JSON data with a
Vega-Lite specification, or as an SVG or PNG picture (``<curve>.svg`` / ``<curve>.png``).

Each handler parses, calls the curves use case once and renders its answer.
"""

from __future__ import annotations

from typing import Annotated, Any, cast, get_args

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Operation
from litestar.params import PathParameter, QueryParameter
from litestar.status_codes import HTTP_200_OK

from service.api.controllers.plans import PlanIdParam, query_problem
from service.api.flat_query import accepts_query
from service.api.headers import catalog_headers
from service.api.openapi_docs import json_body, problems
from service.api.schemas.curves import ChartName, CurveOut, curve_out
from service.api.schemas.plan_fields import PLAN_FIELDS, plan_request_from_flat
from service.api.schemas.plan_request import PlanRequestIn
from service.domain.errors import DomainError
from service.domain.planner import PlanDraft
from service.usecases.chart_specs import CurveName
from service.usecases.charts import CurvesService, PictureFormat, Theme

CHART_NAMES: tuple[str, ...] = get_args(ChartName)
ChartParam = Annotated[
    ChartName,
    PathParameter(
        description="`cost-vs-load`, `cost-vs-slo` or `per-gpu`: JSON data with units and a "
        "Vega-Lite specification; with `.svg` or `.png`: the chart as a picture."
    ),
]
ThemeParam = Annotated[
    Theme,
    QueryParameter(
        description="Pictures only: `light` (dark text on white, the default) or `dark` "
        "(light text on dark grey)."
    ),
]
_ENCODER = msgspec.json.Encoder()


class ChartOperation(Operation):
    """A curve operation's 200 answer: JSON, or the picture its name asks for."""

    def to_schema(self) -> dict[str, Any]:
        schema = super().to_schema()
        ok = schema.get("responses", {}).get("200")
        if ok is not None:
            content = ok.setdefault("content", {})
            content["image/svg+xml"] = {
                "schema": {"type": "string", "description": "The chart (`<curve>.svg`)."}
            }
            content["image/png"] = {
                "schema": {
                    "type": "string",
                    "format": "binary",
                    "description": "The chart (`<curve>.png`), twice the SVG's pixel size.",
                }
            }
        return schema


def _split(chart: str) -> tuple[CurveName, PictureFormat | None]:
    name, _, suffix = chart.partition(".")
    return cast(CurveName, name), cast(PictureFormat | None, suffix or None)


_OK = {
    HTTP_200_OK: ResponseSpec(
        data_container=CurveOut,
        generate_examples=False,
        description="The curve (JSON), or its chart (SVG or PNG).",
    )
}


class CurvesController(Controller):
    path = "/v1"
    tags = ("curves",)

    async def _answer(
        self,
        curves: CurvesService,
        request: Request[Any, Any, Any],
        source: str | PlanDraft,
        chart: str,
        theme: Theme,
    ) -> Response[CurveOut]:
        name, fmt = _split(chart)
        if fmt is None:
            outcome = await curves.curve(source, name)
            headers = catalog_headers(outcome.revision, outcome.stale)
            headers["ETag"] = f'"{outcome.plan_id}:{chart}"'
            body = _ENCODER.encode(curve_out(outcome))
            media = "application/json"
        else:
            picture = await curves.picture(source, name, fmt, theme)
            headers = catalog_headers(picture.revision, picture.stale)
            headers["ETag"] = f'"{picture.plan_id}:{chart}:{theme}"'
            body, media = picture.body, picture.media_type
        headers["Cache-Control"] = "no-cache"
        return cast(
            Response[CurveOut],
            Response(content=body, media_type=media, headers=headers, status_code=HTTP_200_OK),
        )

    @get(
        "/plans/{plan_id:str}/curves/{chart:str}",
        operation_id="getPlanCurve",
        operation_class=ChartOperation,
        responses={**_OK, **problems(400, 404, 422, 503)},
        summary="A stored plan's cost curves (JSON + Vega-Lite, SVG or PNG)",
    )
    async def plan_curve(
        self,
        curves: NamedDependency[CurvesService],
        request: Request[Any, Any, Any],
        plan_id: PlanIdParam,
        chart: ChartParam,
        theme: ThemeParam = "light",
    ) -> Response[CurveOut]:
        """Cost vs load (USD/hour of the plan's policy and of each GPU alone, from a small
        load to twice the requested one), cost vs SLO (as the TPOT and TTFT limits move) or
        per GPU (cost per million output tokens and max load per replica). Computed against
        the catalog revision the plan was solved at and kept with the plan; 404 once the plan
        has expired or the catalog has moved on."""
        return await self._answer(curves, request, plan_id, chart, theme)

    @post(
        "/curves/{chart:str}",
        operation_id="createCurve",
        operation_class=ChartOperation,
        responses={**_OK, **problems(400, 404, 413, 415, 422, 503)},
        summary="A request's cost curves (JSON + Vega-Lite, SVG or PNG)",
        status_code=HTTP_200_OK,
    )
    async def request_curve(
        self,
        curves: NamedDependency[CurvesService],
        request: Request[Any, Any, Any],
        data: Annotated[PlanRequestIn, json_body("plan_request", "A two-shape mix under a budget")],
        chart: ChartParam,
        theme: ThemeParam = "light",
    ) -> Response[CurveOut]:
        """The curves of the plan POST /v1/plans answers for the same body (solved first, or
        found in the plan cache); `plan_id` names that plan."""
        return await self._answer(curves, request, data.to_draft(), chart, theme)

    @get(
        "/curves/{chart:str}",
        operation_id="getCurveByQuery",
        operation_class=ChartOperation,
        responses={**_OK, **problems(400, 404, 422, 503)},
        summary="A request's cost curves from query parameters (img src, curl)",
        exception_handlers={DomainError: query_problem},
    )
    @accepts_query(PlanRequestIn, PLAN_FIELDS, post="POST /v1/curves/{chart}")
    async def query_curve(
        self,
        curves: NamedDependency[CurvesService],
        request: Request[Any, Any, Any],
        chart: ChartParam,
        theme: ThemeParam = "light",
        **query: Any,
    ) -> Response[CurveOut]:
        """The same curves as POST /v1/curves/{chart}, for one request shape, from the query
        string of GET /v1/plan (usable as an image's `src`)."""
        body = plan_request_from_flat(query)
        return await self._answer(curves, request, body.to_draft(), chart, theme)
