"""Fit the performance model's efficiency constants to service/data/calibration.csv.

Usage::

    .venv/bin/python bench/calibrate.py            # fit on the training split, write constants
    .venv/bin/python bench/calibrate.py --all      # fit on every used row (not the default)
    .venv/bin/python bench/calibrate.py --dry-run  # fit and report, write nothing
    .venv/bin/python bench/calibrate.py --lomo     # also leave-one-model-out cross-validation

Method: ``scipy.optimize.least_squares`` (trust-region reflective, bounded) on residuals
``log(predicted / measured)`` with a soft-L1 loss (scale 0.15, so a handful of outliers cannot
drag the fit), parameters in log space, deterministic start and data order (no randomness is
involved; ``SEED`` is fixed anyway for any sampling added later). Rows are weighted so each
benchmark family counts: peak-throughput rows 1, latency rows (TTFT, TPOT) 1.5.

The fit uses the TRAINING split only: a deterministic quarter of (model, prompt, output) shapes
is held out (``_calibration_data.held_out``) and reported separately by bench/accuracy.py.
The result is written to ``service/domain/perfmodel/constants.py`` as Python literals together
with the fit and held-out errors, the date and the command.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import pprint
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._calibration_data import Row, held_out, load_gpus, load_rows, predict  # noqa: E402
from service.domain.catalog import GpuSpec  # noqa: E402
from service.domain.perfmodel.calibration import (  # noqa: E402
    Calibration,
    calibration_from_mapping,
)
from service.domain.perfmodel.hardware import CALIBRATED_GROUPS  # noqa: E402

SEED = 20240601
CONSTANTS_PY = ROOT / "service" / "domain" / "perfmodel" / "constants.py"
ENGINES = ("trtllm-0.14", "trtllm-1.0", "lmdeploy-0.1")


@dataclass(frozen=True, slots=True)
class Param:
    """One fitted number: where it goes, start value and bounds (fitted in log space)."""

    path: tuple[str, ...]
    start: float
    lo: float
    hi: float


def _params() -> list[Param]:
    ps: list[Param] = []
    for g in CALIBRATED_GROUPS:
        ps.append(Param(("groups", g, "eta_m"), 0.75, 0.3, 1.0))
        ps.append(Param(("groups", g, "eta_c"), 0.6, 0.15, 1.0))
    ps += [
        Param(("fp8_gemm_eff",), 0.8, 0.3, 1.0),
        Param(("fp4_gemm_eff",), 0.6, 0.15, 1.0),
        Param(("attn_eff",), 0.7, 0.2, 1.0),
        Param(("moe_gemm_eff",), 0.7, 0.2, 1.0),
        Param(("kv_read_eff",), 0.8, 0.3, 1.0),
        Param(("ep_imbalance",), 1.2, 1.0, 1.5),
        Param(("closed_loop_ca2",), 2.0, 1.0, 20.0),
        Param(("act_scale",), 1.0, 0.3, 1.5),
        Param(("nvlink_latency_us",), 2.0, 0.2, 30.0),
        Param(("nvlink_bw_eff",), 0.7, 0.2, 1.0),
        Param(("pcie_latency_us",), 8.0, 0.5, 100.0),
        Param(("pcie_bw_eff",), 0.4, 0.05, 1.0),
        Param(("reserve_gb",), 1.5, 0.5, 2.5),
        Param(("reserve_frac",), 0.01, 0.001, 0.03),
    ]
    for e in ENGINES:
        if e != "trtllm-0.14":  # the reference build: its efficiencies are the groups'
            ps.append(Param(("engines", e, "eff_compute"), 1.0, 0.4, 1.6))
            ps.append(Param(("engines", e, "eff_memory"), 1.0, 0.4, 1.3))
        ps.append(Param(("engines", e, "step_overhead_ms"), 1.0, 0.05, 5.0))
        ps.append(Param(("engines", e, "layer_overhead_us"), 10.0, 0.5, 30.0))
        ps.append(Param(("engines", e, "seq_overhead_us"), 2.0, 0.05, 60.0))
        if e != "trtllm-0.14":  # no TTFT rows for v0.14
            ps.append(Param(("engines", e, "ttft_overhead_ms"), 5.0, 0.2, 100.0))
    return ps


_FIXED_ENGINE = {"eff_compute": 1.0, "eff_memory": 1.0, "ttft_overhead_ms": 5.0}


def to_mapping(params: Sequence[Param], x: np.ndarray) -> dict[str, object]:
    """Parameter vector (log space) -> the literal structure stored in constants.py."""
    out: dict[str, object] = {
        "groups": {g: {} for g in CALIBRATED_GROUPS},
        "engines": {e: dict(_FIXED_ENGINE) for e in ENGINES},
    }
    for p, v in zip(params, x, strict=True):
        value = float(math.exp(v))
        node: dict[str, object] = out
        for key in p.path[:-1]:
            node = node[key]  # type: ignore[assignment]
        node[p.path[-1]] = value
    return out


def calibration_of(params: Sequence[Param], x: np.ndarray) -> Calibration:
    """Parameter vector -> :class:`Calibration`."""
    return calibration_from_mapping(to_mapping(params, x))


def _weight(row: Row) -> float:
    return 1.5 if row.metric in ("ttft", "tpot") else 1.0


def residuals(
    x: np.ndarray, params: Sequence[Param], rows: Sequence[Row], gpus: dict[str, GpuSpec]
) -> np.ndarray:
    """Weighted log ratios; a row the model cannot run gets a large fixed penalty."""
    cal = calibration_of(params, x)
    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        p = predict(r, gpus, cal)
        out[i] = _weight(r) * (math.log(p / r.value) if p > 0 and math.isfinite(p) else 3.0)
    return out


def fit(rows: Sequence[Row], gpus: dict[str, GpuSpec]) -> tuple[list[Param], np.ndarray]:
    """Least-squares fit; returns the parameters and the optimum (log space)."""
    params = _params()
    x0 = np.log([p.start for p in params])
    lo = np.log([p.lo for p in params])
    hi = np.log([p.hi for p in params])
    res = least_squares(
        residuals,
        x0,
        bounds=(lo, hi),
        args=(params, rows, gpus),
        loss="soft_l1",
        f_scale=0.15,
        x_scale=1.0,
        diff_step=1e-3,
        max_nfev=400,
        method="trf",
    )
    return params, res.x


def errors(
    rows: Sequence[Row], gpus: dict[str, GpuSpec], cal: Calibration
) -> dict[str, dict[str, float]]:
    """Median APE / share within 25 % / count per metric for ``rows``."""
    by: dict[str, list[float]] = {}
    for r in rows:
        p = predict(r, gpus, cal)
        ape = abs(p / r.value - 1.0) if math.isfinite(p) and p > 0 else 1.0
        by.setdefault(r.metric, []).append(ape)
    return {
        m: {
            "n": float(len(v)),
            "median_ape": statistics.median(v),
            "within_25pct": sum(1 for a in v if a <= 0.25) / len(v),
        }
        for m, v in sorted(by.items())
    }


def leave_one_model_out(rows: Sequence[Row], gpus: dict[str, GpuSpec]) -> dict[str, float]:
    """Median APE of each model's rows when the model is left out of the fit."""
    out: dict[str, float] = {}
    for mid in sorted({r.model.id for r in rows}):
        train = [r for r in rows if r.model.id != mid]
        test = [r for r in rows if r.model.id == mid]
        params, x = fit(train, gpus)
        cal = calibration_of(params, x)
        apes = []
        for r in test:
            p = predict(r, gpus, cal)
            apes.append(abs(p / r.value - 1.0) if math.isfinite(p) and p > 0 else 1.0)
        out[mid] = statistics.median(apes)
        print(f"  LOMO {mid:22s} n={len(test):4d} median APE {out[mid]:.3f}", flush=True)
    return out


def _rounded(obj: object) -> Any:
    """Round every float to 6 significant digits (the precision written to constants.py)."""
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, float):
        return float(f"{obj:.6g}")
    return obj


def _literal(obj: object, indent: int = 0) -> str:
    """Python literal of nested dicts/floats in the layout ``ruff format`` keeps (double quotes,
    one item per line, trailing commas), so the generated module needs no reformatting."""
    pad = " " * (indent + 4)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [
            f"{pad}{_literal(str(k))}: {_literal(v, indent + 4)}," for k, v in sorted(obj.items())
        ]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(obj, str):
        return '"' + obj.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(obj)


def _render(mapping: dict[str, object], report: dict[str, object], command: str) -> str:
    today = _dt.datetime.now(tz=_dt.UTC).date().isoformat()
    return f'''"""Fitted performance-model constants. GENERATED by bench/calibrate.py: do not edit.

Produced on {today} by ``{command}``: scipy.optimize.least_squares (TRF,
soft-L1 loss, scale 0.15) on log(predicted / measured) over the TRAINING split of
service/data/calibration.csv (a deterministic quarter of (model, prompt, output) shapes held out,
SHA-256 of the shape key). Pipeline-parallel and ShareGPT rows are not used. ``FIT_REPORT``
holds the fit error on the training rows and the error on the held-out rows (median absolute
percentage error, share within 25 %) per metric. Meaning of each constant:
service/domain/perfmodel/calibration.py.
"""

from __future__ import annotations

FITTED: dict[str, object] = {_literal(mapping)}

FIT_REPORT: dict[str, object] = {_literal(report)}
'''


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--all", action="store_true", help="fit on all used rows (no hold-out)")
    ap.add_argument("--dry-run", action="store_true", help="do not write constants.py")
    ap.add_argument("--lomo", action="store_true", help="leave-one-model-out cross-validation")
    args = ap.parse_args(argv)
    np.random.seed(SEED)
    gpus = load_gpus()
    rows = [r for r in load_rows() if r.used]
    train = rows if args.all else [r for r in rows if not held_out(r)]
    test = [] if args.all else [r for r in rows if held_out(r)]
    print(f"rows used {len(rows)}: train {len(train)}, held out {len(test)}", flush=True)
    params, x = fit(train, gpus)
    mapping = _rounded(to_mapping(params, x))  # what constants.py will hold, exactly
    cal = calibration_from_mapping(mapping)
    report: dict[str, object] = {
        "n_params": len(params),
        "n_train": len(train),
        "n_held_out": len(test),
        "train": errors(train, gpus, cal),
        "held_out": errors(test, gpus, cal) if test else {},
        "all": errors(rows, gpus, cal),
    }
    if args.lomo:
        report["leave_one_model_out_median_ape"] = leave_one_model_out(rows, gpus)
    for name in ("train", "held_out", "all"):
        print(f"{name}:")
        part = report[name]
        assert isinstance(part, dict)
        for metric, e in part.items():
            print(
                f"  {metric:10s} n={int(e['n']):4d} median APE {e['median_ape']:.3f} "
                f"within 25% {e['within_25pct']:.2f}"
            )
    print("constants:")
    print(pprint.pformat(mapping, width=100, sort_dicts=True))
    if not args.dry_run:
        command = (
            "python bench/calibrate.py"
            + (" --all" if args.all else "")
            + (" --lomo" if args.lomo else "")
        )
        CONSTANTS_PY.write_text(_render(mapping, report, command), encoding="utf-8")
        print(f"wrote {CONSTANTS_PY.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
