"""The one place that calls HiGHS (through SciPy).

Why not only ``scipy.optimize.milp``: measured on a 2-core machine, HiGHS 1.12's
feasibility-jump heuristic costs about 4.5 ms per MILP even on a 4-variable model, more than the
whole rest of a small solve; it finds nothing the root LP and branching would not. ``milp``
forwards extra HiGHS options but warns (``RuntimeWarning``) for every option it does not
document, and silencing a warning is process-global state (``warnings.catch_warnings`` is not
thread-safe, and solves run in worker threads). So we call the function ``milp`` itself calls
after validating its arguments, ``scipy.optimize._highspy._highs_wrapper._highs_wrapper``
(SciPy >= 1.15), and fall back to ``milp`` with documented options only when that private
function is missing or has changed shape. Both paths solve the same model; the fallback is
only slower.

HiGHS is deterministic for a given model and options (fixed ``random_seed``), which is what
makes identical problems give byte-identical plans.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

FloatArray = npt.NDArray[np.float64]

_PrivateWrapper = Callable[..., dict[str, Any]]


def _load_private_wrapper() -> _PrivateWrapper | None:
    try:
        from scipy.optimize._highspy._highs_wrapper import (
            _highs_wrapper,
        )
    except ImportError:  # pragma: no cover - depends on the SciPy version
        return None
    wrapper: _PrivateWrapper = _highs_wrapper
    return wrapper


_PRIVATE_WRAPPER: _PrivateWrapper | None = _load_private_wrapper()

# HiGHS options every solve uses. ``mip_rel_gap`` 0: solutions are proven optimal (up to
# HiGHS' absolute gap 1e-6 on an objective that is integral by construction, see
# :mod:`formulation`).
_EXTRA_OPTIONS: dict[str, Any] = {"mip_heuristic_run_feasibility_jump": False}


class Outcome(enum.Enum):
    """What one HiGHS call ended with."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    TIME_LIMIT_WITH_SOLUTION = "time_limit_with_solution"
    TIME_LIMIT_NO_SOLUTION = "time_limit_no_solution"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class MilpModel:
    """``min c.x  s.t.  row_lower <= A x <= row_upper,  col_lower <= x <= col_upper``.

    ``integrality[j]`` is 1 for integer columns, 0 for continuous ones. ``a`` is CSC.
    """

    c: FloatArray
    a: sparse.csc_array
    row_lower: FloatArray
    row_upper: FloatArray
    col_lower: FloatArray
    col_upper: FloatArray
    integrality: npt.NDArray[np.uint8]


@dataclass(frozen=True, slots=True)
class MilpResult:
    """``x`` is set for ``OPTIMAL`` and ``TIME_LIMIT_WITH_SOLUTION``; ``mip_gap`` is relative.
    ``row_dual``: for a model without integer columns solved to optimality through the private
    wrapper, the rows' dual values (HiGHS' signs: >= 0 on an active lower bound of a
    minimisation); else ``None``."""

    outcome: Outcome
    x: FloatArray | None
    objective: float
    mip_gap: float
    row_dual: FloatArray | None = None


# HighsModelStatus values (HiGHS' public enum, stable across releases).
_K_OPTIMAL = 7
_K_INFEASIBLE = 8
_K_UNBOUNDED_OR_INFEASIBLE = 9
_K_TIME_LIMIT = 13
_K_ITERATION_LIMIT = 14
_K_SOLUTION_LIMIT = 16


def solve_milp(
    model: MilpModel, *, time_limit_s: float, known_value: float | None = None
) -> MilpResult:
    """Solve ``model`` with HiGHS within ``time_limit_s`` seconds (wall clock, HiGHS' own timer),
    through the private wrapper when it is available, else through ``milp``.

    ``known_value``: the objective of a fleet known to be feasible (an integral objective). It
    is passed to HiGHS as ``objective_bound`` (plus one half), which lets branch and bound and
    reduced-cost fixing drop everything worse from the start; measured on catalog plans, root
    processing of the plan's MILP is about a third shorter. The optimum is the same: it is at
    most that value. Should HiGHS still report the bounded model infeasible (numerical
    trouble), the model is solved again without the bound. The public ``milp`` path ignores it.
    """
    private = _PRIVATE_WRAPPER
    if private is not None:
        try:
            if known_value is not None:
                bounded = _solve_private(private, model, time_limit_s, known_value + 0.5)
                if bounded.outcome is not Outcome.INFEASIBLE:
                    return bounded
            return _solve_private(private, model, time_limit_s)
        except (TypeError, AttributeError):  # pragma: no cover - SciPy changed the wrapper
            pass
    return _solve_public(model, time_limit_s)


def _solve_private(
    wrapper: _PrivateWrapper,
    model: MilpModel,
    time_limit_s: float,
    objective_bound: float | None = None,
) -> MilpResult:
    a = model.a
    # Only non-defaults: the wrapper validates each option (about 55 us apiece). Presolve is on
    # by default; ``output_flag`` False silences HiGHS' log.
    options: dict[str, Any] = {
        "output_flag": False,
        "time_limit": float(time_limit_s),
        "mip_rel_gap": 0.0,
        **_EXTRA_OPTIONS,
    }
    if objective_bound is not None:
        options["objective_bound"] = float(objective_bound)
    res = wrapper(
        np.ascontiguousarray(model.c, dtype=np.float64),
        np.ascontiguousarray(a.indptr, dtype=np.int32),
        np.ascontiguousarray(a.indices, dtype=np.int32),
        np.ascontiguousarray(a.data, dtype=np.float64),
        np.ascontiguousarray(model.row_lower, dtype=np.float64),
        np.ascontiguousarray(model.row_upper, dtype=np.float64),
        np.ascontiguousarray(model.col_lower, dtype=np.float64),
        np.ascontiguousarray(model.col_upper, dtype=np.float64),
        np.ascontiguousarray(model.integrality, dtype=np.uint8),
        options,
    )
    status = int(res.get("status", -1))
    x = res.get("x")
    if status == _K_OPTIMAL and x is not None:
        dual = res.get("lambda")
        return MilpResult(
            Outcome.OPTIMAL,
            np.asarray(x, dtype=np.float64),
            float(res["fun"]),
            0.0,
            np.asarray(dual, dtype=np.float64) if dual is not None else None,
        )
    if status in (_K_INFEASIBLE, _K_UNBOUNDED_OR_INFEASIBLE):
        return MilpResult(Outcome.INFEASIBLE, None, float("inf"), 0.0)
    if status in (_K_TIME_LIMIT, _K_ITERATION_LIMIT, _K_SOLUTION_LIMIT):
        if x is not None:
            gap = res.get("mip_gap")
            return MilpResult(
                Outcome.TIME_LIMIT_WITH_SOLUTION,
                np.asarray(x, dtype=np.float64),
                float(res["fun"]),
                float(gap) if gap is not None else float("inf"),
            )
        return MilpResult(Outcome.TIME_LIMIT_NO_SOLUTION, None, float("inf"), float("inf"))
    return MilpResult(Outcome.ERROR, None, float("inf"), float("inf"))


def _solve_public(model: MilpModel, time_limit_s: float) -> MilpResult:
    res = milp(
        model.c,
        integrality=model.integrality,
        bounds=Bounds(model.col_lower, model.col_upper),
        constraints=[LinearConstraint(model.a, model.row_lower, model.row_upper)]
        if model.a.shape[0] > 0
        else None,
        # ``disp`` False: HiGHS prints nothing, so the service's log stays one JSON per line.
        options={
            "disp": False,
            "time_limit": float(time_limit_s),
            "mip_rel_gap": 0.0,
            "presolve": True,
        },
    )
    status = int(res.status)
    if status == 0 and res.x is not None:
        return MilpResult(Outcome.OPTIMAL, np.asarray(res.x, dtype=np.float64), float(res.fun), 0.0)
    if status == 2:
        return MilpResult(Outcome.INFEASIBLE, None, float("inf"), 0.0)
    if status == 1:
        if res.x is not None:
            gap = res.get("mip_gap")
            return MilpResult(
                Outcome.TIME_LIMIT_WITH_SOLUTION,
                np.asarray(res.x, dtype=np.float64),
                float(res.fun),
                float(gap) if gap is not None else float("inf"),
            )
        return MilpResult(Outcome.TIME_LIMIT_NO_SOLUTION, None, float("inf"), float("inf"))
    return MilpResult(Outcome.ERROR, None, float("inf"), float("inf"))
