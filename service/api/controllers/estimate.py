"""Estimate and model-catalogue endpoints."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Response, get, post
from litestar.di import NamedDependency
from litestar.params import PathParameter
from litestar.status_codes import HTTP_200_OK

from service.api.flat_query import accepts_query
from service.api.headers import catalog_headers
from service.api.openapi_docs import json_body, problems, success
from service.api.schemas.estimate import (
    ESTIMATE_FIELDS,
    EstimateIn,
    EstimateOut,
    estimate_from_flat,
)
from service.api.schemas.models import ModelListOut, ModelOut
from service.domain.llm import PRESETS, preset_aliases, resolve_model
from service.usecases.estimating import EstimatingService


def _respond(answer_out: EstimateOut, stale: bool) -> Response[EstimateOut]:
    return Response(answer_out, headers=catalog_headers(answer_out.catalog_revision, stale))


class EstimateController(Controller):
    path = "/v1"
    tags = ("estimate",)

    @post(
        "/estimate",
        operation_id="estimate",
        responses={
            **success(EstimateOut, "estimate", "The estimate."),
            **problems(400, 404, 413, 415, 422, 503),
        },
        summary="Performance of one model on one GPU configuration",
        status_code=HTTP_200_OK,
    )
    async def estimate_post(
        self,
        estimating: NamedDependency[EstimatingService],
        data: Annotated[
            EstimateIn, json_body("estimate_request", "Llama-3.1-70B fp8 on H100 at 2 req/s")
        ],
    ) -> Response[EstimateOut]:
        """Memory fit, max concurrency, TTFT/TPOT/E2E latency, throughput and bottleneck of one
        replica; latency percentiles under `qps` when given."""
        answer = await estimating.estimate(data.to_query())
        return _respond(EstimateOut.from_domain(answer), answer.stale)

    @get(
        "/estimate",
        operation_id="estimateByQuery",
        responses={
            **success(EstimateOut, "estimate", "The estimate."),
            **problems(400, 404, 422, 503),
        },
        summary="The same estimate from query parameters",
    )
    @accepts_query(EstimateIn, ESTIMATE_FIELDS, post="POST /v1/estimate")
    async def estimate_get(
        self, estimating: NamedDependency[EstimatingService], **query: Any
    ) -> Response[EstimateOut]:
        """Same answer as POST /v1/estimate, for a preset model."""
        answer = await estimating.estimate(estimate_from_flat(query).to_query())
        return _respond(EstimateOut.from_domain(answer), answer.stale)


class ModelsController(Controller):
    path = "/v1/models"
    tags = ("models",)

    @get(
        "/",
        operation_id="listModels",
        responses={**success(ModelListOut, "model_list", "The presets."), **problems(400)},
        summary="Model presets with their architecture",
    )
    async def list_models(self) -> ModelListOut:
        """Every preset with the architecture read from its published config."""
        models = [
            ModelOut.from_domain(arch, list(preset_aliases(arch.id))) for arch in PRESETS.values()
        ]
        return ModelListOut(count=len(models), models=models)

    @get(
        "/{model_id:str}",
        operation_id="getModel",
        responses={**success(ModelOut, "model", "One preset."), **problems(400, 404, 422)},
        summary="One model preset by id or alias",
    )
    async def get_model(
        self,
        model_id: Annotated[
            str, PathParameter(min_length=1, max_length=200, description="Preset id or alias.")
        ],
    ) -> ModelOut:
        """One preset; an unknown id answers 404 with the closest ids."""
        arch = resolve_model(model_id).arch
        return ModelOut.from_domain(arch, list(preset_aliases(arch.id)))
