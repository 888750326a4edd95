"""``/v1/calibrations`` wire types: the fit request, the stored profile, the job and the
report."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.api.schemas.common import WireIn, WireOut
from service.domain.profiles.fit import ErrorCell
from service.domain.profiles.values import CalibrationProfile, Selection
from service.domain.vocabulary import Engine
from service.usecases.calibrating import FitJob

ProfileName = Annotated[
    str,
    Meta(
        pattern=r"^[a-z0-9][a-z0-9-]{0,62}$",
        description="Profile name: a lowercase slug, e.g. team-search.",
        examples=["team-search"],
    ),
]
CalibrationSpec = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=80,
        pattern=r"^[a-z0-9][a-z0-9-]{0,62}(@v[1-9][0-9]{0,8})?$",
        description="A calibration profile (POST /v1/calibrations): its name for the newest "
        "version, name@vN to pin one, or reference for the reference constants. Default: the "
        "server's GPUPLAN_DEFAULT_CALIBRATION, else the reference constants.",
        examples=["team-search"],
    ),
]
Names = Annotated[list[Annotated[str, Meta(min_length=1, max_length=200)]], Meta(max_length=32)]


class SelectionIn(WireIn, kw_only=True):
    """Which stored measurements to fit on: files carrying every label, on any of these GPUs
    and models (empty: any)."""

    labels: Names = msgspec.field(default_factory=list)
    gpus: Names = msgspec.field(default_factory=list)
    models: Names = msgspec.field(default_factory=list)

    def to_domain(self) -> Selection:
        return Selection(tuple(self.labels), tuple(self.gpus), tuple(self.models))


class CalibrationIn(WireIn, kw_only=True):
    name: ProfileName
    engine: Annotated[Engine, Meta(description="The engine whose measurements are fitted.")]
    selection: SelectionIn = msgspec.field(default_factory=SelectionIn)


class SelectionOut(WireOut, kw_only=True):
    labels: list[str]
    gpus: list[str]
    models: list[str]


class CorrectionOut(WireOut, kw_only=True):
    family: Annotated[str, Meta(description="GPU family (calibration group), e.g. ampere-hbm.")]
    compute: Annotated[float, Meta(description="Multiplier on achieved GEMM throughput.")]
    memory: Annotated[float, Meta(description="Multiplier on achieved memory bandwidth.")]
    overhead: Annotated[float, Meta(description="Multiplier on per-iteration overheads.")]


class ErrorOut(WireOut, kw_only=True):
    """Median absolute percentage errors (percent) on the fitted rows."""

    reference_pct: Annotated[float, Meta(description="With the reference constants.")]
    calibrated_pct: Annotated[float, Meta(description="With this profile (in sample).")]
    held_out_pct: Annotated[
        float | None,
        Meta(description="Each file predicted by a fit without it (null with one file)."),
    ]


class ReportCellOut(WireOut, kw_only=True):
    family: str
    metric: str
    rows: int
    error: ErrorOut


def _pct(value: float | None) -> float | None:
    return None if value is None else round(value * 100, 1)


def _error(before: float, after: float, held: float | None) -> ErrorOut:
    return ErrorOut(
        reference_pct=round(before * 100, 1),
        calibrated_pct=round(after * 100, 1),
        held_out_pct=_pct(held),
    )


def _cell(c: ErrorCell) -> ReportCellOut:
    return ReportCellOut(
        family=c.family, metric=c.metric, rows=c.n, error=_error(c.before, c.after, c.held_out)
    )


class CalibrationOut(WireOut, kw_only=True):
    name: str
    version: int
    engine: Engine
    selection: SelectionOut
    corrections: list[CorrectionOut]
    rows: Annotated[int, Meta(description="Measurements the fit used.")]
    files: Annotated[int, Meta(description="Benchmark files they came from.")]
    error: ErrorOut
    notes: list[str]
    created_at: datetime
    key_id: str
    report_url: str

    @classmethod
    def from_domain(cls, p: CalibrationProfile) -> CalibrationOut:
        return cls(
            name=p.name,
            version=p.version,
            engine=p.engine,
            selection=SelectionOut(
                labels=list(p.selection.labels),
                gpus=list(p.selection.gpus),
                models=list(p.selection.models),
            ),
            corrections=[
                CorrectionOut(
                    family=c.family, compute=c.compute, memory=c.memory, overhead=c.overhead
                )
                for c in p.corrections
            ],
            rows=p.rows,
            files=p.files,
            error=_error(p.error_before, p.error_after, p.error_held_out),
            notes=list(p.notes),
            created_at=p.created_at,
            key_id=p.key_id,
            report_url=f"/v1/calibrations/{p.name}/report?version={p.version}",
        )


class CalibrationListOut(WireOut, kw_only=True):
    count: int
    calibrations: Annotated[
        list[CalibrationOut], Meta(description="The newest version of every profile.")
    ]


class CalibrationJobOut(WireOut, kw_only=True):
    job_id: str
    name: str
    state: Literal["running", "done", "failed"]
    done: Annotated[int, Meta(description="Fits finished (the main fit, then one per file).")]
    total: int
    status_url: str
    started_at: datetime
    calibration: CalibrationOut | None = None
    error: str | None = None

    @classmethod
    def from_domain(cls, job: FitJob) -> CalibrationJobOut:
        return cls(
            job_id=job.id,
            name=job.name,
            state=job.state,
            done=job.done,
            total=job.total,
            status_url=f"/v1/calibrations/jobs/{job.id}",
            started_at=job.started_at,
            calibration=None if job.profile is None else CalibrationOut.from_domain(job.profile),
            error=None if job.error is None else job.error.message,
        )


class CalibrationReportOut(WireOut, kw_only=True):
    name: str
    version: int
    engine: Engine
    rows: int
    files: int
    error: ErrorOut
    cells: Annotated[
        list[ReportCellOut],
        Meta(description="Per GPU family and metric: reference vs calibrated error."),
    ]
    notes: list[str]

    @classmethod
    def from_domain(cls, p: CalibrationProfile) -> CalibrationReportOut:
        return cls(
            name=p.name,
            version=p.version,
            engine=p.engine,
            rows=p.rows,
            files=p.files,
            error=_error(p.error_before, p.error_after, p.error_held_out),
            cells=[_cell(c) for c in p.cells],
            notes=list(p.notes),
        )


def report_text(p: CalibrationProfile) -> str:
    """The report as a plain-text table (``curl .../report`` with ``Accept: text/plain``)."""
    held = "-" if p.error_held_out is None else f"{p.error_held_out * 100:.1f}%"
    lines = [
        f"calibration profile {p.name} v{p.version} ({p.engine}), "
        f"created {p.created_at:%Y-%m-%d %H:%M}Z",
        f"fitted on {p.rows} measurements from {p.files} file(s)",
        f"median error: reference {p.error_before * 100:.1f}%, calibrated "
        f"{p.error_after * 100:.1f}%, each file held out {held}",
        "",
        f"{'family':<14} {'metric':<20} {'rows':>4} {'reference':>9} {'calibrated':>10} "
        f"{'held out':>8}",
    ]
    for c in p.cells:
        h = "-" if c.held_out is None else f"{c.held_out * 100:.1f}%"
        lines.append(
            f"{c.family:<14} {c.metric:<20} {c.n:>4} {c.before * 100:>8.1f}% "
            f"{c.after * 100:>9.1f}% {h:>8}"
        )
    lines += ["", "corrections (x reference):"]
    lines += [
        f"  {c.family}: compute {c.compute:.3f}, memory {c.memory:.3f}, overhead {c.overhead:.3f}"
        for c in p.corrections
    ]
    lines += [f"note: {n}" for n in p.notes]
    return "\n".join(lines) + "\n"
