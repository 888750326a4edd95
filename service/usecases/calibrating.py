"""Calibration profiles (``POST /v1/calibrations``, ``gpuplan calibrate``): select stored
measurements, fit corrections (``domain.profiles.fit``), store them as the next version of
the named profile.

A fit runs as a job on a worker thread: ``start`` waits up to ``QUICK_S`` for it and answers
the stored profile when it is done by then, else the running job (the API answers 202 with
its status URL; ``job`` reports progress). Jobs live in this process: a status URL is
answered by the replica that runs the fit, and a restart forgets running jobs (never stored
profiles).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, TypeVar

from service.domain.benchmarks import check_labels
from service.domain.catalog import CatalogSnapshot, GpuSpec
from service.domain.errors import DomainError, InvalidInput
from service.domain.llm import resolve_model
from service.domain.profiles.fit import FitResult, FitRow, fit_profile
from service.domain.profiles.values import (
    MAX_SELECTION,
    REFERENCE,
    CalibrationProfile,
    Selection,
    UnknownProfile,
    check_name,
    parse_spec,
)
from service.domain.vocabulary import ENGINES, Engine
from service.store.benchmarks import BenchmarkRepository
from service.store.profiles import ProfileRepository
from service.usecases.catalog_state import CatalogState
from service.usecases.errors import with_database

T = TypeVar("T")
QUICK_S = 1.0
"""How long ``start`` waits for a fit before answering with the running job."""
MAX_JOBS = 256
TIMEOUT_S = 30.0

JobState = Literal["running", "done", "failed"]


@dataclass
class FitJob:
    """One fit: ``done``/``total`` fits finished (the main fit and one per held-out file),
    then the stored ``profile`` or the ``error`` that stopped it."""

    id: str
    name: str
    engine: Engine
    started_at: datetime
    state: JobState = "running"
    done: int = 0
    total: int = 1
    profile: CalibrationProfile | None = None
    error: DomainError | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)


def resolve_selection(snapshot: CatalogSnapshot, selection: Selection) -> Selection:
    """The selection with GPU aliases and model aliases resolved to ids (422 naming the
    unknown one)."""
    if sum(map(len, (selection.labels, selection.gpus, selection.models))) > MAX_SELECTION * 3:
        raise InvalidInput("selection: too many entries", field="selection")
    labels = check_labels(selection.labels)
    gpus = []
    for i, name in enumerate(selection.gpus):
        try:
            gpus.append(snapshot.resolve_gpu(name).id)
        except DomainError as exc:
            raise InvalidInput(exc.message, field=f"selection.gpus[{i}]") from None
    models = []
    for i, name in enumerate(selection.models):
        try:
            models.append(resolve_model(name).arch.id)
        except DomainError as exc:
            raise InvalidInput(exc.message, field=f"selection.models[{i}]") from None
    return Selection(labels, tuple(dict.fromkeys(gpus)), tuple(dict.fromkeys(models)))


async def load_rows(
    bench: BenchmarkRepository, engine: Engine, selection: Selection
) -> list[FitRow]:
    rows = await bench.measurements(
        engine=engine, labels=selection.labels, gpus=selection.gpus, models=selection.models
    )
    if not rows:
        raise InvalidInput(
            f"the selection matches no stored {engine} measurements: import benchmark files "
            "(POST /v1/benchmarks) or widen the selection",
            field="selection",
        )
    return [FitRow(digest, m) for digest, m in rows]


def profile_from_fit(
    name: str,
    engine: Engine,
    selection: Selection,
    fit: FitResult,
    *,
    now: datetime,
    key_id: str,
) -> CalibrationProfile:
    return CalibrationProfile(
        name=name, version=0, engine=engine, selection=selection, corrections=fit.corrections,
        rows=fit.rows, files=fit.files, error_before=fit.error_before,
        error_after=fit.error_after, error_held_out=fit.error_held_out, cells=fit.cells,
        notes=fit.notes, created_at=now.replace(microsecond=0), key_id=key_id,
    )  # fmt: skip


class CalibrationService:
    def __init__(
        self,
        bench: BenchmarkRepository,
        profiles: ProfileRepository,
        state: CatalogState,
        clock: Callable[[], datetime],
        *,
        timeout_s: float = 2.0,
        quick_s: float = QUICK_S,
    ) -> None:
        self._quick_s = quick_s
        self._bench = bench
        self._profiles = profiles
        self._state = state
        self._clock = clock
        self._timeout = max(timeout_s, TIMEOUT_S)
        self._jobs: OrderedDict[str, FitJob] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, name: str, engine: Engine, selection: Selection, key_id: str) -> FitJob:
        """Validate, load the selected rows, and fit (see module docstring). Raises
        ``InvalidInput`` naming the field for a bad name, engine or selection, or one that
        matches nothing."""
        check_name(name)
        if engine not in ENGINES:
            raise InvalidInput(f"unknown engine {engine!r}", field="engine")
        view = await self._state.current()
        selection = resolve_selection(view.snapshot, selection)
        rows = await self._db(lambda: load_rows(self._bench, engine, selection), "reading")
        gpus = {g.id: g for g in view.snapshot.gpus}
        job = FitJob(secrets.token_hex(8), name, engine, self._clock())
        self._remember(job)
        task = asyncio.create_task(self._run(job, rows, gpus, selection, key_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(job.finished.wait()), self._quick_s)
        if job.state == "failed" and job.error is not None:
            raise job.error
        return job

    def job(self, job_id: str) -> FitJob | None:
        return self._jobs.get(job_id)

    async def get(self, name: str, version: int | None = None) -> CalibrationProfile:
        profile = await self._db(lambda: self._profiles.get(name, version), "reading")
        if profile is None:
            names = await self._db(self._profiles.names, "reading")
            raise UnknownProfile(
                name if version is None else f"{name} v{version}",
                tuple(names[:5]),
                field="calibration",
                label="known",
            )
        return profile

    async def profiles(self) -> list[CalibrationProfile]:
        return await self._db(self._profiles.latest, "reading calibration profiles")

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def _run(
        self,
        job: FitJob,
        rows: list[FitRow],
        gpus: Mapping[str, GpuSpec],
        selection: Selection,
        key_id: str,
    ) -> None:
        def progress(done: int, total: int) -> None:
            job.done, job.total = done, total

        try:
            fit = await asyncio.to_thread(
                fit_profile, rows, gpus, job.engine, f"{job.name} (fitting)", progress
            )
            profile = profile_from_fit(
                job.name, job.engine, selection, fit, now=self._clock(), key_id=key_id
            )
            job.profile = await self._db(lambda: self._profiles.add(profile), "storing")
            job.state = "done"
        except DomainError as exc:
            job.error, job.state = exc, "failed"
        except Exception as exc:  # noqa: BLE001 - reported on the job; the server keeps serving
            job.error = DomainError(f"the fit failed: {type(exc).__name__}")
            job.state = "failed"
        finally:
            job.finished.set()

    def _remember(self, job: FitJob) -> None:
        self._jobs[job.id] = job
        while len(self._jobs) > MAX_JOBS:
            self._jobs.popitem(last=False)

    async def _db(self, call: Callable[[], Awaitable[T]], what: str) -> T:
        return await self._state.call_database(call, self._timeout, what)


class ProfileResolver:
    """The calibration profile a request uses: the one it names (``name`` or ``name@vN``),
    else the server default (``GPUPLAN_DEFAULT_CALIBRATION``), else none; ``reference`` asks
    for none. A named profile that does not exist is a 404 naming ``calibration``; a default
    that does not exist (yet) means the reference constants."""

    def __init__(
        self,
        profiles: ProfileRepository,
        state: CatalogState,
        default: str | None = None,
        *,
        timeout_s: float = 2.0,
    ) -> None:
        self._profiles = profiles
        self._state = state
        self._default = default
        self._timeout = timeout_s

    @property
    def default(self) -> str | None:
        return self._default

    async def resolve(self, spec: str | None) -> CalibrationProfile | None:
        chosen = spec if spec is not None else self._default
        if chosen is None or chosen.strip() == REFERENCE:
            return None
        name, version = parse_spec(chosen)
        found = await self._state.call_database(
            lambda: self._profiles.get(name, version),
            self._timeout,
            "reading a calibration profile",
        )
        if found is None and spec is not None:
            names = await with_database(self._profiles.names(), self._timeout, "reading")
            shown = name if version is None else f"{name}@v{version}"
            raise UnknownProfile(shown, tuple(names[:5]), field="calibration", label="known")
        return found
