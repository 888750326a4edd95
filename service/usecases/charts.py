"""Curves around a plan, as data and as pictures: decide WHEN to compute and when to answer
from the cache.

``CurvesService.curve(plan_id | draft, name)`` answers the domain curve (``domain.planner.sweep``)
and its Vega-Lite specification (``chart_specs``); ``CurvesService.picture`` the same chart
rendered to SVG or PNG (vl-convert, in-process), light or dark. Both are computed in the
solver's worker threads and kept in the plan cache under keys holding the plan id (and so the
catalog revision): ``curves:v1:<plan id>:<curve>`` and
``charts:v1:<plan id>:<curve>:<theme>.<format>``, for as long as plans are kept.

A curve is computed against the catalog snapshot its plan was solved at; when the catalog has
moved on since, the plan's curves are no longer computable and the answer says to solve its
request again (which gives a new plan id).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import vl_convert

from service.cache.base import CacheUnavailable, PlanCache
from service.cache.guarded import GuardedCache
from service.domain.catalog import CatalogSnapshot
from service.domain.moments import to_utc
from service.domain.planner import PlanDraft, SolvedPlan
from service.domain.planner.candidates import build_candidates
from service.domain.planner.sweep import (
    LoadCurve,
    PerGpu,
    SloCurve,
    cost_vs_load,
    cost_vs_slo,
    per_gpu,
)
from service.usecases.chart_specs import (
    VEGA_LITE_VERSION,
    CurveName,
    cost_vs_load_spec,
    cost_vs_slo_spec,
    per_gpu_spec,
)
from service.usecases.planning import PlanningService, Snapshots, UnknownPlan
from service.usecases.solver_pool import SolverPool

log = logging.getLogger("gpuplan.charts")

FORMAT_VERSION = 1
PictureFormat = Literal["svg", "png"]
Theme = Literal["light", "dark"]
PNG_SCALE = 2.0
"""PNG pixels per CSS pixel of the chart (crisp on high-density screens)."""

Curve = LoadCurve | SloCurve | PerGpu
_TYPES: dict[CurveName, type[Any]] = {
    "cost-vs-load": LoadCurve,
    "cost-vs-slo": SloCurve,
    "per-gpu": PerGpu,
}
_MEDIA: dict[PictureFormat, str] = {"svg": "image/svg+xml", "png": "image/png"}
# The light look: an opaque white background. The dark look: vl-convert's "dark" theme
# (light text and grid on a dark grey background).
_THEMES: dict[Theme, str | None] = {"light": None, "dark": "dark"}


def curve_key(plan_id: str, name: CurveName) -> str:
    return f"curves:v{FORMAT_VERSION}:{plan_id}:{name}"


def picture_key(plan_id: str, name: CurveName, theme: Theme, fmt: PictureFormat) -> str:
    return f"charts:v{FORMAT_VERSION}:{plan_id}:{name}:{theme}.{fmt}"


@dataclass(frozen=True, slots=True)
class CurveOutcome:
    """A curve of plan ``plan_id`` with its Vega-Lite specification."""

    plan_id: str
    revision: int
    stale: bool
    name: CurveName
    curve: Curve
    spec: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PictureOutcome:
    plan_id: str
    revision: int
    stale: bool
    media_type: str
    body: bytes


def spec_of(name: CurveName, curve: Curve, solved: SolvedPlan) -> dict[str, Any]:
    request = solved.request
    if isinstance(curve, LoadCurve):
        return cost_vs_load_spec(curve, request)
    if isinstance(curve, SloCurve):
        return cost_vs_slo_spec(curve, request)
    return per_gpu_spec(curve, request)


def compute(name: CurveName, solved: SolvedPlan, snapshot: CatalogSnapshot) -> Curve:
    """The curve ``name`` of ``solved`` against ``snapshot`` (pure; runs in one worker thread:
    sweeping the series on more threads was no faster on 2 cores and starves the event loop
    of the GIL)."""
    request = solved.request
    if name == "cost-vs-slo":
        return cost_vs_slo(request, snapshot)
    candidates = build_candidates(request, snapshot)
    if name == "per-gpu":
        return per_gpu(request, candidates)
    return cost_vs_load(
        request,
        snapshot,
        budget_qps=solved.plan.max_qps_within_budget,
        candidates=candidates,
    )


def render(spec: dict[str, Any], fmt: PictureFormat, theme: Theme) -> bytes:
    """``spec`` as SVG or PNG (vl-convert: Vega-Lite compiled and drawn in-process; no data
    URL is allowed, the data is inline)."""
    common: dict[str, Any] = {
        "vl_version": VEGA_LITE_VERSION,
        "theme": _THEMES[theme],
        "allowed_base_urls": [],
    }
    if fmt == "svg":
        return vl_convert.vegalite_to_svg(spec, **common).encode()
    png: bytes = vl_convert.vegalite_to_png(spec, scale=PNG_SCALE, **common)
    return png


class CurvesService:
    def __init__(
        self,
        planning: PlanningService,
        state: Snapshots,
        cache: PlanCache,
        pool: SolverPool,
        *,
        ttl_s: int,
    ) -> None:
        self._planning = planning
        self._state = state
        self._cache = GuardedCache(cache)
        self._pool = pool
        self._ttl = ttl_s
        self._encoder = msgspec.msgpack.Encoder()

    async def curve(self, source: str | PlanDraft, name: CurveName) -> CurveOutcome:
        """Curve ``name`` of a stored plan (by id) or of a request's plan (solved, or found in
        the cache, first)."""
        solved, snapshot, stale = await self._plan_and_snapshot(source)
        curve = await self._curve(name, solved, snapshot)
        return CurveOutcome(
            solved.plan_id, solved.revision, stale, name, curve, spec_of(name, curve, solved)
        )

    async def picture(
        self, source: str | PlanDraft, name: CurveName, fmt: PictureFormat, theme: Theme
    ) -> PictureOutcome:
        """The chart of curve ``name`` as SVG or PNG in the light or dark look."""
        solved, snapshot, stale = await self._plan_and_snapshot(source)
        key = picture_key(solved.plan_id, name, theme, fmt)
        body = await self._get(key)
        if body is None:
            curve = await self._curve(name, solved, snapshot)
            spec = spec_of(name, curve, solved)
            body = await self._pool.run(lambda: render(spec, fmt, theme))
            await self._set(key, body)
        return PictureOutcome(solved.plan_id, solved.revision, stale, _MEDIA[fmt], body)

    # ---- internals -------------------------------------------------------------------------

    async def _plan_and_snapshot(
        self, source: str | PlanDraft
    ) -> tuple[SolvedPlan, CatalogSnapshot, bool]:
        if isinstance(source, str):
            solved = await self._planning.lookup(source)
        else:
            outcome = await self._planning.solve(source)
            if outcome.solved is None:  # only when the caller says it holds the plan
                raise UnknownPlan(outcome.plan_id, self._ttl)
            solved = outcome.solved
        as_of = solved.request.as_of
        view = await (
            self._state.as_of(to_utc(as_of, "as_of"))
            if as_of is not None
            else self._state.current()
        )
        if view.snapshot.revision != solved.revision:
            raise UnknownPlan(
                solved.plan_id,
                self._ttl,
                remedy=f"its curves need catalog revision {solved.revision}, the catalog is at "
                f"{view.snapshot.revision} now: POST the plan's `request` to /v1/plans for "
                "its new plan id",
            )
        return solved, view.snapshot, view.stale

    async def _curve(self, name: CurveName, solved: SolvedPlan, snapshot: CatalogSnapshot) -> Curve:
        key = curve_key(solved.plan_id, name)
        raw = await self._get(key)
        if raw is not None:
            try:
                found: Curve = msgspec.msgpack.decode(raw, type=_TYPES[name])
                return found
            except msgspec.DecodeError:
                pass  # another format version's bytes: compute again
        curve = await self._pool.run(lambda: compute(name, solved, snapshot))
        await self._set(key, self._encoder.encode(curve))
        return curve

    async def _get(self, key: str) -> bytes | None:
        try:
            return await self._cache.get(key)
        except CacheUnavailable:
            return None

    async def _set(self, key: str, value: bytes) -> None:
        try:
            await self._cache.set(key, value, self._ttl)
        except CacheUnavailable:
            log.info("curve not cached: the cache is unavailable", extra={"key": key})
