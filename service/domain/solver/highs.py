"""The one place that calls HiGHS (through SciPy).

Why not only ``scipy.optimize.milp``: measured on a 2-core machine, HiGHS 1.12's
feasibility-jump heuristic costs about 4.5 ms per MILP even on a 4-variable model, more than the
whole rest of a small solve; it finds nothing the root LP and branching would not. ``milp``
forwards extra HiGHS options but warns (``RuntimeWarning``) for every option it does not
document, and silencing a warning is process-global state (``warnings.catch_warnings`` is not
thread-safe, and solves run in worker threads). So we drive the HiGHS binding SciPy ships,
``scipy.optimize._highspy._core`` (SciPy >= 1.15), the way ``milp``'s own private wrapper
``_highs_wrapper`` does, minus that wrapper's per-call costs: it builds an option manager and
validates every option (about 55 us apiece) and walks the columns in Python for their bound
margins, about 1.3 ms per call, twice HiGHS' own time on the plan's LPs (measured on the
plan-latency models: 2.0 ms per LP through the wrapper, 0.7 ms through the binding). When the
binding lacks a name we use, the wrapper is used; when that is missing or has changed shape,
``milp`` with documented options. Every path solves the same model; the fallbacks are only
slower.

HiGHS is deterministic for a given model and options (fixed ``random_seed``), which is what
makes identical problems give byte-identical plans.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, replace
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

_CORE_NAMES = (
    "_Highs",
    "HighsLp",
    "HighsVarType",
    "MatrixFormat",
    "HighsModelStatus",
    "HighsBasisStatus",
    "kHighsInf",
)


def _load_core() -> Any | None:
    """SciPy's HiGHS binding, when it has every name :func:`_solve_core` uses."""
    try:
        from scipy.optimize._highspy import _core
    except ImportError:  # pragma: no cover - depends on the SciPy version
        return None
    return _core if all(hasattr(_core, name) for name in _CORE_NAMES) else None


_CORE: Any | None = _load_core()

# HiGHS options every solve uses. ``mip_rel_gap`` 0: solutions are proven optimal (up to
# HiGHS' absolute gap 1e-6 on an objective that is integral by construction, see
# :mod:`formulation`). The plan's MILPs are small (about 10-80 integer columns) and start from
# a known fleet's value, so HiGHS' costlier primal heuristics and its root restart buy little:
# replayed on the 900 HiGHS runs of 80 cold 4-bucket plans (bench/plan_latency.py requests),
# turning off feasibility jump, RINS, RENS, the root reduced-cost heuristic and the restart
# after root fixing cut HiGHS' time by 42% and its p99 per run from 45 to 19 ms, with the
# same optimum on every run. They change which of two fleets equal in cost and cards comes
# back, never the cost or the cards (same options, same answer: still deterministic).
# Presolve only at the root (``mip_root_presolve_only``): these models end in a handful of
# nodes (median 4, about 90 simplex iterations) and presolving past the root buys nothing on
# them: replayed on the 366 MILPs of 210 cold plans of 1-8 buckets (policy and
# single-type solves) it cut the median run from 3.8 to 2.9 ms and the mean from 7.0 to
# 5.8 ms, with the same optimum on every run.
_EXTRA_OPTIONS: dict[str, Any] = {
    "mip_heuristic_run_feasibility_jump": False,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False,
    "mip_allow_restart": False,
    "mip_root_presolve_only": True,
}


class Outcome(enum.Enum):
    """What one HiGHS call ended with."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    TIME_LIMIT_WITH_SOLUTION = "time_limit_with_solution"
    TIME_LIMIT_NO_SOLUTION = "time_limit_no_solution"
    ERROR = "error"
    # no point with an objective at most the caller's ``cutoff`` (see :func:`solve_milp`)
    CUT_OFF = "cut_off"


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
    minimisation); else ``None``. ``reduced_cost``: for the same solves, each column's reduced
    cost where the column sits at its lower bound (0 elsewhere)."""

    outcome: Outcome
    x: FloatArray | None
    objective: float
    mip_gap: float
    row_dual: FloatArray | None = None
    reduced_cost: FloatArray | None = None


# HighsModelStatus values (HiGHS' public enum, stable across releases).
_K_OPTIMAL = 7
_K_INFEASIBLE = 8
_K_UNBOUNDED_OR_INFEASIBLE = 9
_K_TIME_LIMIT = 13
_K_ITERATION_LIMIT = 14
_K_SOLUTION_LIMIT = 16


# Reduced-cost fixing (see :func:`solve_milp`): models with at least this many integer columns
# get it; the reduced model is asked for a fleet within this relative margin of the LP bound.
FIXING_MIN_INTEGERS = 12
FIXING_MARGIN = 0.05


def solve_milp(
    model: MilpModel,
    *,
    time_limit_s: float,
    known_value: float | None = None,
    cutoff: float | None = None,
) -> MilpResult:
    """Solve ``model`` with HiGHS within ``time_limit_s`` seconds (wall clock, HiGHS' own timer),
    through the private wrapper when it is available, else through ``milp``.

    ``known_value``: the objective of a fleet known to be feasible (an integral objective). It
    is passed to HiGHS as ``objective_bound`` (plus one half), which lets branch and bound and
    reduced-cost fixing drop everything worse from the start; measured on catalog plans, root
    processing of the plan's MILP is about a third shorter. The optimum is the same: it is at
    most that value. Should HiGHS still report the bounded model infeasible (numerical
    trouble), or answer with a point worse than the bound (HiGHS 1.12 reports such a point
    "optimal" when the bound lies below the optimum), the model is solved again without the
    bound. The public ``milp`` path ignores it.

    Models with :data:`FIXING_MIN_INTEGERS` integer columns or more are first reduced by
    :func:`_solve_fixed` (one LP, then a MILP on far fewer live columns); the answer is the
    whole model's optimum either way (out of time: a point of the whole model, its gap to a
    bound of the whole model). Each HiGHS call has the whole time limit.

    ``cutoff``: only points with an objective of at most ``cutoff`` (an integral objective)
    are of interest, e.g. the caller knows a better answer elsewhere. When none exists the
    answer is :attr:`Outcome.CUT_OFF` (no point, no proof of infeasibility); often the LP
    relaxation proves it alone. When the optimum is at most ``cutoff`` it comes back as
    without one. A ``known_value`` at most ``cutoff`` makes the cutoff moot (that fleet is
    better), so it is ignored then.
    """
    if cutoff is not None and known_value is not None and known_value <= cutoff:
        cutoff = None
    backend = _backend()
    if backend is not None:
        try:
            if int(np.count_nonzero(model.integrality)) >= FIXING_MIN_INTEGERS:
                fixed = _solve_fixed(backend, model, time_limit_s, known_value, cutoff)
                if fixed is not None:
                    return fixed
            if cutoff is not None:
                return _solve_cut(backend, model, time_limit_s, cutoff)
            if known_value is not None:
                bound = known_value + 0.5
                bounded = backend(model, time_limit_s, bound)
                worse = bounded.x is not None and bounded.objective > bound
                if bounded.outcome is not Outcome.INFEASIBLE and not worse:
                    return bounded
            return backend(model, time_limit_s, None)
        except (TypeError, AttributeError):  # pragma: no cover - SciPy changed the binding
            pass
    result = _solve_public(model, time_limit_s)
    if cutoff is not None and result.outcome is Outcome.OPTIMAL and result.objective > cutoff + 0.5:
        return MilpResult(Outcome.CUT_OFF, None, float("inf"), 0.0)
    return result


def _solve_cut(
    backend: _Backend, model: MilpModel, time_limit_s: float, cutoff: float
) -> MilpResult:
    """``model`` solved for points of objective at most ``cutoff`` (see :func:`solve_milp`):
    HiGHS' objective bound prunes everything above it, and "infeasible" under that bound is
    the cutoff. Should HiGHS answer with a point above the bound (HiGHS 1.12 may), the model
    is solved again without it and the point compared."""
    bounded = backend(model, time_limit_s, cutoff + 0.5)
    if bounded.outcome is Outcome.INFEASIBLE:
        return MilpResult(Outcome.CUT_OFF, None, float("inf"), 0.0)
    if bounded.x is None or bounded.objective <= cutoff + 0.5:
        return bounded
    whole = backend(model, time_limit_s, None)
    if whole.outcome is Outcome.OPTIMAL and whole.objective > cutoff + 0.5:
        return MilpResult(Outcome.CUT_OFF, None, float("inf"), 0.0)
    return whole


_Backend = Callable[[MilpModel, float, "float | None"], MilpResult]


def _backend() -> _Backend | None:
    """The fastest way to HiGHS this SciPy offers (see the module docstring); ``None``: only
    the public ``milp``."""
    if _CORE is not None:
        return _solve_core
    wrapper = _PRIVATE_WRAPPER
    if wrapper is not None:
        return lambda model, limit, bound: _solve_private(wrapper, model, limit, bound)
    return None


def _solve_fixed(
    backend: _Backend,
    model: MilpModel,
    time_limit_s: float,
    known_value: float | None,
    cutoff: float | None = None,
) -> MilpResult | None:
    """The optimum of ``model``, found on a copy whose hopeless integer columns are fixed at
    their lower bounds; ``None`` when this cannot prove it (the caller solves the whole model).

    Reduced-cost fixing. Let ``z`` be the LP relaxation's optimum and ``d[j] >= 0`` the reduced
    cost of an integer column at its lower bound ``l[j]``. LP duality gives every feasible
    point ``v`` an objective of at least ``z + d[j] (v[j] - l[j])``, so a point that moves
    ``v[j]`` off its bound (by 1 at least: it is integral) costs at least ``z + d[j]``. With a
    target ``T`` (``z`` plus :data:`FIXING_MARGIN` of it, or ``known_value`` when that is
    lower) every column with ``z + d[j] > T`` is fixed. If the reduced model has an optimum
    ``V <= T``, no point using a fixed column can match it (each costs more than ``T``), so
    ``V`` is the whole model's optimum; otherwise ``None``. Measured on the plans of
    ``bench/plan_latency.py``, half or more of the integer columns are fixed and HiGHS' root
    work on the rest takes about half as long, LP included; about one solve in fifty falls back.
    When the reduced model runs out of time with a fleet, that fleet comes back, time-limited,
    with its gap to a bound of the whole model: a run on the whole model would take a second
    time limit (on plans that spread over regions, 2 s more per solve) to end, most likely, out
    of time as well.

    With a ``cutoff`` (:func:`solve_milp`) the target is at most ``cutoff``: an LP bound above
    it is the cutoff at once, and a reduced model with no point up to a target equal to the
    cutoff proves it (a point using a fixed column costs more than the target).
    """
    relaxed = MilpModel(
        model.c,
        model.a,
        model.row_lower,
        model.row_upper,
        model.col_lower,
        model.col_upper,
        np.zeros_like(model.integrality),
    )
    lp = backend(relaxed, time_limit_s, None)
    if lp.outcome is not Outcome.OPTIMAL or lp.reduced_cost is None:
        return None
    if cutoff is not None and lp.objective > cutoff + 0.5:
        return MilpResult(Outcome.CUT_OFF, None, float("inf"), 0.0)
    target = lp.objective + FIXING_MARGIN * abs(lp.objective)
    if known_value is not None:
        target = min(target, known_value)
    at_cutoff = cutoff is not None and cutoff <= target
    if cutoff is not None:
        target = min(target, cutoff)
    tolerance = 1e-6 * max(1.0, abs(target))
    fix = (
        (model.integrality > 0)
        & (lp.reduced_cost > 0.0)
        & (lp.objective + lp.reduced_cost > target + tolerance)
    )
    if not fix.any():
        return None
    upper = model.col_upper.copy()
    upper[fix] = model.col_lower[fix]
    reduced = MilpModel(
        model.c,
        model.a,
        model.row_lower,
        model.row_upper,
        model.col_lower,
        upper,
        model.integrality,
    )
    result = backend(reduced, time_limit_s, target + 0.5)
    if result.outcome is Outcome.OPTIMAL and result.objective <= target + tolerance:
        return replace(result, row_dual=None, reduced_cost=None)
    if at_cutoff and result.outcome is Outcome.INFEASIBLE:
        return MilpResult(Outcome.CUT_OFF, None, float("inf"), 0.0)
    if result.outcome is Outcome.TIME_LIMIT_WITH_SOLUTION and result.x is not None:
        # A point of the whole model (fixing columns only restricts it). A point using a fixed
        # column costs more than ``target``, any other is a point of the reduced model: the
        # whole optimum is at least the lesser of ``target`` and the reduced dual bound.
        scale = max(abs(result.objective), 1e-9)
        reduced_bound = result.objective - result.mip_gap * scale
        bound = max(lp.objective, min(target, reduced_bound))
        gap = max(0.0, (result.objective - bound) / scale)
        return MilpResult(Outcome.TIME_LIMIT_WITH_SOLUTION, result.x, result.objective, gap)
    return None


def _solve_core(
    model: MilpModel, time_limit_s: float, objective_bound: float | None = None
) -> MilpResult:
    """One HiGHS run through SciPy's binding (a fresh ``Highs`` object per call: solves run in
    several threads). The same options and answers as :func:`_solve_private`."""
    core = _CORE
    assert core is not None
    a = model.a
    n_col, n_row = int(model.c.size), int(model.row_lower.size)
    lp = core.HighsLp()
    lp.num_col_ = n_col
    lp.num_row_ = n_row
    lp.a_matrix_.num_col_ = n_col
    lp.a_matrix_.num_row_ = n_row
    lp.a_matrix_.format_ = core.MatrixFormat.kColwise
    lp.col_cost_ = np.ascontiguousarray(model.c, dtype=np.float64)
    lp.col_lower_ = np.ascontiguousarray(model.col_lower, dtype=np.float64)
    lp.col_upper_ = np.ascontiguousarray(model.col_upper, dtype=np.float64)
    lp.row_lower_ = np.ascontiguousarray(model.row_lower, dtype=np.float64)
    lp.row_upper_ = np.ascontiguousarray(model.row_upper, dtype=np.float64)
    lp.a_matrix_.start_ = np.ascontiguousarray(a.indptr, dtype=np.int32)
    lp.a_matrix_.index_ = np.ascontiguousarray(a.indices, dtype=np.int32)
    lp.a_matrix_.value_ = np.ascontiguousarray(a.data, dtype=np.float64)
    is_mip = bool(np.any(model.integrality))
    if is_mip:
        integer, continuous = core.HighsVarType(1), core.HighsVarType(0)
        lp.integrality_ = [integer if v else continuous for v in model.integrality.tolist()]
    highs = core._Highs()
    for name, value in _core_options(time_limit_s, objective_bound):
        highs.setOptionValue(name, value)
    highs.passModel(lp)
    highs.run()
    status = int(highs.getModelStatus())
    info = highs.getInfo()
    if status == _K_OPTIMAL:
        solution = highs.getSolution()
        x = np.asarray(solution.col_value, dtype=np.float64)
        if is_mip:
            return MilpResult(Outcome.OPTIMAL, x, float(info.objective_function_value), 0.0)
        at_lower = np.asarray(
            [s == core.HighsBasisStatus.kLower for s in highs.getBasis().col_status], dtype=bool
        )
        col_dual = np.asarray(solution.col_dual, dtype=np.float64)
        return MilpResult(
            Outcome.OPTIMAL,
            x,
            float(info.objective_function_value),
            0.0,
            np.asarray(solution.row_dual, dtype=np.float64),
            np.where(at_lower, col_dual, 0.0) if at_lower.size == n_col else None,
        )
    if status in (_K_INFEASIBLE, _K_UNBOUNDED_OR_INFEASIBLE):
        return MilpResult(Outcome.INFEASIBLE, None, float("inf"), 0.0)
    if status in (_K_TIME_LIMIT, _K_ITERATION_LIMIT, _K_SOLUTION_LIMIT):
        if is_mip and info.objective_function_value != core.kHighsInf:
            x = np.asarray(highs.getSolution().col_value, dtype=np.float64)
            return MilpResult(
                Outcome.TIME_LIMIT_WITH_SOLUTION,
                x,
                float(info.objective_function_value),
                float(info.mip_gap),
            )
        return MilpResult(Outcome.TIME_LIMIT_NO_SOLUTION, None, float("inf"), float("inf"))
    return MilpResult(Outcome.ERROR, None, float("inf"), float("inf"))


def _core_options(
    time_limit_s: float, objective_bound: float | None
) -> list[tuple[str, bool | float]]:
    options: list[tuple[str, bool | float]] = [
        ("output_flag", False),
        ("time_limit", float(time_limit_s)),
        ("mip_rel_gap", 0.0),
        *_EXTRA_OPTIONS.items(),
    ]
    if objective_bound is not None:
        options.append(("objective_bound", float(objective_bound)))
    return options


def _wrapper_options() -> dict[str, Any]:
    """:data:`_EXTRA_OPTIONS` that SciPy's wrapper can set: it sets options as attributes of
    its ``HighsOptions``, which do not include every HiGHS option (``mip_allow_restart`` is
    missing in SciPy 1.17); the ones left out only cost time."""
    try:
        from scipy.optimize._highspy._core import HighsOptions
    except ImportError:  # pragma: no cover - depends on the SciPy version
        return {}
    known = HighsOptions()
    return {k: v for k, v in _EXTRA_OPTIONS.items() if hasattr(known, k)}


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
        **_wrapper_options(),
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
        margins = res.get("marg_bnds")
        return MilpResult(
            Outcome.OPTIMAL,
            np.asarray(x, dtype=np.float64),
            float(res["fun"]),
            0.0,
            np.asarray(dual, dtype=np.float64) if dual is not None else None,
            np.asarray(margins, dtype=np.float64)[0] if margins is not None else None,
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
