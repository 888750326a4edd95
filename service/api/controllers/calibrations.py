"""``/v1/calibrations``: fit, list and read calibration profiles, follow a fit, read a
profile's report (JSON, or a text table for curl)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import ResponseHeader
from litestar.di import NamedDependency
from litestar.openapi.spec import Operation
from litestar.params import PathParameter, QueryParameter
from litestar.status_codes import HTTP_201_CREATED, HTTP_202_ACCEPTED

from service.api.auth import admin_guard
from service.api.controllers.benchmarks import key_id
from service.api.openapi_docs import json_body, problems, success
from service.api.schemas.calibrations import (
    CalibrationIn,
    CalibrationJobOut,
    CalibrationListOut,
    CalibrationOut,
    CalibrationReportOut,
    report_text,
)
from service.domain.errors import NotFound
from service.usecases.calibrating import CalibrationService

NamePath = Annotated[str, PathParameter(min_length=1, max_length=63, description="Profile name.")]
VersionQuery = Annotated[
    int | None,
    QueryParameter(ge=1, le=1_000_000, description="A version (default: the newest)."),
]


class UnknownJob(NotFound):
    kind = "calibration job"


class ReportOperation(Operation):
    """The report's 200 answer also as a text table (``?format=text`` or ``Accept``)."""

    def to_schema(self) -> dict[str, Any]:
        schema = super().to_schema()
        ok = schema.get("responses", {}).get("200")
        if ok is not None:
            ok.setdefault("content", {})["text/plain"] = {
                "schema": {
                    "type": "string",
                    "description": "The report as an aligned table for a terminal "
                    "(?format=text or Accept: text/plain).",
                }
            }
        return schema


class CalibrationController(Controller):
    path = "/v1/calibrations"
    tags = ("calibration",)

    @post(
        "/",
        operation_id="createCalibration",
        responses={
            **success(CalibrationOut, "calibration", "Fitted and stored (a quick fit).", 201),
            **success(
                CalibrationJobOut,
                "calibration_job",
                "The fit is running: follow status_url (also the Location header).",
                202,
            ),
            **problems(400, 401, 403, 413, 415, 422, 429, 503),
        },
        response_headers=[
            ResponseHeader(
                name="Location",
                description="202: the job's status URL; 201: the profile's URL.",
                documentation_only=True,
            )
        ],
        summary="Fit a calibration profile on stored benchmark measurements (admin)",
        guards=[admin_guard],
        status_code=HTTP_201_CREATED,
        security=[{"bearerAuth": []}],
    )
    async def create(
        self,
        request: Request[Any, Any, Any],
        calibrations: NamedDependency[CalibrationService],
        data: Annotated[CalibrationIn, json_body("calibration_request", "Fit team-search")],
    ) -> Response[Any]:
        """Fit corrections to the reference constants (compute, bandwidth, per-iteration
        overhead per GPU family) on the selected measurements of one engine, and store them as
        the next version of `name`, with the error before and after and each file held out.
        A fit done within a second answers 201 with the profile; a longer one 202 with the
        job's status URL."""
        job = await calibrations.start(
            data.name, data.engine, data.selection.to_domain(), key_id(request)
        )
        if job.profile is not None:
            out = CalibrationOut.from_domain(job.profile)
            return Response(
                out,
                status_code=HTTP_201_CREATED,
                headers={"Location": f"/v1/calibrations/{out.name}?version={out.version}"},
            )
        body = CalibrationJobOut.from_domain(job)
        return Response(body, status_code=HTTP_202_ACCEPTED, headers={"Location": body.status_url})

    @get(
        "/",
        operation_id="listCalibrations",
        responses={
            **success(CalibrationListOut, "calibration_list", "Every profile, newest version."),
            **problems(400, 503),
        },
        summary="Calibration profiles",
    )
    async def list_profiles(
        self, calibrations: NamedDependency[CalibrationService]
    ) -> CalibrationListOut:
        """The newest version of every calibration profile."""
        found = await calibrations.profiles()
        return CalibrationListOut(
            count=len(found), calibrations=[CalibrationOut.from_domain(p) for p in found]
        )

    @get(
        "/jobs/{job_id:str}",
        operation_id="getCalibrationJob",
        responses={
            **success(CalibrationJobOut, "calibration_job", "The job and its progress."),
            **problems(400, 404, 422),
        },
        summary="A running or finished calibration fit",
    )
    async def get_job(
        self,
        calibrations: NamedDependency[CalibrationService],
        job_id: Annotated[str, PathParameter(min_length=1, max_length=64)],
    ) -> CalibrationJobOut:
        """Progress (fits done of total), then the stored profile or the error."""
        job = calibrations.job(job_id)
        if job is None:
            raise UnknownJob(job_id, remedy="jobs are kept by the server that runs them")
        return CalibrationJobOut.from_domain(job)

    @get(
        "/{name:str}",
        operation_id="getCalibration",
        responses={
            **success(CalibrationOut, "calibration", "The profile."),
            **problems(400, 404, 422, 503),
        },
        summary="One calibration profile",
    )
    async def get_profile(
        self,
        calibrations: NamedDependency[CalibrationService],
        name: NamePath,
        version: VersionQuery = None,
    ) -> CalibrationOut:
        """The newest version of the profile, or `version`."""
        return CalibrationOut.from_domain(await calibrations.get(name, version))

    @get(
        "/{name:str}/report",
        operation_id="getCalibrationReport",
        responses={
            **success(CalibrationReportOut, "calibration_report", "The fit report."),
            **problems(400, 404, 422, 503),
        },
        operation_class=ReportOperation,
        summary="A calibration profile's fit report (JSON, or text for curl)",
    )
    async def get_report(
        self,
        request: Request[Any, Any, Any],
        calibrations: NamedDependency[CalibrationService],
        name: NamePath,
        version: VersionQuery = None,
        format: Annotated[  # the query parameter is named format
            Literal["json", "text"] | None,
            QueryParameter(
                description="json (default) or text (also chosen by Accept: text/plain)."
            ),
        ] = None,
    ) -> Response[CalibrationReportOut]:
        """Per GPU family and metric: rows, the reference constants' median error on the
        team's rows, the calibrated error, and the error with each file held out."""
        profile = await calibrations.get(name, version)
        accept = request.headers.get("accept", "")
        text = format == "text" or (
            format is None and "text/plain" in accept and "application/json" not in accept
        )
        if text:
            return cast(
                Response[CalibrationReportOut],
                Response(content=report_text(profile), media_type="text/plain"),
            )
        return Response(CalibrationReportOut.from_domain(profile))
