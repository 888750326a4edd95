"""Leave-one-source-out validation: the fitting code never sees a row of the held-out source,
and the held-out rows are the only ones predicted in their fold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest

import bench.accuracy as accuracy
from bench._baseline_calibration import BASELINE_FITTED
from bench._calibration_data import Row, load_gpus, load_rows, loso_splits
from bench._predict import constants_key, predict_run
from bench.calibrate import SERVING_ENGINES
from service.domain.catalog import GpuSpec
from service.domain.perfmodel.calibration import calibration_from_mapping
from service.domain.perfmodel.constants import FITTED


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return load_rows()[0]


def _fold_sources(rows: Sequence[Row], engine: str) -> list[str]:
    return sorted({r.source for r in rows if r.engine == engine})


@pytest.mark.parametrize("engine", ["trtllm", "vllm", "sglang"])
def test_fold_fits_only_on_other_sources(
    rows: list[Row], engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def fake_stage_a(train: Sequence[Row], gpus: Mapping[str, GpuSpec]) -> dict[str, Any]:
        seen.extend(r.source for r in train)
        return dict(BASELINE_FITTED)

    def fake_stage_b(
        base: Mapping[str, Any],
        train: Sequence[Row],
        gpus: Mapping[str, GpuSpec],
        only: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        seen.extend(r.source for r in train)
        return dict(base)

    monkeypatch.setattr(accuracy, "fit_stage_a", fake_stage_a)
    monkeypatch.setattr(accuracy, "fit_stage_b", fake_stage_b)
    gpus = load_gpus()
    held = _fold_sources(rows, engine)[0]
    split = next(s for s in loso_splits(rows) if s.source == held)
    preds = accuracy.fold_predictions(split, rows, gpus, dict(BASELINE_FITTED))
    assert seen, "the fold must call the fitting code"
    assert held not in seen
    assert set(preds) == set(split.test)
    assert all(rows[i].source == held for i in preds)


def test_stats_count_unpredictable_rows_as_full_error() -> None:
    s = accuracy.stats([(110.0, 100.0), (float("nan"), 100.0), (80.0, 100.0)])
    assert s.n == 3
    assert s.median_ape == pytest.approx(0.2)
    assert s.within_25pct == pytest.approx(2 / 3)
    assert s.bias == pytest.approx(-0.2)


def test_the_quick_serving_run_starts_from_stage_a_alone() -> None:
    """``--engines`` reuses the committed stage A: without the serving engines' fits, which
    saw every source, a held-out build's rows would be predicted with its own fit."""
    base = accuracy.committed_stage_a()
    kept = set(base["engines"])
    assert kept and all(k.partition("-")[0] not in SERVING_ENGINES for k in kept)
    assert {"trtllm-1.0", "lmdeploy-0.1"} <= kept
    assert base["groups"] == FITTED["groups"]


def test_holding_out_some_sources_predicts_exactly_their_rows(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(accuracy, "fit_stage_a", lambda train, gpus: dict(BASELINE_FITTED))
    monkeypatch.setattr(accuracy, "fit_stage_b", lambda base, train, gpus, only=None: dict(base))
    sources = frozenset(_fold_sources(rows, "sglang")[:2])
    val = accuracy.loso_validation(
        rows, load_gpus(), jobs=1, stage_a=dict(BASELINE_FITTED), sources=sources
    )
    assert set(val.preds) == {r.index for r in rows if r.source in sources}
    assert sorted(val.folds) == sorted(sources)


def test_the_source_option_holds_out_the_matching_sources_and_prints_each_row(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--source TEXT`` folds exactly the sources whose name contains TEXT (any case) and
    prints one line per held-out row: measured, held-out prediction, their ratio."""
    monkeypatch.setattr(accuracy, "fit_stage_a", lambda train, gpus: dict(BASELINE_FITTED))
    monkeypatch.setattr(accuracy, "fit_stage_b", lambda base, train, gpus, only=None: dict(base))
    held: list[frozenset[str]] = []
    real = accuracy.loso_validation

    def spy(*args: Any, **kwargs: Any) -> accuracy.Validation:
        held.append(args[4])
        return real(*args, **kwargs)

    monkeypatch.setattr(accuracy, "loso_validation", spy)
    nim = sorted({r.source for r in rows if r.build.startswith("nim-")})
    assert accuracy.main(["--source", "NIM/BENCHMARKING", "--jobs", "1"]) == 0
    assert held == [frozenset(nim)]
    printed = capsys.readouterr().out
    mine = [r for r in rows if r.source in nim]
    lines = [ln for ln in printed.splitlines() if ln.startswith("| ") and " nim-" in ln]
    assert len(lines) == len(mine) > 0
    # each line ends with measured | predicted | predicted / measured, consistent
    for ln in lines:
        measured, predicted, ratio = (c.strip() for c in ln.strip("|").split("|")[-3:])
        assert float(ratio) == pytest.approx(float(predicted) / float(measured), rel=2e-3)


def test_the_source_option_refuses_a_text_no_source_contains(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert accuracy.main(["--source", "no-such-benchmark-anywhere"]) == 2
    assert "no source name contains no-such-benchmark-anywhere" in capsys.readouterr().err


def test_a_held_out_nim_build_gets_the_newest_trtllm_build_not_its_namesake(
    rows: list[Row],
) -> None:
    """NIM's version numbers the container, not the TensorRT-LLM release inside it: a NIM
    build held out of the fit is predicted with the newest TensorRT-LLM build (what
    ``engine: trtllm`` plans with), whatever TensorRT-LLM release shares NIM's number."""
    nim = next(r for r in rows if r.build.startswith("nim-"))
    fitted_engines = FITTED["engines"]
    assert isinstance(fitted_engines, dict)
    engines = {k: v for k, v in fitted_engines.items() if not k.startswith("nim")}
    engines["trtllm-1.2"] = engines["trtllm-1.0"]
    cal = calibration_from_mapping({**FITTED, "engines": engines})
    # A NIM 1.0 container next to TensorRT-LLM builds 0.17, 1.0 and 1.2.
    held_out = replace(nim, version="1.0", build="nim-1.0")
    assert constants_key(held_out, cal) == "trtllm-1.2"
    # A TensorRT-LLM row of an unfitted release still gets the nearest release.
    trtllm = next(r for r in rows if r.build == "trtllm-0.17")
    assert constants_key(replace(trtllm, version="0.16", build="trtllm-0.16"), cal) == (
        "trtllm-0.17"
    )


def test_residuals_group_rows_by_the_running_batch_the_model_puts_on_a_replica(
    rows: list[Row],
) -> None:
    """The residual table by running batch classes each run by the batch the committed model
    predicts for one replica, whatever the benchmark's client count: one client keeps one
    sequence running, and a 32,000-token Qwen3-32B request fills one A100's KV cache alone,
    though GPUStack sent 100 of them at once."""
    gpus = load_gpus()
    by = accuracy.running_batch_class(gpus)
    one_client = next(
        r for r in rows if r.engine == "vllm" and r.load == "concurrency" and r.load_n == 1
    )
    assert by(one_client) == "running batch 1"
    long_prompts = next(
        r
        for r in rows
        if r.model.id == "qwen3-32b" and r.gpu_id == "a100-sxm-80gb" and r.input_len == 32000
    )
    assert long_prompts.load == "burst" and long_prompts.load_n == 100
    assert by(long_prompts) == "running batch 1"
    cal = calibration_from_mapping(FITTED)
    bounds = [(1.0, "1"), (16.0, "2-16"), (128.0, "17-128"), (512.0, "129-512")]
    for r in rows[::97]:
        b = predict_run(r, gpus, cal).batch
        if not b > 0.0:
            assert by(r) == "running batch: not predicted"
            continue
        expected = next((name for top, name in bounds if b <= top), "> 512")
        assert by(r) == f"running batch {expected}"
