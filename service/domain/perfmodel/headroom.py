"""Default headroom: spare capacity a plan keeps because the performance model can be wrong.

A plan sized to 100 % of modelled capacity fails its SLO as soon as the model is optimistic.
The model's own leave-one-source-out validation (``engine_builds.PROFILES``, written by
``bench/calibrate.py``) says how wrong it is per engine build and GPU family, so the default
headroom of a card is that error: plan for ``(1 + e)`` x the load on it, where ``e`` is

1. the build's median throughput error on the card's GPU family (the larger of peak
   throughput and throughput at a fixed load, each source held out of the fit). The family is
   the card's accuracy family (``hardware.accuracy_family``): a card predicted with another
   group's constants (MI300X on hopper-hbm x 0.85) is its own family, never the lender's;
2. when no measurement of the build covers that family: the build's largest such error on any
   family (an unmeasured family is assumed no better than the worst measured one);
3. when the build has no validation at all (an uncalibrated engine): the largest such error of
   any registered build (:data:`UNVALIDATED_FALLBACK` only if no build has any);
4. for a hybrid Mamba-2 model, at least the engine's median throughput error on published
   measurements of such models (``calibration.hybrid_validation``; any engine's when the
   engine has none): their Mamba-2 layers have no fitted constant, so the error measured on
   transformers does not cover them.

The fraction is rounded to a whole percent so the number stated is the number used. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from service.domain.catalog import GpuSpec
from service.domain.perfmodel.calibration import (
    CalibratedProfile,
    ValidationCell,
    hybrid_validation,
    profile_registry,
    resolve_profile,
)
from service.domain.perfmodel.hardware import accuracy_family
from service.domain.vocabulary import ENGINES

THROUGHPUT_METRICS = ("peak_throughput", "throughput_at_load")
"""Validation metrics that measure capacity (what headroom protects)."""

UNVALIDATED_FALLBACK = 0.25
"""Headroom when no registered build has any throughput validation: the 25 % band the
accuracy report (``bench/accuracy.py``) counts a prediction as close within."""


@dataclass(frozen=True, slots=True)
class ModelHeadroom:
    """The default headroom on one card: ``fraction`` (0.24 plans for 1.24 x the load), the
    GPU ``family`` and engine ``build`` it comes from, and ``basis``, one sentence with the
    number and where it comes from."""

    fraction: float
    family: str
    build: str
    basis: str


def _throughput(cells: tuple[ValidationCell, ...]) -> list[ValidationCell]:
    return [c for c in cells if c.metric in THROUGHPUT_METRICS]


def _worst(cells: list[ValidationCell]) -> ValidationCell:
    return max(cells, key=lambda c: (c.median_ape, c.n, c.family, c.metric))


@lru_cache(maxsize=1)
def _largest_registered() -> ValidationCell | None:
    cells = [c for e in profile_registry().values() for c in _throughput(e.validation)]
    return _worst(cells) if cells else None


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


@lru_cache(maxsize=4096)
def _for(entry: CalibratedProfile, family: str) -> ModelHeadroom:
    cells = _throughput(entry.validation)
    own = [c for c in cells if c.family == family]
    name = entry.name
    if own:
        cell = _worst(own)
        fraction = round(cell.median_ape, 2)
        basis = (
            f"{_percent(fraction)} on {family} GPUs: the {name} model's median "
            f"{cell.metric.replace('_', ' ')} error there ({cell.n} measurements, each source "
            "held out of the fit)"
        )
    elif cells:
        cell = _worst(cells)
        fraction = round(cell.median_ape, 2)
        basis = (
            f"{_percent(fraction)} on {family} GPUs: no {name} measurements on that family, so "
            f"its largest median throughput error on any family ({cell.family}, {cell.n} "
            "measurements)"
        )
    else:
        largest = _largest_registered()
        fraction = round(largest.median_ape, 2) if largest is not None else UNVALIDATED_FALLBACK
        basis = (
            f"{_percent(fraction)} on {family} GPUs: no measurements validate {name}, so the "
            "largest median throughput error of any registered engine build"
        )
    return ModelHeadroom(fraction=fraction, family=family, build=name, basis=basis)


def model_error_headroom(
    gpu: GpuSpec, engine: str, version: str | None, *, hybrid: bool = False
) -> ModelHeadroom:
    """The default headroom for serving on ``gpu`` with ``engine`` build ``version`` (``None``:
    the newest calibrated one), by the rules in the module docstring; ``hybrid``: the model
    has Mamba-2 layers (rule 4)."""
    base = _for(resolve_profile(engine, version), accuracy_family(gpu))
    return _with_hybrid(base, engine) if hybrid else base


@lru_cache(maxsize=256)
def _with_hybrid(base: ModelHeadroom, engine: str) -> ModelHeadroom:
    """``base`` raised to the hybrid-model throughput error of ``engine`` (rule 4)."""
    cells = _throughput(hybrid_validation(engine))
    source = engine
    if not cells:
        cells = [c for e in ENGINES for c in _throughput(hybrid_validation(e))]
        source = "any engine"
    if not cells:
        return base
    cell = _worst(cells)
    fraction = round(cell.median_ape, 2)
    if fraction <= base.fraction:
        return base
    basis = (
        f"{_percent(fraction)}: the model's median {cell.metric.replace('_', ' ')} error on "
        f"published measurements of hybrid Mamba-2 models with {source} ({cell.n} "
        f"measurements, each source held out of the fit), above the {_percent(base.fraction)} "
        f"the build's validation gives {base.family} GPUs, since no fitted constant describes "
        "Mamba-2 layers"
    )
    return ModelHeadroom(fraction=fraction, family=base.family, build=base.build, basis=basis)
