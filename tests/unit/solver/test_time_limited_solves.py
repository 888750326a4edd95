"""When the reduced model of reduced-cost fixing (``highs.solve_milp``) runs out of time with a
point, that point comes back: it is a point of the whole model, its gap measured against the
lesser of the fixing target and the reduced model's dual bound (and at least the LP bound),
and no second time limit is spent on the whole model.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from service.domain.solver import highs
from service.domain.solver.highs import MilpModel, MilpResult, Outcome, solve_milp
from tests.unit.solver.test_reduced_cost_fixing import covering_model

pytestmark = pytest.mark.skipif(
    highs._backend() is None, reason="fixing runs only through SciPy's HiGHS binding or wrapper"
)

REDUCED_GAP = 0.5  # the dual bound the stand-in reports for the reduced model: half its value


def _out_of_time_reduced(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The backend as it is, but the reduced model's run (a MILP given an objective bound)
    reports running out of time with the point it found and a gap of :data:`REDUCED_GAP`.
    Records, per call, whether it was a MILP given an objective bound."""
    original = highs._backend()
    assert original is not None
    calls: list[bool] = []

    def backend(model: MilpModel, limit: float, bound: float | None) -> MilpResult:
        result = original(model, limit, bound)
        reduced = bool(np.any(model.integrality)) and bound is not None
        calls.append(reduced)
        if reduced and result.x is not None:
            return MilpResult(
                Outcome.TIME_LIMIT_WITH_SOLUTION, result.x, result.objective, REDUCED_GAP
            )
        return result

    monkeypatch.setattr(highs, "_backend", lambda: backend)
    return calls


@pytest.mark.parametrize("seed", range(12))
def test_a_reduced_model_out_of_time_answers_with_a_gap_to_the_whole_models_bound(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = covering_model(seed)
    whole = solve_milp(model, time_limit_s=30.0)
    relaxed = solve_milp(
        replace(model, integrality=np.zeros_like(model.integrality)), time_limit_s=30.0
    )
    assert whole.outcome is Outcome.OPTIMAL and relaxed.outcome is Outcome.OPTIMAL
    calls = _out_of_time_reduced(monkeypatch)
    result = solve_milp(model, time_limit_s=30.0)
    if calls != [False, True]:
        # nothing fixed (no column's bound passes the target): the whole model was solved
        assert result.outcome is Outcome.OPTIMAL
        return
    assert result.outcome is Outcome.TIME_LIMIT_WITH_SOLUTION
    assert result.x is not None
    assert np.all(model.a @ result.x >= model.row_lower - 1e-6)
    assert np.all(model.a @ result.x <= model.row_upper + 1e-6)
    assert np.all(result.x <= model.col_upper + 1e-9)
    # the bound the gap is measured against never exceeds the whole model's optimum ...
    bound = result.objective * (1.0 - result.mip_gap)
    assert bound <= whole.objective + 1e-6
    # ... and is the larger of the LP bound and min(target, reduced dual bound)
    target = relaxed.objective * (1.0 + highs.FIXING_MARGIN)
    want = max(relaxed.objective, min(target, result.objective * (1.0 - REDUCED_GAP)))
    assert bound == pytest.approx(want, rel=1e-6)
