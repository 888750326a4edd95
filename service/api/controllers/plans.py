"""Plans endpoints: solve (POST), the same from a query string (GET), fetch by id.

Each handler turns its input into a domain draft, calls the planning use case once and renders
the domain value it answers (JSON, text or flat; renderings of a plan id are kept, since a plan
id names one plan for ever). The query string's parameters are made from the same table as the
CLI's options (``schemas.plan_fields``); its errors name query parameters, not body paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, cast

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import PathParameter, QueryParameter
from litestar.router import Router
from litestar.status_codes import HTTP_200_OK, HTTP_304_NOT_MODIFIED

from service.api.errors import handle_domain
from service.api.flat_query import accepts_query
from service.api.headers import catalog_headers, price_age_headers
from service.api.openapi_docs import (
    FLAT_MEDIA_TYPE,
    NOT_MODIFIED,
    PLAN_HEADERS,
    STORED_PLAN_HEADERS,
    PlanOperation,
    json_body,
    problems,
    success,
)
from service.api.render import Format, PlanRenderer
from service.api.schemas.plan_fields import PLAN_FIELDS, plan_flat_name, plan_request_from_flat
from service.api.schemas.plan_request import PlanRequestIn
from service.api.schemas.plan_response import PlanOut
from service.domain.errors import DomainError
from service.domain.planner import PlanDraft, SolvedPlan
from service.usecases.planning import PlanningService, UnknownPlan

PlanIdParam = Annotated[
    str, PathParameter(pattern=r"^[0-9a-f]{32}$", description="From a plan's `plan_id`.")
]
FormatParam = Annotated[
    Format | None,
    QueryParameter(
        description="json (default), text (an aligned table for a terminal; also chosen by "
        "`Accept: text/plain`) or flat (string values, for Terraform's external data source)."
    ),
]
_MEDIA_TYPES: dict[Format, str] = {
    "json": "application/json",
    "text": "text/plain",
    "flat": FLAT_MEDIA_TYPE,
}
_REPOST = "POST the plan's `request` field to /v1/plans"


def _format(request: Request[Any, Any, Any], explicit: Format | None) -> Format:
    if explicit is not None:
        return explicit
    accept = request.headers.get("accept", "")
    if "text/plain" in accept and "application/json" not in accept:
        return "text"
    return "json"


def _held(request: Request[Any, Any, Any]) -> Callable[[str], bool] | None:
    """Whether the client holds a plan id, from ``If-None-Match`` (``None`` without one)."""
    header = request.headers.get("if-none-match")
    if not header:
        return None
    tags = {t.strip().removeprefix("W/").strip('"') for t in header.split(",")}
    return lambda plan_id: plan_id in tags or "*" in tags


def _response(
    body: bytes, media_type: str, headers: dict[str, str], status: int = HTTP_200_OK
) -> Response[PlanOut]:
    return cast(
        Response[PlanOut],
        Response(content=body, media_type=media_type, headers=headers, status_code=status),
    )


def query_problem(request: Request[Any, Any, Any], exc: DomainError) -> Response[Any]:
    """A domain error of ``GET /v1/plan`` as a problem naming the query parameter at fault."""
    response = handle_domain(request, exc)
    problem = response.content
    if isinstance(problem, dict) and problem.get("field"):
        problem["field"] = plan_flat_name(problem["field"], query=True)
    return response


class PlansController(Controller):
    path = "/v1"
    tags = ("plans",)

    def __init__(self, owner: Router) -> None:
        super().__init__(owner)
        self._renderer = PlanRenderer()

    async def _answer(
        self,
        planning: PlanningService,
        request: Request[Any, Any, Any],
        draft: PlanDraft,
        fmt: Format | None,
    ) -> Response[PlanOut]:
        request.state.cache = None
        outcome = await planning.solve(draft, known=_held(request))
        headers = catalog_headers(outcome.revision, outcome.stale)
        headers["ETag"] = f'"{outcome.plan_id}"'
        headers["Cache-Control"] = "no-cache"
        if outcome.solved is None:
            return _response(b"", "application/json", headers, HTTP_304_NOT_MODIFIED)
        request.state.cache = outcome.cache
        if outcome.cache is not None:
            headers["X-Cache"] = outcome.cache
        chosen = _format(request, fmt)
        body = self._renderer.render(outcome.solved, chosen, stale=outcome.stale)
        return self._dated(planning, outcome.solved, chosen, body, headers)

    @staticmethod
    def _dated(
        planning: PlanningService,
        solved: SolvedPlan,
        chosen: Format,
        body: bytes,
        headers: dict[str, str],
    ) -> Response[PlanOut]:
        """The response with how old the plan's prices are today: headers, and over the text
        rendering the warning when they are beyond the limit (the plan itself, and so its
        JSON, does not move with the clock: ``planner.price_age``)."""
        age = planning.price_age(solved)
        headers.update(price_age_headers(age))
        warning = age.warning() if age is not None else None
        if warning is not None and chosen == "text":
            body = (warning + "\n\n").encode() + body
        return _response(body, _MEDIA_TYPES[chosen], headers)

    @post(
        "/plans",
        operation_id="createPlan",
        operation_class=PlanOperation,
        responses={
            **success(PlanOut, "plan", "The plan."),
            **NOT_MODIFIED,
            **problems(400, 404, 413, 415, 422, 503),
        },
        response_headers=PLAN_HEADERS,
        summary="Solve the cheapest fleet for a request",
        status_code=HTTP_200_OK,
    )
    async def create_plan(
        self,
        planning: NamedDependency[PlanningService],
        request: Request[Any, Any, Any],
        data: Annotated[PlanRequestIn, json_body("plan_request", "A two-shape mix under a budget")],
        format: FormatParam = None,
    ) -> Response[PlanOut]:
        """The cheapest GPU mix and card count for the workload under the SLO, with predicted
        latencies, costs, the single-type alternatives, the rejected GPUs and why. Identical
        requests at the same catalog revision give byte-identical plans (`ETag` = `plan_id`;
        `If-None-Match` answers 304). `X-Cache` says hit, miss or bypass."""
        return await self._answer(planning, request, data.to_draft(), format)

    @get(
        "/plan",
        operation_id="getPlanByQuery",
        operation_class=PlanOperation,
        responses={
            **success(PlanOut, "plan", "The plan."),
            **NOT_MODIFIED,
            **problems(400, 404, 422, 503),
        },
        response_headers=PLAN_HEADERS,
        summary="Solve a plan from query parameters (curl)",
        exception_handlers={DomainError: query_problem},
    )
    @accepts_query(PlanRequestIn, PLAN_FIELDS, post="POST /v1/plans")
    async def plan_by_query(
        self,
        planning: NamedDependency[PlanningService],
        request: Request[Any, Any, Any],
        format: FormatParam = None,
        **query: Any,
    ) -> Response[PlanOut]:
        """The same plan as POST /v1/plans, for one request shape, from a query string."""
        body = plan_request_from_flat(query)
        return await self._answer(planning, request, body.to_draft(), format)

    @get(
        "/plans/{plan_id:str}",
        operation_id="getPlan",
        operation_class=PlanOperation,
        responses={
            **success(PlanOut, "plan", "The stored plan."),
            **NOT_MODIFIED,
            **problems(400, 404, 422, 503),
        },
        response_headers=STORED_PLAN_HEADERS,
        summary="A plan solved earlier, by id",
    )
    async def get_plan(
        self,
        planning: NamedDependency[PlanningService],
        request: Request[Any, Any, Any],
        plan_id: PlanIdParam,
        format: FormatParam = None,
    ) -> Response[PlanOut]:
        """The stored plan with the catalog revision it was solved at. 404 once it has expired
        from the plan cache: POST its `request` again to re-solve."""
        headers = {"ETag": f'"{plan_id}"', "Cache-Control": "no-cache"}
        held = _held(request)
        if held is not None and held(plan_id):
            return _response(b"", "application/json", headers, HTTP_304_NOT_MODIFIED)
        try:
            solved = await planning.lookup(plan_id)
        except UnknownPlan as exc:
            raise UnknownPlan(exc.plan_id, exc.ttl_s, remedy=_REPOST) from None
        chosen = _format(request, format)
        return self._dated(planning, solved, chosen, self._renderer.render(solved, chosen), headers)
