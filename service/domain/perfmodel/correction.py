"""A team's corrections to the reference constants for one GPU family and engine (fitted by
``service/domain/profiles/fit.py`` on the team's own benchmark files).

Three multipliers, each 1.0 for "as the reference": ``compute`` on the family's achieved
GEMM fraction (``eta_c``), ``memory`` on its achieved bandwidth fraction (``eta_m``), and
``overhead`` on the engine build's fixed per-iteration costs (``step_overhead_ms``,
``layer_overhead_us``, ``seq_overhead_us``). They scale what the reference already models, so
a corrected estimate keeps every structural behaviour (memory fit, batch caps, queueing).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from service.domain.perfmodel.calibration import Calibration, GroupConstants
from service.domain.perfmodel.hardware import accuracy_family, calibration_group
from service.domain.perfmodel.values import Correction, Deployment


@lru_cache(maxsize=512)
def corrected(cal: Calibration, constants_key: str, corr: Correction, group: str) -> Calibration:
    """``cal`` with ``corr`` applied to the calibration ``group`` its cards are predicted with
    and to the ``constants_key`` engine build (the calibration only ever serves that card
    family and build in one estimate)."""
    groups = tuple(
        (name, GroupConstants(g.eta_m * corr.memory, g.eta_c * corr.compute))
        if name == group
        else (name, g)
        for name, g in cal.groups
    )
    engines = tuple(
        (
            name,
            replace(
                e,
                step_overhead_ms=e.step_overhead_ms * corr.overhead,
                layer_overhead_us=e.layer_overhead_us * corr.overhead,
                seq_overhead_us=e.seq_overhead_us * corr.overhead,
            ),
        )
        if name == constants_key
        else (name, e)
        for name, e in cal.engines
    )
    return replace(cal, groups=groups, engines=engines)


def with_correction(cal: Calibration, dep: Deployment, constants_key: str) -> Calibration:
    """``cal`` with ``dep.correction`` applied when it is for this card's family and engine
    (else ``cal`` unchanged: the reference constants). Families are accuracy families
    (``hardware.accuracy_family``): a correction measured on MI300X cards, which borrow the
    hopper-hbm constants, corrects MI300X estimates and never H100 ones."""
    corr = dep.correction
    if corr is None or corr.engine != dep.engine:
        return cal
    if corr.family != accuracy_family(dep.gpu):
        return cal
    return corrected(cal, constants_key, corr, calibration_group(dep.gpu).group)


__all__ = ["Correction", "corrected", "with_correction"]
