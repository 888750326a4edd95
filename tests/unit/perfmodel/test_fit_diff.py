"""``bench/fit_diff.py``: two fits' held-out errors side by side."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench.fit_diff import (
    CONSTANTS,
    ROOT,
    Cell,
    gpu_cells,
    load,
    report,
    shared_constants,
    target_cells,
    weighted,
)


def _stats(ape: float, n: int) -> dict[str, float]:
    return {"median_ape": ape, "n": float(n), "bias": 0.0, "within_25pct": 0.5}


def _fit(trt_ttft: float, h100: float, eta_m: float) -> dict[str, Any]:
    return {
        "FIT_REPORT": {
            "loso": {
                "trtllm": {"ttft": _stats(trt_ttft, 64), "tpot": _stats(0.16, 64)},
                "vllm": {"tpot": _stats(0.23, 207)},
            },
            "loso_by_gpu": {
                "trtllm": {
                    "ttft": {"h100-sxm": _stats(h100, 30), "h200-sxm": _stats(0.50, 34)},
                },
                "vllm": {"tpot": {"h100-sxm": _stats(0.20, 100)}},
            },
        },
        "FITTED": {"kv_read_eff": 1.0, "groups": {"hopper-hbm": {"eta_m": eta_m}}},
    }


OLD = _fit(trt_ttft=0.32, h100=0.24, eta_m=0.56)
NEW = _fit(trt_ttft=0.24, h100=0.10, eta_m=0.90)


def test_targets_are_read_per_engine_and_metric_with_missing_ones_as_nan() -> None:
    cells = {(c.engine, c.metric): c for c in target_cells(OLD["FIT_REPORT"], NEW["FIT_REPORT"])}
    ttft = cells[("trtllm", "ttft")]
    assert (ttft.rows, ttft.old, ttft.new) == (64, 0.32, 0.24)
    assert math.isnan(cells[("sglang", "tpot")].new)  # no rows in either fit


def test_weighted_mean_counts_each_cell_by_its_rows() -> None:
    cells = gpu_cells(OLD["FIT_REPORT"], NEW["FIT_REPORT"])
    per = weighted(cells)
    rows, old, new = per["trtllm"]
    assert rows == 64
    assert old == pytest.approx((30 * 0.24 + 34 * 0.50) / 64)
    assert new == pytest.approx((30 * 0.10 + 34 * 0.50) / 64)
    rows, old, new = per["vllm"]
    assert (rows, old, new) == (100, 0.20, 0.20)


def test_report_counts_targets_met_and_lists_only_cells_that_moved() -> None:
    text = report(OLD, NEW, min_change=0.03)
    # trtllm TTFT goes from missing its 25% target to meeting it; TPOT meets it in both
    assert "| trtllm | TTFT | 64 | 32.0% | 24.0% | 25% | no | yes |" in text
    assert "Targets met: 2 before, 3 after." in text
    moved = text.split("moved by 3% or more")[1].split("## Constants")[0]
    assert "| trtllm | TTFT | h100-sxm | 30 | 24.0% | 10.0% |" in moved
    assert "h200-sxm" not in moved and "vllm" not in moved
    assert "| hopper-hbm.eta_m | 0.56 | 0.9 |" in text


def test_shared_constants_flatten_the_groups() -> None:
    assert shared_constants(NEW["FITTED"]) == {"hopper-hbm.eta_m": 0.90, "kv_read_eff": 1.0}


def test_the_shipped_fit_against_itself_moves_nothing() -> None:
    shipped = load(str(ROOT / CONSTANTS))
    cells = gpu_cells(shipped["FIT_REPORT"], shipped["FIT_REPORT"])
    assert len(cells) >= 20
    assert all(c.change == 0.0 for c in cells)
    assert "| (none) | | | | | |" in report(shipped, shipped, min_change=0.001)


def test_a_cell_change_is_new_minus_old() -> None:
    assert Cell("vllm", "tpot", "h100-sxm", 10, 0.3, 0.2).change == pytest.approx(-0.1)
