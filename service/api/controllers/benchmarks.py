"""``/v1/benchmarks``: a team's own benchmark result files, as the raw request body.

    curl -X POST 'localhost:8000/v1/benchmarks?gpu=a100-sxm-80gb&tensor_parallel=1'\
    '&precision=bf16&engine_version=0.11.0&labels=team:search' \\
      -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\
      --data-binary @vllm-result.json

The body is the file the tool wrote, unmodified (``vllm bench serve --save-result`` JSON,
SGLang ``bench_serving`` JSONL, a GuideLLM report, a genai-perf ``profile_export`` JSON, or
CSV with the columns of ``service/data/serving_measurements.csv``); what the file does not say
comes as query parameters. Mounted on the ingest router (bodies up to
``GPUPLAN_MAX_INGEST_BODY_BYTES``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.exceptions import ClientException
from litestar.openapi.spec import Example, OpenAPIMediaType, Operation, RequestBody, Schema
from litestar.openapi.spec.enums import OpenAPIType
from litestar.params import QueryParameter
from litestar.status_codes import (
    HTTP_200_OK,
    HTTP_201_CREATED,
    HTTP_415_UNSUPPORTED_MEDIA_TYPE,
)

from service.api.auth import admin_guard, bearer_token
from service.api.openapi_docs import problems, success
from service.api.schemas.benchmarks import BenchmarkImportOut, BenchmarkListOut
from service.domain.benchmarks import BENCHMARK_FORMATS, BenchmarkFormat, RunContext
from service.domain.vocabulary import Engine, KvPrecision, Precision
from service.usecases.benchmarks import BenchmarkService

_EXAMPLE = json.dumps(
    {
        "date": "20251020-101500", "endpoint_type": "vllm", "backend": "vllm",
        "model_id": "Qwen/Qwen3-14B", "num_prompts": 500, "request_rate": "inf",
        "burstiness": 1.0, "max_concurrency": None, "duration": 175.44, "completed": 500,
        "failed": 0, "total_input_tokens": 996928, "total_output_tokens": 49937,
        "request_throughput": 2.85, "output_throughput": 284.64,
        "total_token_throughput": 5967.13, "mean_ttft_ms": 86908.3,
        "median_ttft_ms": 86575.09, "p99_ttft_ms": 170607.65, "mean_tpot_ms": 301.73,
        "median_tpot_ms": 334.17, "p99_tpot_ms": 334.55, "mean_itl_ms": 299.28,
    }
)  # fmt: skip
MEDIA_TYPES = (
    "application/json", "application/x-ndjson", "application/jsonl", "text/csv",
    "text/plain", "application/octet-stream",
)  # fmt: skip


@dataclass
class FileBodyOperation(Operation):
    """The operation's request body: the result file (Litestar documents only decoded
    bodies)."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True,
            description="The benchmark tool's result file, unmodified: "
            "`curl --data-binary @result.json`.",
            content={
                media: OpenAPIMediaType(
                    schema=Schema(type=OpenAPIType.STRING),
                    examples={"vllm": Example(summary="vllm bench serve result", value=_EXAMPLE)}
                    if media in ("application/json", "text/plain")
                    else None,
                )
                for media in MEDIA_TYPES
            },
        )


def key_id(request: Request[Any, Any, Any]) -> str:
    """First 12 hex digits of the admin key's SHA-256: names the key in provenance without
    revealing it."""
    return hashlib.sha256(bearer_token(request).encode()).hexdigest()[:12]


def _check_media(request: Request[Any, Any, Any]) -> None:
    media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media and media not in MEDIA_TYPES:
        raise ClientException(
            status_code=HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            detail=f"Content-Type {media!r} is not a result file: send the file itself "
            "(application/json, text/csv, ...) with curl --data-binary @file",
            extra={"field": "Content-Type"},
        )


class BenchmarkController(Controller):
    """Mounted on the ingest router."""

    path = "/v1/benchmarks"
    tags = ("calibration",)

    @post(
        "/",
        operation_id="importBenchmark",
        operation_class=FileBodyOperation,
        responses={
            **success(BenchmarkImportOut, "benchmark_import", "The stored file.", 201),
            **success(
                BenchmarkImportOut,
                "benchmark_import_repeated",
                "This content was imported before: nothing written, the first record.",
            ),
            **problems(400, 401, 403, 413, 415, 422, 429, 503),
        },
        summary="Import a benchmark result file (admin)",
        guards=[admin_guard],
        status_code=HTTP_201_CREATED,
        security=[{"bearerAuth": []}],
        opt={"ingest": True},
    )
    async def import_benchmark(
        self,
        request: Request[Any, Any, Any],
        benchmarks: NamedDependency[BenchmarkService],
        format: Annotated[  # the query parameter is named format
            BenchmarkFormat | None,
            QueryParameter(description=f"{', '.join(BENCHMARK_FORMATS)}; default: detected."),
        ] = None,
        gpu: Annotated[
            str | None,
            QueryParameter(
                max_length=64,
                description="GPU id or alias that ran it.",
                examples=[Example(summary="A100 SXM 80 GB", value="a100-sxm-80gb")],
            ),
        ] = None,
        cards: Annotated[
            int | None,
            QueryParameter(
                ge=1, le=4096, description="All cards of the run (default: tensor_parallel)."
            ),
        ] = None,
        tensor_parallel: Annotated[
            int | None,
            QueryParameter(
                ge=1, le=72, description="Cards per replica.", examples=[Example(value=1)]
            ),
        ] = None,
        engine: Annotated[
            Engine | None,
            QueryParameter(
                description="Serving engine (default: the client's backend when it names one)."
            ),
        ] = None,
        engine_version: Annotated[
            str | None,
            QueryParameter(
                max_length=32,
                description="Engine release, e.g. 0.11.0.",
                examples=[Example(summary="vLLM 0.11.0", value="0.11.0")],
            ),
        ] = None,
        precision: Annotated[
            Precision | None,
            QueryParameter(description="Weight format.", examples=[Example(value="bf16")]),
        ] = None,
        kv_precision: Annotated[
            KvPrecision | None, QueryParameter(description="KV-cache format (default bf16).")
        ] = None,
        model: Annotated[
            str | None,
            QueryParameter(
                max_length=200,
                description="Model preset id or alias (default: the file's model id).",
            ),
        ] = None,
        labels: Annotated[
            str | None,
            QueryParameter(
                max_length=1200,
                description="Comma-separated labels, e.g. team:search,cluster:eu-1.",
            ),
        ] = None,
        filename: Annotated[
            str | None,
            QueryParameter(max_length=255, description="The file's name, for provenance."),
        ] = None,
    ) -> Response[BenchmarkImportOut]:
        """Parse the file, complete every run with the context given here (a 422 names what is
        still missing), and store its measurements with their provenance, all or nothing.
        A file whose content was imported before is not stored again: 200 with the first
        record."""
        _check_media(request)
        outcome = await benchmarks.import_file(
            await request.body(),
            fmt=format,
            context=RunContext(
                gpu=gpu, cards=cards, tensor_parallel=tensor_parallel, engine=engine,
                engine_version=engine_version, precision=precision, kv_precision=kv_precision,
                model=model,
            ),
            labels=tuple(s.strip() for s in (labels or "").split(",") if s.strip()),
            filename=filename,
            key_id=key_id(request),
        )  # fmt: skip
        return Response(
            BenchmarkImportOut.from_outcome(outcome),
            status_code=HTTP_201_CREATED if outcome.created else HTTP_200_OK,
        )

    @get(
        "/",
        operation_id="listBenchmarks",
        responses={
            **success(BenchmarkListOut, "benchmark_list", "Every imported file."),
            **problems(400, 503),
        },
        summary="Imported benchmark files",
    )
    async def list_benchmarks(
        self, benchmarks: NamedDependency[BenchmarkService]
    ) -> BenchmarkListOut:
        """Every imported file with its provenance, oldest first."""
        records = await benchmarks.imports()
        return BenchmarkListOut(
            count=len(records), imports=[BenchmarkImportOut.from_domain(r) for r in records]
        )
