"""The measured data resolves: every calibration.csv GPU and model label maps to the catalog and
the presets, the committed constants cover every group and engine, and the fit error is recorded."""

from __future__ import annotations

import csv
from pathlib import Path

from bench._calibration_data import ENGINE_LABELS, GPU_LABELS, load_gpus, load_rows
from service.domain.perfmodel import constants
from service.domain.perfmodel.calibration import (
    BENCH_PROFILES,
    PUBLIC_PROFILES,
    default_calibration,
)
from service.domain.perfmodel.hardware import CALIBRATED_GROUPS, calibration_group

ROOT = Path(__file__).resolve().parents[3]


def _labels(column: str) -> set[str]:
    with (ROOT / "service" / "data" / "calibration.csv").open(encoding="utf-8") as fh:
        return {r[column] for r in csv.DictReader(fh)}


def test_every_gpu_label_maps_to_a_catalog_gpu() -> None:
    gpus = load_gpus()
    labels = _labels("gpu")
    assert labels <= set(GPU_LABELS)
    for label in labels:
        assert GPU_LABELS[label] in gpus, label


def test_every_engine_label_has_a_profile() -> None:
    for label in _labels("engine"):
        assert ENGINE_LABELS[label] in BENCH_PROFILES


def test_rows_load_and_the_used_ones_are_classified() -> None:
    rows = load_rows()
    assert len(rows) == 1019
    kinds = {r.kind for r in rows}
    assert kinds == {"peak", "static", "closed", "pp", "sharegpt"}
    assert sum(r.kind == "pp" for r in rows) == 60


def test_calibrated_groups_cover_the_measured_gpus() -> None:
    gpus = load_gpus()
    groups = {calibration_group(gpus[g]).group for g in set(GPU_LABELS.values())}
    assert groups == set(CALIBRATED_GROUPS)
    for gid in GPU_LABELS.values():
        assert calibration_group(gpus[gid]).note == ""  # measured GPUs borrow nothing


def test_constants_cover_every_group_and_engine() -> None:
    cal = default_calibration()
    assert set(cal.group_by_name) == set(CALIBRATED_GROUPS)
    used = {p.constants for p in (*BENCH_PROFILES.values(), *PUBLIC_PROFILES.values())}
    assert used <= set(cal.engine_by_name)
    for _, g in cal.groups:
        assert 0.0 < g.eta_m <= 1.0 and 0.0 < g.eta_c <= 1.0


def test_fit_report_records_held_out_error() -> None:
    report = constants.FIT_REPORT
    held = report["held_out"]
    assert isinstance(held, dict)
    assert held["throughput"]["median_ape"] < 0.15
    assert "Produced on" in (constants.__doc__ or "")
