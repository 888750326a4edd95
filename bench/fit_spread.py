"""How far apart are equally good fits? Stage A from its start values and from starts moved by
one part in a million.

``bench/calibrate.py`` fits stage A (hardware and TensorRT-LLM constants) by bounded least
squares from fixed start values. Its objective has near-equal minima along the memory
constants, so a perturbation as small as another CPU's rounding can end the solve in another
one. This fits stage A twice, from the start values and from starts multiplied by
``1 - eps``, ``1`` and ``1 + eps`` in turn, and prints for each fit its memory constants and
in-sample median APE, then how far the two fits' predictions of the stage-A rows are apart
(median, 90th percentile, largest). Takes about six minutes on two cores.

Run: ``nice -n 10 .venv/bin/python bench/fit_spread.py [--eps 1e-6]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import calibrate  # noqa: E402  (first: it pins BLAS to one thread)
from bench._calibration_data import Row, load_gpus, load_rows  # noqa: E402
from bench._predict import predict_rows  # noqa: E402
from service.domain.catalog import GpuSpec  # noqa: E402
from service.domain.perfmodel.calibration import calibration_from_mapping  # noqa: E402

MEMORY_CONSTANTS = ("act_scale", "reserve_gb", "reserve_frac")


def stage_a(rows: Sequence[Row], gpus: Mapping[str, GpuSpec], eps: float) -> dict[str, Any]:
    """Stage A's solve with every start value multiplied by 1 - eps, 1 or 1 + eps in turn."""
    params = [
        replace(p, start=p.start * (1.0 + eps * (i % 3 - 1)))
        for i, p in enumerate(calibrate._stage_a_params(rows, gpus))
    ]
    return calibrate._solve(calibrate._defaults(), params, rows, gpus, 1.5, 400)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--eps", type=float, default=1e-6, help="relative move of the start values")
    args = ap.parse_args(argv)
    gpus = load_gpus()
    rows = calibrate.stage_a_rows(load_rows(gpus)[0])
    preds = {}
    for name, eps in (("start values", 0.0), (f"starts x (1 +- {args.eps:g})", args.eps)):
        fitted = stage_a(rows, gpus, eps)
        preds[name] = predict_rows(rows, gpus, calibration_from_mapping(fitted))
        ape = statistics.median(
            abs(p / r.value - 1.0) for p, r in zip(preds[name], rows, strict=True)
        )
        consts = ", ".join(f"{k} {fitted[k]:.4g}" for k in MEMORY_CONSTANTS)
        print(f"{name}: {consts}; in-sample median APE {ape:.2%}")
    a, b = preds.values()
    gaps = sorted(abs(y / x - 1.0) for x, y in zip(a, b, strict=True))
    p90 = gaps[int(0.9 * (len(gaps) - 1))]
    print(
        f"predictions of {len(gaps)} stage-A rows apart by median {statistics.median(gaps):.2%}, "
        f"90th percentile {p90:.2%}, largest {gaps[-1]:.1%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
