"""Fit a calibration profile: corrections to the reference constants for the GPU families and
the engine a team's measurements cover, in seconds.

Method. Per GPU family ``f`` three multipliers (``values.Correction``): ``compute`` on
``eta_c``, ``memory`` on ``eta_m`` and ``overhead`` on the engine build's per-iteration costs.
Parameters are their logarithms ``x``; ``scipy.optimize.least_squares`` (trust-region
reflective, bounded, soft-L1 loss with scale 0.1 so one odd run cannot drag the fit) minimises

    sum over rows  w_r * log(predicted_r(x) / measured_r)            (a relative error)
    + sum over x   x / PRIOR_SPREAD                                   (the reference as prior)

so with few rows the profile stays near the reference and with many it follows the data.
``predicted`` is exactly what ``POST /v1/estimate`` answers with the profile (the same
``perfmodel.serving.estimate_fresh``), under the run's load: ``concurrency`` -> the closed loop
of that many clients per replica, ``rate`` -> Poisson arrivals per replica, ``burst`` (every
request sent at once) -> a closed loop of that many clients, whose throughput and TPOT match a
burst's steady state; a burst's TTFT and E2E (a queue draining once) are kept but not fitted.

Rows fitted: means and medians of output tokens/s (requests/s only where a run gives no
tokens/s), TTFT, TPOT (ITL only where a run gives no TPOT) and E2E (only where a run gives no
TTFT or TPOT); p99s are stored, not fitted (the closed-loop model gives means). Weights: each
run's rows share the weight of one run per metric, so a file with many statistics does not
outweigh one with few.

Error figures are median absolute percentage errors (APE) over the fitted rows: before
(reference), after (this fit, in sample) and leave-one-file-out (each file's rows predicted by
a fit without that file; needs two files), overall and per family and metric.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from service.domain.benchmarks.values import Measurement, Metric
from service.domain.catalog import GpuSpec
from service.domain.errors import InvalidInput
from service.domain.llm import resolve_model
from service.domain.perfmodel.calibration import known_versions, release_series
from service.domain.perfmodel.hardware import accuracy_family
from service.domain.perfmodel.serving import estimate_fresh
from service.domain.perfmodel.values import Correction, Deployment, Estimate, RequestShape

PRIOR_SPREAD = 0.5
"""Log-space spread of the prior on each multiplier (x0.6 to x1.65 costs one row's error)."""
BOUNDS = {"compute": (0.2, 5.0), "memory": (0.2, 5.0), "overhead": (0.05, 20.0)}
PARAMS = tuple(BOUNDS)
FAILED_RESIDUAL = 3.0
JAC_STEP = 1e-3
MAX_EVALUATIONS = 60
MIN_ROWS = 2
MAX_ROWS = 5000

Progress = Callable[[int, int], None]
"""``progress(done, total)`` over the fits a request runs (the main fit and each held-out
file)."""


@dataclass(frozen=True, slots=True)
class FitRow:
    """A measurement and the file (content hash) it came from: the leave-one-out unit."""

    file: str
    m: Measurement


@dataclass(frozen=True, slots=True)
class ErrorCell:
    """Median APE of one family and metric, as fractions: reference, fitted (in sample) and
    leave-one-file-out (``None`` with one file)."""

    family: str
    metric: str
    n: int
    before: float
    after: float
    held_out: float | None


@dataclass(frozen=True, slots=True)
class FitResult:
    corrections: tuple[Correction, ...]
    rows: int
    files: int
    error_before: float
    error_after: float
    error_held_out: float | None
    cells: tuple[ErrorCell, ...]
    notes: tuple[str, ...]


def registered_version(engine: str, version: str) -> str | None:
    """The engine build a measured release runs on: its minor series when registered, else
    ``None`` (the engine's newest calibrated build)."""
    series = release_series(version)
    return series if series in known_versions(engine) else None


def fitted_rows(rows: Sequence[FitRow]) -> list[FitRow]:
    """The rows the fit uses (module docstring), in input order."""
    by_run: dict[tuple[str, int], set[Metric]] = defaultdict(set)
    for r in rows:
        by_run[(r.file, r.m.run)].add(r.m.metric)
    out = []
    for r in rows:
        have, m = by_run[(r.file, r.m.run)], r.m
        if m.stat == "p99":
            continue
        if m.load == "burst" and m.metric in ("ttft_ms", "e2e_ms"):
            continue
        if m.metric == "requests_per_s" and "output_tokens_per_s" in have:
            continue
        if m.metric == "itl_ms" and "tpot_ms" in have:
            continue
        if m.metric == "e2e_ms" and {"ttft_ms", "tpot_ms"} <= have:
            continue
        out.append(r)
    return out


class _Predictor:
    """Predicted value of each row under a set of corrections (one estimate per run)."""

    def __init__(self, rows: Sequence[FitRow], gpus: Mapping[str, GpuSpec], label: str) -> None:
        self.rows = rows
        self.gpus = gpus
        self.label = label
        self.runs: dict[tuple[str, int], list[int]] = defaultdict(list)
        for i, r in enumerate(rows):
            self.runs[(r.file, r.m.run)].append(i)
        self.archs = {r.m.model: resolve_model(r.m.model).arch for r in rows}

    def predict(self, corrections: Mapping[str, Correction]) -> list[float]:
        out = [math.nan] * len(self.rows)
        for idx in self.runs.values():
            first = self.rows[idx[0]].m
            est = self._estimate(first, corrections)
            for i in idx:
                out[i] = _value(est, self.rows[i].m)
        return out

    def _estimate(self, m: Measurement, corrections: Mapping[str, Correction]) -> Estimate | None:
        gpu = self.gpus[m.gpu]
        dep = Deployment(
            gpu=gpu,
            tensor_parallel=m.tensor_parallel,
            precision=m.precision,
            kv_precision=m.kv_precision,
            engine=m.engine,
            allow_pcie_tensor_parallel=m.tensor_parallel > gpu.nvlink_domain,
            engine_version=registered_version(m.engine, m.engine_version),
            correction=corrections.get(accuracy_family(gpu)),
        )
        shape = RequestShape(max(1, round(m.prompt_tokens)), max(1, round(m.output_tokens)))
        reps = m.replicas
        try:
            if m.load == "rate":
                est = estimate_fresh(self.archs[m.model], dep, shape, qps=m.load_value / reps)
            else:
                clients = max(1, round(m.load_value / reps))
                est = estimate_fresh(self.archs[m.model], dep, shape, concurrency=clients)
        except (InvalidInput, ValueError, ZeroDivisionError, OverflowError):
            return None
        return est if est.fits else None


def _value(est: Estimate | None, m: Measurement) -> float:
    """The number ``m`` measured, as ``est`` predicts it (NaN where it cannot say)."""
    if est is None:
        return math.nan
    reps = m.replicas
    lat = est.latency
    p50 = m.stat == "p50" and lat is not None
    if m.metric == "output_tokens_per_s":
        return est.output_tokens_per_s * reps
    if m.metric == "requests_per_s":
        return est.requests_per_s * reps
    if est.reason:  # overloaded: latencies grow with the length of the run
        return math.nan
    if m.metric == "ttft_ms":
        return lat.ttft_p50_ms if p50 and lat else est.ttft_ms
    if m.metric in ("tpot_ms", "itl_ms"):
        return lat.tpot_p50_ms if p50 and lat else est.tpot_ms
    return lat.e2e_p50_ms if p50 and lat else est.e2e_ms


def _weights(rows: Sequence[FitRow]) -> np.ndarray:
    count: dict[tuple[str, int, str], int] = defaultdict(int)
    for r in rows:
        count[(r.file, r.m.run, r.m.metric)] += 1
    return np.array([1.0 / math.sqrt(count[(r.file, r.m.run, r.m.metric)]) for r in rows])


def _corrections(
    families: Sequence[str], engine: str, label: str, x: np.ndarray, digits: int | None = None
) -> dict[str, Correction]:
    out = {}
    for k, fam in enumerate(families):
        c, mem, oh = (math.exp(float(v)) for v in x[3 * k : 3 * k + 3])
        if digits is not None:
            c, mem, oh = round(c, digits), round(mem, digits), round(oh, digits)
        out[fam] = Correction(label, engine, fam, c, mem, oh)
    return out


def _solve(
    rows: Sequence[FitRow], gpus: Mapping[str, GpuSpec], families: Sequence[str], engine: str,
    label: str,
) -> dict[str, Correction]:  # fmt: skip
    pred = _Predictor(rows, gpus, label)
    measured = np.array([r.m.value for r in rows])
    w = _weights(rows)
    lo = np.log([BOUNDS[p][0] for _ in families for p in PARAMS])
    hi = np.log([BOUNDS[p][1] for _ in families for p in PARAMS])

    def residuals(x: np.ndarray) -> np.ndarray:
        p = np.array(pred.predict(_corrections(families, engine, label, x)))
        ok = np.isfinite(p) & (p > 0)
        r = np.full(len(rows), FAILED_RESIDUAL)
        r[ok] = np.log(p[ok] / measured[ok])
        return np.concatenate([w * r, x / PRIOR_SPREAD])

    def jacobian(x: np.ndarray) -> np.ndarray:
        """Forward differences with a step of 0.1 % in each multiplier: the model has no
        useful derivative at the scale of float rounding (batch caps are integers)."""
        f0 = residuals(x)
        out = np.empty((len(f0), len(x)))
        for j in range(len(x)):
            step = np.zeros(len(x))
            step[j] = JAC_STEP if x[j] + JAC_STEP <= hi[j] else -JAC_STEP
            out[:, j] = (residuals(x + step) - f0) / step[j]
        return out

    x0 = np.zeros(3 * len(families))
    sol = least_squares(
        residuals, x0, jac=jacobian, bounds=(lo, hi), loss="soft_l1", f_scale=0.1,
        max_nfev=MAX_EVALUATIONS,
    )  # fmt: skip
    return _corrections(families, engine, label, sol.x, digits=4)


def _ape(pred: float, meas: float) -> float:
    return abs(pred / meas - 1.0) if math.isfinite(pred) and pred > 0 else 1.0


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else math.nan


def fit_profile(
    measurements: Sequence[FitRow],
    gpus: Mapping[str, GpuSpec],
    engine: str,
    label: str,
    progress: Progress | None = None,
) -> FitResult:
    """Fit corrections for every GPU family the rows cover (see module docstring). Raises
    ``InvalidInput`` when the selection has fewer than ``MIN_ROWS`` usable rows."""
    mine = [r for r in measurements if r.m.engine == engine]
    rows = fitted_rows(mine)
    if len(rows) < MIN_ROWS:
        raise InvalidInput(
            f"the selection has {len(rows)} usable {engine} measurement(s); a fit needs at "
            f"least {MIN_ROWS} (means or medians of throughput, TTFT or TPOT)",
            field="selection",
        )
    if len(rows) > MAX_ROWS:
        raise InvalidInput(
            f"the selection has {len(rows)} rows; at most {MAX_ROWS}", field="selection"
        )
    families = sorted({accuracy_family(gpus[r.m.gpu]) for r in rows})
    files = sorted({r.file for r in rows})
    total = 1 + (len(files) if len(files) > 1 else 0)
    done = 0
    if progress:
        progress(done, total)
    fitted = _solve(rows, gpus, families, engine, label)
    done += 1
    if progress:
        progress(done, total)
    pred = _Predictor(rows, gpus, label)
    before = pred.predict({})
    after = pred.predict(fitted)
    held: list[float] | None = None
    if len(files) > 1:
        held = [math.nan] * len(rows)
        for f in files:
            train = [r for r in rows if r.file != f]
            fams = sorted({accuracy_family(gpus[r.m.gpu]) for r in train})
            refit = _solve(train, gpus, fams, engine, label) if train else {}
            test_idx = [i for i, r in enumerate(rows) if r.file == f]
            tp = _Predictor([rows[i] for i in test_idx], gpus, label).predict(refit)
            for i, p in zip(test_idx, tp, strict=True):
                held[i] = p
            done += 1
            if progress:
                progress(done, total)
    cells = []
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[(accuracy_family(gpus[r.m.gpu]), r.m.metric)].append(i)
    for (fam, metric), idx in sorted(groups.items()):
        cells.append(
            ErrorCell(
                fam, metric, len(idx),
                _median([_ape(before[i], rows[i].m.value) for i in idx]),
                _median([_ape(after[i], rows[i].m.value) for i in idx]),
                None if held is None else _median([_ape(held[i], rows[i].m.value) for i in idx]),
            )
        )  # fmt: skip
    notes = []
    if held is None:
        notes.append("one file: no leave-one-file-out error (import a second run to get one)")
    skipped = len(mine) - len(rows)
    if skipped:
        notes.append(
            f"{skipped} stored row(s) not fitted (p99s, burst TTFT/E2E, totals repeating "
            "another row of the same run)"
        )
    return FitResult(
        corrections=tuple(fitted[f] for f in families),
        rows=len(rows),
        files=len(files),
        error_before=_median([_ape(p, r.m.value) for p, r in zip(before, rows, strict=True)]),
        error_after=_median([_ape(p, r.m.value) for p, r in zip(after, rows, strict=True)]),
        error_held_out=None
        if held is None
        else _median([_ape(p, r.m.value) for p, r in zip(held, rows, strict=True)]),
        cells=tuple(cells),
        notes=tuple(notes),
    )
