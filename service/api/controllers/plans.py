"""Plans endpoints: solve (POST), the same from a query string (GET), fetch by id."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import PathParameter, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_304_NOT_MODIFIED

from service.api.headers import catalog_headers
from service.api.openapi_docs import (
    FLAT_MEDIA_TYPE,
    NON_NEGATIVE,
    NOT_MODIFIED,
    PLAN_HEADERS,
    POSITIVE,
    PlanOperation,
    json_body,
    problems,
    success,
)
from service.api.render import plan_flat, plan_text
from service.api.schemas.plans import (
    BudgetIn,
    CanonicalMemo,
    ConstraintsIn,
    PlanOut,
    PlanRequestIn,
    SloIn,
    WorkloadIn,
)
from service.domain.errors import DomainError
from service.domain.planner import Plan
from service.domain.vocabulary import Engine, KvPrecision, Precision, PricingChoice
from service.usecases.planning import PlanAnswer, PlanningService, UnknownPlan, plan_id_for

Format = Literal["json", "text", "flat"]
FormatParam = Annotated[
    Format | None,
    QueryParameter(
        description="json (default), text (an aligned table for a terminal; also chosen by "
        "`Accept: text/plain`) or flat (string values, for Terraform's external data source)."
    ),
]
_plan_decoder = msgspec.json.Decoder(PlanOut)
_encoder = msgspec.json.Encoder()

# GET /v1/plan names query parameters, not body paths, in its errors.
_QUERY_FIELDS = {
    "workload.qps": "qps",
    "workload.prompt_tokens": "prompt_tokens",
    "workload.output_tokens": "output_tokens",
    "budget": "budget_usd_per_hour",
    "constraints.gpus": "gpus",
    "constraints.exclude_gpus": "exclude_gpus",
}


def _format(request: Request[Any, Any, Any], explicit: Format | None) -> Format:
    if explicit is not None:
        return explicit
    accept = request.headers.get("accept", "")
    if "text/plain" in accept and "application/json" not in accept:
        return "text"
    return "json"


def _etag_matches(request: Request[Any, Any, Any], plan_id: str) -> bool:
    header = request.headers.get("if-none-match")
    if not header:
        return False
    tags = {t.strip().removeprefix("W/").strip('"') for t in header.split(",")}
    return plan_id in tags or "*" in tags


def _headers(answer_id: str, revision: int, stale: bool, cache: str | None) -> dict[str, str]:
    headers = catalog_headers(revision, stale)
    headers["ETag"] = f'"{answer_id}"'
    headers["Cache-Control"] = "no-cache"
    if cache is not None:
        headers["X-Cache"] = cache
    return headers


def _respond(body: bytes, fmt: Format, headers: dict[str, str], stale: bool) -> Response[PlanOut]:
    if fmt == "json":
        return cast(
            Response[PlanOut],
            Response(content=body, media_type="application/json", headers=headers),
        )
    plan = _plan_decoder.decode(body)
    if fmt == "text":
        return cast(
            Response[PlanOut],
            Response(
                content=plan_text(plan, stale=stale).encode(),
                media_type="text/plain",
                headers=headers,
            ),
        )
    return cast(
        Response[PlanOut],
        Response(
            content=_encoder.encode(plan_flat(plan)), media_type=FLAT_MEDIA_TYPE, headers=headers
        ),
    )


async def answer_plan(
    planning: PlanningService,
    request: Request[Any, Any, Any],
    body: PlanRequestIn,
    fmt: Format | None,
) -> Response[PlanOut]:
    """Shared by POST /v1/plans and GET /v1/plan."""
    request.state.cache = None
    view = await planning.snapshot(body.as_of)
    memo: CanonicalMemo = request.app.state.canonical_memo
    domain, canonical, canonical_bytes = memo.convert(
        body, view.snapshot, time_limit_s=planning.time_limit_s
    )
    revision = view.snapshot.revision
    plan_id = plan_id_for(canonical_bytes, revision)
    if _etag_matches(request, plan_id):
        return cast(
            Response[PlanOut],
            Response(
                content=b"",
                status_code=HTTP_304_NOT_MODIFIED,
                headers=_headers(plan_id, revision, view.stale, None),
            ),
        )

    def render(plan: Plan, pid: str, rev: int) -> bytes:
        out = PlanOut.from_domain(plan, plan_id=pid, revision=rev, request=canonical)
        return _encoder.encode(out)

    answer: PlanAnswer = await planning.answer(domain, plan_id, view, render)
    request.state.cache = answer.cache
    return _respond(
        answer.body,
        _format(request, fmt),
        _headers(answer.plan_id, revision, answer.stale, answer.cache),
        answer.stale,
    )


class PlansController(Controller):
    path = "/v1"
    tags = ("plans",)

    @post(
        "/plans",
        operation_id="createPlan",
        operation_class=PlanOperation,
        responses={
            **success(PlanOut, "plan", "The plan."),
            **NOT_MODIFIED,
            **problems(400, 404, 413, 422, 503),
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
        return await answer_plan(planning, request, data, format)

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
    )
    async def plan_by_query(
        self,
        planning: NamedDependency[PlanningService],
        request: Request[Any, Any, Any],
        model: Annotated[
            str, QueryParameter(min_length=1, max_length=200, description="Preset id or alias.")
        ],
        qps: Annotated[
            float,
            QueryParameter(
                gt=0, schema_extra=POSITIVE, le=1_000_000, description="Total requests/s."
            ),
        ],
        prompt_tokens: Annotated[int, QueryParameter(ge=1, le=2_000_000)],
        output_tokens: Annotated[int, QueryParameter(ge=1, le=2_000_000)],
        ttft_ms: Annotated[
            float | None, QueryParameter(gt=0, schema_extra=POSITIVE, le=3_600_000)
        ] = None,
        tpot_ms: Annotated[
            float | None, QueryParameter(gt=0, schema_extra=POSITIVE, le=3_600_000)
        ] = None,
        e2e_ms: Annotated[
            float | None, QueryParameter(gt=0, schema_extra=POSITIVE, le=3_600_000)
        ] = None,
        percentile: Annotated[float, QueryParameter(ge=50, le=99.9)] = 95.0,
        budget_usd_per_hour: Annotated[
            float | None, QueryParameter(gt=0, schema_extra=POSITIVE, le=100_000_000)
        ] = None,
        gpus: Annotated[
            str | None,
            QueryParameter(max_length=2000, description="Comma-separated ids or aliases."),
        ] = None,
        exclude_gpus: Annotated[
            str | None, QueryParameter(max_length=2000, description="Comma-separated.")
        ] = None,
        providers: Annotated[
            str | None, QueryParameter(max_length=2000, description="Comma-separated.")
        ] = None,
        pricing: Annotated[PricingChoice, QueryParameter()] = "on_demand",
        precision: Annotated[Precision, QueryParameter()] = "bf16",
        kv_cache_precision: Annotated[KvPrecision, QueryParameter()] = "bf16",
        engine: Annotated[Engine, QueryParameter()] = "vllm",
        headroom: Annotated[float, QueryParameter(ge=0, schema_extra=NON_NEGATIVE, le=10)] = 0.0,
        min_replicas: Annotated[
            int, QueryParameter(ge=0, schema_extra=NON_NEGATIVE, le=100_000)
        ] = 1,
        allow_mix: Annotated[bool, QueryParameter()] = True,
        format: FormatParam = None,
    ) -> Response[PlanOut]:
        """The same plan as POST /v1/plans, for one request shape, from a query string."""

        def names(raw: str | None, field: str) -> list[str] | None:
            if raw is None:
                return None
            items = [x.strip() for x in raw.split(",") if x.strip()]
            if len(items) > 64:
                raise DomainError("at most 64 names", field=field)
            return items or None

        body = PlanRequestIn(
            model=model,
            precision=precision,
            kv_cache_precision=kv_cache_precision,
            engine=engine,
            workload=WorkloadIn(qps=qps, prompt_tokens=prompt_tokens, output_tokens=output_tokens),
            slo=SloIn(ttft_ms=ttft_ms, tpot_ms=tpot_ms, e2e_ms=e2e_ms, percentile=percentile),
            budget=BudgetIn(usd_per_hour=budget_usd_per_hour) if budget_usd_per_hour else None,
            constraints=ConstraintsIn(
                gpus=names(gpus, "gpus"),
                exclude_gpus=names(exclude_gpus, "exclude_gpus") or [],
                providers=names(providers, "providers"),
                pricing=pricing,
                headroom=headroom,
                min_replicas=min_replicas,
                allow_mix=allow_mix,
            ),
        )
        try:
            return await answer_plan(planning, request, body, format)
        except DomainError as exc:
            if exc.field is not None:
                head = exc.field.split("[")[0]
                exc.field = _QUERY_FIELDS.get(exc.field, _QUERY_FIELDS.get(head, exc.field))
            raise

    @get(
        "/plans/{plan_id:str}",
        operation_id="getPlan",
        operation_class=PlanOperation,
        responses={
            **success(PlanOut, "plan", "The stored plan."),
            **NOT_MODIFIED,
            **problems(400, 404, 422, 503),
        },
        summary="A plan solved earlier, by id",
    )
    async def get_plan(
        self,
        planning: NamedDependency[PlanningService],
        request: Request[Any, Any, Any],
        plan_id: Annotated[
            str, PathParameter(pattern=r"^[0-9a-f]{32}$", description="From a plan's `plan_id`.")
        ],
        format: FormatParam = None,
    ) -> Response[PlanOut]:
        """The stored plan with the catalog revision it was solved at. 404 once it has expired
        from the plan cache: POST its `request` again to re-solve."""
        headers = {"ETag": f'"{plan_id}"', "Cache-Control": "no-cache"}
        if _etag_matches(request, plan_id):
            return cast(
                Response[PlanOut],
                Response(content=b"", status_code=HTTP_304_NOT_MODIFIED, headers=headers),
            )
        try:
            body = await planning.lookup(plan_id)
        except UnknownPlan as exc:
            exc.message += " (POST the plan's `request` field to /v1/plans)"
            raise
        return _respond(body, _format(request, format), headers, False)
