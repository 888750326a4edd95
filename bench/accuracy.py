"""Accuracy of the performance model on data it was not fitted on: leave-one-source-out.

Usage::

    nice -n 10 .venv/bin/python bench/accuracy.py                      # markdown to stdout
    nice -n 10 .venv/bin/python bench/accuracy.py --json accuracy.json  # and machine-readable
    nice -n 10 .venv/bin/python bench/accuracy.py --jobs 1              # folds in one process
    nice -n 10 .venv/bin/python bench/accuracy.py --engines vllm,sglang # their sources only
    nice -n 10 .venv/bin/python bench/accuracy.py --source nim/benchmarking  # row by row

Headline, LEAVE-ONE-SOURCE-OUT (LOSO): for every source document with measured rows, the
constants are refitted on all *other* sources (``bench/calibrate.py``: stage A when the held-out
document has TensorRT-LLM/LMDeploy rows, the held-out rows' engine builds in stage B otherwise)
and the held-out rows are predicted with them. No source is ever on both sides of a fold
(``_calibration_data.loso_splits``). A source whose engine build has no other source is
predicted with the engine's pooled fit, or an engine without any other data with the
TensorRT-LLM 1.0 constants: exactly what a new benchmark of that build would get.

Also printed:

* BASELINE: the model before per-engine profiles (``_baseline_calibration``: the 2026-11-29
  constants, vLLM/SGLang/TGI as TensorRT-LLM x 0.9/0.95/0.8), on the same rows, no refit;
* the same tables for rows whose request lengths follow a distribution of known mean
  (ShareGPT): scored, never fitted, not in the headline;
* throughput whose source does not say whether tokens/s counts output tokens or all tokens
  (AMD's MI300X vLLM results): scored both ways with the committed constants, never fitted,
  the only check of the CDNA 3 judgement (hopper-hbm efficiencies x 0.85, ``hardware``);
* residuals by load kind, client count, the model's running batch and source, for the
  physics work.

Per engine x metric (peak throughput, throughput at a load, TTFT, TPOT, ITL, E2E) x GPU: rows,
median absolute percentage error (APE = |predicted / measured - 1|), share within 25 %,
median signed bias (median of predicted / measured - 1; + means over-predicted). A row the
model cannot run counts as 100 % error. Targets: LOSO median APE <= 15 % for throughput and
<= 25 % for TTFT and TPOT for each of trtllm, vllm and sglang; no GPU with >= 20 rows worse
than 30 % on throughput.
"""

from __future__ import annotations

import os

# One BLAS/LAPACK thread before numpy loads, as bench/calibrate.py fits (its "Reproducibility").
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
from collections.abc import Callable, Iterable, Mapping, Sequence  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from dataclasses import dataclass, field, replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, cast  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._baseline_calibration import BASELINE_FITTED, BASELINE_PROFILES  # noqa: E402
from bench._calibration_data import (  # noqa: E402
    LoadReport,
    Row,
    Split,
    load_gpus,
    load_rows,
    load_undefined_throughput,
    loso_splits,
)
from bench._predict import apply_flags, predict_rows, predict_run  # noqa: E402
from bench.calibrate import (  # noqa: E402
    SERVING_ENGINES,
    STAGE_A_ENGINES,
    fit_stage_a,
    fit_stage_b,
    stage_b_keys,
)
from service.domain.catalog import GpuSpec  # noqa: E402
from service.domain.perfmodel.calibration import (  # noqa: E402
    BENCH_PROFILES,
    Calibration,
    EngineProfile,
    calibration_from_mapping,
)
from service.domain.perfmodel.constants import FITTED  # noqa: E402
from service.domain.perfmodel.engine_limits import card_profile  # noqa: E402
from service.domain.perfmodel.hardware import accuracy_family  # noqa: E402
from service.domain.perfmodel.values import Deployment  # noqa: E402

METRICS = ("peak_throughput", "throughput_at_load", "ttft", "tpot", "itl", "e2e")
METRIC_LABEL = {
    "peak_throughput": "peak throughput",
    "throughput_at_load": "throughput at load",
    "ttft": "TTFT",
    "tpot": "TPOT",
    "itl": "ITL",
    "e2e": "E2E",
}
TARGET_ENGINES = ("trtllm", "vllm", "sglang")
TARGETS = {"peak_throughput": 0.15, "throughput_at_load": 0.15, "ttft": 0.25, "tpot": 0.25}
# Why a target is missed, per (engine, metric), as diagnosed from the residuals by source
# (``residual_lines``): the reason, and the keys of the causes it shares with other misses
# (``SHARED_CAUSES``, stated once). ``missed_targets`` attaches them to every target the LOSO
# validation misses; bench/calibrate.py stores them in ``FIT_REPORT["target_notes"]`` and
# ``FIT_REPORT["shared_causes"]``, and ``make readme`` prints them under the accuracy tables. A
# missed target without an entry says so.
SHARED_CAUSES: dict[str, dict[str, str]] = {
    "short_bursts": {
        "title": "GPUStack's short bursts",
        "text": (
            "GPUStack's bursts of 1,000 requests of 128 prompt / 4 output tokens are bound by "
            "the server's per-request path (chat template, tokenising, then detokenising and "
            "streaming each request's chunks on the frontend's event loop; the runs use "
            "/v1/chat/completions), not by the GPUs: their timings imply 3-22 ms per request "
            "depending on the model (gpt-oss 3-5 ms, DeepSeek-V3 and GLM 12-22 ms). A "
            "per-build frontend time fitted on the other models' bursts did not carry over to "
            "the held-out model (the LOSO error rose), so these runs are scored, not fitted "
            "(MIN_FIT_OUTPUT)."
        ),
    },
    "dstack_deepseek": {
        "title": "dstack's DeepSeek-R1 runs",
        "text": (
            "dstack's DeepSeek-R1 closed loops (8x H200 and 8x MI300X, 3,200-token prompts, "
            "4-128 clients, early 2025: vLLM 0.7.3/0.7.4 and TensorRT-LLM 0.17.post1 "
            "development snapshots, scored, not fitted, and SGLang 0.4.2/0.4.3) are far slower "
            "than the model predicts from the other sources, whose DeepSeek runs are GPUStack's "
            "bursts with mid/late-2025 builds (vLLM 0.11-0.13, SGLang 0.5). With SGLang and "
            "vLLM 0.7 (V0), prefill-first schedulers, the mean TTFT grows in proportion to the "
            "clients, as waves that re-form every cycle make it in the model: held out, the "
            "predicted mean TTFT is a steady fraction of the measured one (0.27-0.28x with "
            "SGLang on MI300X from 4 to 64 clients and 0.21-0.27x at 128, 0.30-0.41x with vLLM on "
            "MI300X, 0.25-0.35x with vLLM on H200 from 4 to 64 clients, 0.11-0.16x with SGLang on "
            "H200 from 8 to 128), so what is left is each prompt's prefill, 2.4-9x slower than "
            "predicted. Whether the gap is those early builds or the model's MoE at a few dozen "
            "sequences, no source measuring both on one machine tells."
        ),
    },
    "vultr_nemotron": {
        "title": "Vultr's Nemotron 3 Nano runs",
        "text": (
            'Vultr\'s vLLM 0.16 runs of "Nemotron Nano 30B" in FP8 on 2x B200 (2,048 prompt / '
            "512 output tokens, 1-1,024 clients, 400 prompts: 512 and 1,024 clients are "
            "bursts of 400) are the only measurements of a hybrid Mamba-2 model, scored, not "
            "fitted: its Mamba-2 layers are timed from their weights, state and scan FLOPs, "
            "with no constant of their own. Their TPOT is predicted at 0.97-1.11x from 16 "
            "clients up, except with 32, whose run decodes slower than the one with 64 (0.76x), "
            "and at 0.65-0.83x with 1-8 clients; their prefill is not: the first tokens take "
            "120-175 ms beyond the model's with 8-32 clients, which no physics of the scan "
            "explains (its FLOPs are about 1% of the projections'); whether it is the build's "
            "hybrid prefill path or the benchmark, no second source tells."
        ),
    },
}
_BURSTS = ("short_bursts",)
_DSTACK = ("dstack_deepseek",)
_HYBRID = ("vultr_nemotron",)
MISS_REASONS: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("trtllm", "ttft"): (
        "Three online TensorRT-LLM sources. 38 of the rows are v0.14's points behind Triton, one "
        "source (held out with that release's offline rows, which share its document); held "
        "out, the request handling of Triton's ensemble (Python pre- and post-processing, about "
        "7 ms per first token) is learnt from no other source and TTFT is under-predicted by "
        "about that. 8 are NIM 1.8 closed loops, held out 0.88-1.34x the measured TTFT "
        "(median 17% off): NIM then has no online data of its own. 18 are dstack's "
        "trtllm-serve runs of DeepSeek-R1 on 8x H200 (see below), whose first tokens come "
        "3-133x later than predicted (decode 1.7-7.8x slower).",
        _DSTACK,
    ),
    ("trtllm", "throughput_at_load"): (
        "22 of the rows are v0.14's points behind Triton under request rates, read as runs of "
        "their 500 requests (the batch fills at the start and drains at the end); held out, "
        "their median error is 7%: the 467/256-token runs within 8%, the 202/214-token runs "
        "6-64% above the measured rate, more the higher the rate (the source gives these "
        "lengths as means; where outputs vary, the longest requests decode alone at the end "
        "of the run). 8 are NIM 1.8 closed loops (one source), predicted 17-19% low: held "
        "out, NIM has no other online data, so its throughput under load comes from builds "
        "measured only offline. The other 9 are dstack's trtllm-serve DeepSeek-R1 runs (see "
        "below), predicted at 2.3-7.5x the measured rate.",
        _DSTACK,
    ),
    ("vllm", "peak_throughput"): (
        "Five groups dominate. GPUStack's short bursts (see below) are 20 of the rows, "
        "predicted at 0.5-4.8x the measured rate. vLLM 0.13 on DeepSeek-V3.2 (its only source; "
        "new sparse-attention kernels) runs 1.2-2.3x slower than predicted from other builds, "
        "and vLLM 0.11's bursts of DeepSeek-R1 on H200 and GLM-4.5-Air on A100 1.1-1.6x "
        "slower. vLLM's fused-MoE efficiency is one per build (fitted at about half the "
        "reference's) and shared by every MoE model: gpt-oss-20b, whose experts are 4-bit, runs "
        "1.3-1.6x faster than predicted on A100 with 2,000-4,000-token prompts (1.4x slower "
        "with 32,000). Dense Qwen3 runs 1.2-1.4x faster than predicted on A100 (Qwen3-32B) and "
        "1.1-1.4x slower on H100 (Qwen3-14B and -32B). dstack's 8x H100 batches of Meta's "
        "Llama-3.1-405B-FP8 "
        "checkpoint (attention and the outer layers in BF16, which the model counts; a vLLM "
        "0.6.3 development build, scored, not fitted; 17 rows) are predicted within 12% up to "
        "32 prompts of 128 tokens or 16 of 2,048; larger batches and every 32,784-token batch "
        "run 1.3-2.1x slower than predicted, a gap no other source on this build can explain.",
        _BURSTS,
    ),
    ("vllm", "throughput_at_load"): (
        "18 of the 30 rows are dstack's DeepSeek-R1 runs with vLLM (see below), predicted at "
        "2.0x (MI300X) and 2.7x (H200) the measured rate (medians). 7 are Vultr's closed loops "
        "of Nemotron 3 Nano (see below), predicted at 1.03-1.40x the measured rate from 8 to "
        "256 clients and at 1.9x with one client, whose first tokens take 362 ms.",
        _DSTACK + _HYBRID,
    ),
    ("vllm", "ttft"): (
        "In GPUStack's short bursts (see below) the first tokens wait for the frontend to take "
        "in the burst (mean TTFT is up to 90% of the run), up to 8x longer than predicted. The "
        "36 rows of dstack's DeepSeek-R1 runs (see below) wait 2.4-34x longer than predicted "
        "(decode 1.1-5.7x slower). In Vultr's Nemotron 3 Nano runs (see below) the first "
        "tokens come 4.7-7.4x later than predicted from 8 to 256 clients (152-1,254 ms "
        "measured), 1.7x in the bursts of 400 and 38x with one client (362 ms, more than with "
        "8).",
        _BURSTS + _DSTACK + _HYBRID,
    ),
    ("vllm", "tpot"): (
        "In GPUStack's short bursts (see below) the three inter-token gaps depend on how the "
        "frontend interleaves streaming with taking in new requests, which the iteration model "
        "does not describe.",
        _BURSTS,
    ),
    ("sglang", "peak_throughput"): (
        "GPUStack's short bursts (see below) weigh most; each other SGLang source is one "
        "model's document, so each fold predicts a model from the others.",
        _BURSTS,
    ),
    ("sglang", "throughput_at_load"): (
        "All 18 rows are dstack's DeepSeek-R1 runs with SGLang (see below), predicted at 2.3x "
        "(MI300X) and 2.6x (H200) the measured rate (medians).",
        _DSTACK,
    ),
    ("sglang", "ttft"): (
        "In GPUStack's short bursts (see below) the first tokens wait for SGLang's tokenizer "
        "manager to take in the burst, longer than predicted. The 36 rows of dstack's "
        "DeepSeek-R1 runs (see below) wait 4.2x longer than predicted (median).",
        _BURSTS + _DSTACK,
    ),
    ("sglang", "tpot"): (
        "In GPUStack's short bursts (see below) SGLang reports 0.7-1.4 s between the 3 output "
        "tokens, 2.5-4x the model's decode iterations (10 of the rows). With 32,000-token "
        "prompts in 100-request bursts SGLang's TPOT is 1.3-2.5x below the model's, which "
        "charges each decode iteration a share of the other requests' prefill chunks (8 rows). "
        "dstack's DeepSeek-R1 runs (36 rows, see below) decode 2.1x slower than predicted "
        "(median).",
        _BURSTS + _DSTACK,
    ),
}


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stats:
    """Error of a set of predictions: ``n`` rows, median APE, share within 25 %, median bias
    (fractions)."""

    n: int
    median_ape: float
    within_25pct: float
    bias: float

    def as_dict(self) -> dict[str, float]:
        """Plain form (JSON, constants.py)."""
        return {
            "n": self.n,
            "median_ape": round(self.median_ape, 4),
            "within_25pct": round(self.within_25pct, 4),
            "bias": round(self.bias, 4),
        }


def stats(pairs: Iterable[tuple[float, float]]) -> Stats:
    """:class:`Stats` of ``(predicted, measured)`` pairs (unpredictable rows: ratio 0)."""
    ratios = [p / m if math.isfinite(p) and p > 0 else 0.0 for p, m in pairs]
    if not ratios:
        return Stats(0, math.nan, math.nan, math.nan)
    apes = [abs(r - 1.0) for r in ratios]
    return Stats(
        len(ratios),
        statistics.median(apes),
        sum(1 for a in apes if a <= 0.25) / len(apes),
        statistics.median(ratios) - 1.0,
    )


def family(row: Row, gpus: Mapping[str, GpuSpec]) -> str:
    """GPU family of a row (its card's accuracy family: see ``hardware.accuracy_family``)."""
    return accuracy_family(gpus[row.gpu_id])


def build_of_profile(row: Row) -> str:
    """Fit key a row validates (NIM is its own build: a TensorRT-LLM release inside NVIDIA's
    container, with its own server)."""
    return row.build


# ---------------------------------------------------------------------------------------------
# LOSO
# ---------------------------------------------------------------------------------------------


@dataclass
class Validation:
    """LOSO predictions by row index, and their summaries."""

    preds: dict[int, float]
    by_build: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    totals: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    by_gpu: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    hybrid: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    folds: list[str] = field(default_factory=list)


_WORKER: dict[str, Any] = {}


def _init_worker(stage_a: dict[str, Any]) -> None:
    gpus = load_gpus()
    rows, _ = load_rows(gpus)
    _WORKER.update(gpus=gpus, rows=rows, stage_a=stage_a)


def fold_predictions(
    split: Split, rows: Sequence[Row], gpus: Mapping[str, GpuSpec], stage_a: Mapping[str, Any]
) -> dict[int, float]:
    """Fit on ``split.train`` (reusing ``stage_a`` when the held-out source has no stage-A
    rows, whose fit it then could not have seen) and predict ``split.test``."""
    by_index = {r.index: r for r in rows}
    train = [by_index[i] for i in split.train]
    test = [by_index[i] for i in split.test]
    if any(r.engine in STAGE_A_ENGINES for r in test):
        base = fit_stage_a(train, gpus)
    else:
        base = dict(stage_a)
    wanted = {r.build for r in test} | {r.engine for r in test}
    keys = [k for k in stage_b_keys(train) if k in wanted]
    mapping = fit_stage_b(base, train, gpus, only=keys)
    cal = calibration_from_mapping(mapping)
    return dict(zip(split.test, predict_rows(test, gpus, cal), strict=True))


def _worker_fold(split: Split) -> dict[int, float]:
    return fold_predictions(split, _WORKER["rows"], _WORKER["gpus"], _WORKER["stage_a"])


def loso_validation(
    rows: Sequence[Row],
    gpus: Mapping[str, GpuSpec],
    jobs: int = 2,
    stage_a: Mapping[str, Any] | None = None,
    sources: frozenset[str] | None = None,
) -> Validation:
    """Leave-one-source-out predictions of every row, and the per-build / per-engine errors on
    fixed-length rows. ``stage_a``: the stage-A fit on all of ``rows`` when already computed
    (serving folds reuse it: it holds no serving rows). ``sources``: hold out only these
    sources (each fold is the same as in a whole run; the summaries cover their rows)."""
    stage_a = dict(stage_a) if stage_a is not None else fit_stage_a(rows, gpus)
    scored = rows if sources is None else [r for r in rows if r.source in sources]
    splits = list(loso_splits(rows, scored))
    # longest folds (stage-A refits) first so the pool stays busy
    splits.sort(
        key=lambda s: (not any(rows[i].engine in STAGE_A_ENGINES for i in s.test), s.source)
    )
    preds: dict[int, float] = {}
    if jobs > 1:
        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(stage_a,)) as ex:
            for part in ex.map(_worker_fold, splits):
                preds.update(part)
    else:
        for sp in splits:
            preds.update(fold_predictions(sp, rows, gpus, stage_a))
    val = Validation(preds=preds, folds=[s.source for s in splits])
    fixed = [r for r in scored if r.lengths == "fixed"]
    cells: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for r in fixed:
        key = (build_of_profile(r), family(r, gpus), r.metric_group)
        cells.setdefault(key, []).append((preds[r.index], r.value))
    for (build, fam, metric), pairs in sorted(cells.items()):
        val.by_build.setdefault(build, {}).setdefault(fam, {})[metric] = stats(pairs).as_dict()
    val.totals = {
        eng: {m: s.as_dict() for m, s in per.items()} for eng, per in totals(fixed, preds).items()
    }
    per_gpu: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for r in fixed:
        per_gpu.setdefault((r.engine, r.metric_group, r.gpu_id), []).append(
            (preds[r.index], r.value)
        )
    for (eng, metric, gpu), pairs in sorted(per_gpu.items()):
        val.by_gpu.setdefault(eng, {}).setdefault(metric, {})[gpu] = stats(pairs).as_dict()
    # hybrid Mamba-2 models: their layers have no fitted constant, so their rows are their check
    hybrid = [r for r in fixed if r.model.ssm_layers]
    val.hybrid = {
        eng: {m: s.as_dict() for m, s in per.items()} for eng, per in totals(hybrid, preds).items()
    }
    return val


def totals(rows: Sequence[Row], preds: Mapping[int, float]) -> dict[str, dict[str, Stats]]:
    """Per engine and metric group."""
    out: dict[str, dict[str, Stats]] = {}
    for eng in sorted({r.engine for r in rows}):
        for m in METRICS:
            sel = [
                (preds[r.index], r.value) for r in rows if r.engine == eng and r.metric_group == m
            ]
            if sel:
                out.setdefault(eng, {})[m] = stats(sel)
    return out


# ---------------------------------------------------------------------------------------------
# baseline (no refit)
# ---------------------------------------------------------------------------------------------


def _baseline_profile(row: Row, dep: Deployment, cal: Calibration) -> EngineProfile:
    """The profile the product used before per-engine fits (with today's card-derived engine
    defaults, and the row's explicit serving flags)."""
    if row.engine in ("trtllm", "lmdeploy") and (
        row.load == "peak" or row.build.startswith(("lmdeploy", "nim"))
    ):
        key = row.build if row.build in BENCH_PROFILES else "nim-1.8"
        prof = BENCH_PROFILES[key]
        if prof.constants not in cal.engine_by_name:  # (NIM ran on TensorRT-LLM 1.0's then)
            prof = replace(prof, constants="trtllm-1.0")
        return prof
    base = BASELINE_PROFILES[row.engine if row.engine in BASELINE_PROFILES else "trtllm"]
    return apply_flags(card_profile(row.model, dep, base, cal), row)


def baseline_predictions(rows: Sequence[Row], gpus: Mapping[str, GpuSpec]) -> dict[int, float]:
    """The model before per-engine profiles, on every row (no refit)."""
    cal = calibration_from_mapping(BASELINE_FITTED)
    return dict(
        zip((r.index for r in rows), predict_rows(rows, gpus, cal, _baseline_profile), strict=True)
    )


def refit_predictions(
    rows: Sequence[Row], gpus: Mapping[str, GpuSpec], mapping: Mapping[str, Any]
) -> dict[int, float]:
    """In-sample predictions of a full fit (for comparison with LOSO)."""
    cal = calibration_from_mapping(mapping)
    return dict(zip((r.index for r in rows), predict_rows(rows, gpus, cal), strict=True))


# ---------------------------------------------------------------------------------------------
# reports
# ---------------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.1%}"


def _sign(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:+.1%}"


def table(
    rows: Sequence[Row],
    preds: Mapping[int, float],
    gpus: Mapping[str, GpuSpec],
    title: str,
    per_gpu: bool = True,
) -> list[str]:
    """Markdown table per engine x metric (x GPU), totals first."""
    out = [
        f"### {title}",
        "",
        "| engine | metric | GPU | rows | median APE | within 25% | median bias |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for eng in sorted({r.engine for r in rows}):
        for m in METRICS:
            sel = [r for r in rows if r.engine == eng and r.metric_group == m]
            if not sel:
                continue
            groups: list[tuple[str, list[Row]]] = [("**all**", sel)]
            if per_gpu:
                groups += [
                    (g, [r for r in sel if r.gpu_id == g]) for g in sorted({r.gpu_id for r in sel})
                ]
            for label, part in groups:
                s = stats((preds[r.index], r.value) for r in part)
                out.append(
                    f"| {eng} | {METRIC_LABEL[m]} | {label} | {s.n} | {_pct(s.median_ape)} | "
                    f"{_pct(s.within_25pct)} | {_sign(s.bias)} |"
                )
    out.append("")
    return out


def target_lines(rows: Sequence[Row], preds: Mapping[int, float]) -> list[str]:
    """The team's targets, met or missed, on fixed-length rows."""
    out = []
    for eng in TARGET_ENGINES:
        for m, limit in TARGETS.items():
            sel = [
                (preds[r.index], r.value) for r in rows if r.engine == eng and r.metric_group == m
            ]
            if not sel:
                out.append(f"- {eng} {METRIC_LABEL[m]}: no rows (target <= {limit:.0%}): NOT MET")
                continue
            s = stats(sel)
            ok = "met" if s.median_ape <= limit else "NOT MET"
            out.append(
                f"- {eng} {METRIC_LABEL[m]}: median APE {_pct(s.median_ape)} over {s.n} rows "
                f"(target <= {limit:.0%}): {ok}"
            )
    thr = [r for r in rows if r.metric_group in ("peak_throughput", "throughput_at_load")]
    for g in sorted({r.gpu_id for r in thr}):
        sel = [(preds[r.index], r.value) for r in thr if r.gpu_id == g]
        if len(sel) >= 20:
            s = stats(sel)
            ok = "met" if s.median_ape <= 0.30 else "NOT MET"
            out.append(
                f"- throughput on {g}: median APE {_pct(s.median_ape)} over {s.n} rows "
                f"(target <= 30%): {ok}"
            )
    return out


def missed_targets(
    totals_by_engine: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> list[dict[str, object]]:
    """Every LOSO target missed (``TARGETS`` for ``TARGET_ENGINES``; ``totals_by_engine`` as in
    :attr:`Validation.totals`), with its error, the recorded reason and the keys of the causes
    it shares with other misses (``MISS_REASONS``)."""
    out: list[dict[str, object]] = []
    for eng in TARGET_ENGINES:
        for m, limit in TARGETS.items():
            cell = totals_by_engine.get(eng, {}).get(m)
            if cell is None or float(cell["median_ape"]) <= limit:
                continue
            reason, causes = MISS_REASONS.get((eng, m), ("no diagnosis recorded", ()))
            out.append(
                {
                    "engine": eng,
                    "metric": m,
                    "median_ape": float(cell["median_ape"]),
                    "target": limit,
                    "reason": reason,
                    "causes": list(causes),
                }
            )
    return out


def shared_causes(notes: Sequence[Mapping[str, object]]) -> dict[str, dict[str, str]]:
    """The ``SHARED_CAUSES`` the ``notes`` of :func:`missed_targets` refer to, each once."""
    keys = {str(k) for n in notes for k in cast("Sequence[object]", n.get("causes", ()))}
    return {k: dict(SHARED_CAUSES[k]) for k in sorted(keys)}


def residual_lines(
    rows: Sequence[Row], preds: Mapping[int, float], by: Callable[[Row], str], title: str
) -> list[str]:
    """Bias and error of LOSO predictions grouped by ``by`` (per engine and metric)."""
    out = [
        f"### {title}",
        "",
        "| engine | metric | group | rows | median APE | median bias |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.engine, r.metric_group, by(r)), []).append(r)
    for (eng, m, g), part in sorted(groups.items()):
        s = stats((preds[r.index], r.value) for r in part)
        out.append(
            f"| {eng} | {METRIC_LABEL[m]} | {g} | {s.n} | {_pct(s.median_ape)} | {_sign(s.bias)} |"
        )
    out.append("")
    return out


def _batch_class(r: Row) -> str:
    if r.load in ("concurrency", "static", "burst"):
        n = r.load_n
        size = "1" if n <= 1 else ("2-16" if n <= 16 else ("17-128" if n <= 128 else ">128"))
        return f"{r.load} N={size}, TP{r.tp}"
    return f"{r.load}, TP{r.tp}"


RUNNING_BATCH_CLASSES = ((1.0, "1"), (16.0, "2-16"), (128.0, "17-128"), (512.0, "129-512"))


def running_batch_class(gpus: Mapping[str, GpuSpec]) -> Callable[[Row], str]:
    """Groups rows by the running batch the model puts on one replica for the row's run (the
    committed constants; concurrency, KV-cache and batch caps as the engine sets them): where
    the model holds and where it does not, whatever the client count of the benchmark."""
    cal = calibration_from_mapping(FITTED)
    memo: dict[tuple[object, ...], float] = {}

    def by(r: Row) -> str:
        if r.run_key not in memo:
            try:
                memo[r.run_key] = predict_run(r, gpus, cal).batch
            except (ValueError, ZeroDivisionError, OverflowError):
                memo[r.run_key] = math.nan
        b = memo[r.run_key]
        if not (math.isfinite(b) and b > 0.0):
            return "running batch: not predicted"
        label = next((name for top, name in RUNNING_BATCH_CLASSES if b <= top), "> 512")
        return f"running batch {label}"

    return by


def _source_label(r: Row) -> str:
    tail = r.source.split("@", 1)[-1]
    parts = tail.replace(" ", "/").split("/")
    return "/".join(p for p in parts[-3:] if p)[:70]


def undefined_tokens_lines(rows: Sequence[Row], gpus: Mapping[str, GpuSpec]) -> list[str]:
    """Throughput rows whose tokens/s the source leaves undefined (``Row.value`` as published),
    predicted as output tokens/s with the committed constants (no fit ever sees these rows) and
    scored two ways: the value read as output tokens/s, and read as all tokens/s (its output
    share ``output / (prompt + output)`` compared). Per engine build x GPU, then all rows."""
    if not rows:
        return []
    preds = refit_predictions(rows, gpus, FITTED)
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.build, r.gpu_id), []).append(r)
    head = (
        "| build | GPU | rows | sources | as output tokens: median APE | bias "
        "| as all tokens: median APE | bias |"
    )
    out = [head, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for (build, gpu), rs in [*sorted(groups.items()), (("**all**", "**all**"), list(rows))]:
        as_output = stats((preds[r.index], r.value) for r in rs)
        as_all = stats(
            (preds[r.index], r.value * r.output_len / (r.input_len + r.output_len)) for r in rs
        )
        out.append(
            f"| {build} | {gpu} | {as_output.n} | {len({r.source for r in rs})} "
            f"| {as_output.median_ape:.1%} | {as_output.bias:+.1%} "
            f"| {as_all.median_ape:.1%} | {as_all.bias:+.1%} |"
        )
    return [*out, ""]


def skip_lines(report: LoadReport) -> list[str]:
    """What the loader read and why rows were left out."""
    out = [f"- read: {', '.join(f'{k} {v}' for k, v in sorted(report.read.items()))}"]
    out += [f"- skipped {v}: {k}" for k, v in sorted(report.skipped.items(), key=lambda kv: -kv[1])]
    if report.unknown_models:
        out.append(
            "- unknown models: "
            + ", ".join(f"{k} ({v})" for k, v in sorted(report.unknown_models.items()))
        )
    if report.unknown_gpus:
        out.append(
            "- GPUs not in the catalog: "
            + ", ".join(f"{k} ({v})" for k, v in sorted(report.unknown_gpus.items()))
        )
    return out


def summary_lines(rows: Sequence[Row], val: Validation) -> list[str]:
    """Short plain-text summary (rows used, LOSO totals per engine x metric) for docstrings,
    wrapped at 96 columns."""
    fixed = [r for r in rows if r.lengths == "fixed"]
    per_engine = ", ".join(
        f"{e} {sum(r.engine == e for r in fixed)}" for e in sorted({r.engine for r in fixed})
    )
    out = textwrap.wrap(
        f"* {len(fixed)} fixed-length rows from {len({r.source for r in fixed})} source "
        f"documents ({per_engine}).",
        96,
        subsequent_indent="  ",
    )
    out.append("* Leave-one-source-out median APE / within 25 % (rows):")
    for eng, per in val.totals.items():
        parts = [
            f"{METRIC_LABEL[m]} {per[m]['median_ape']:.1%} / {per[m]['within_25pct']:.0%} "
            f"({int(per[m]['n'])})"
            for m in METRICS
            if m in per
        ]
        out += textwrap.wrap(
            f"{eng}: " + "; ".join(parts), 96, initial_indent="  ", subsequent_indent="    "
        )
    return out


def _stats_json(rows: Sequence[Row], preds: Mapping[int, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in rows:
        out.setdefault(r.engine, {}).setdefault(r.metric_group, {}).setdefault(r.gpu_id, []).append(
            (preds[r.index], r.value)
        )
    return {
        eng: {
            m: {
                "all": stats([p for v in per_gpu.values() for p in v]).as_dict(),
                "by_gpu": {g: stats(v).as_dict() for g, v in sorted(per_gpu.items())},
            }
            for m, per_gpu in sorted(per_m.items())
        }
        for eng, per_m in sorted(out.items())
    }


def _finite(x: float) -> float | None:
    return round(x, 6) if math.isfinite(x) else None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--json", type=Path, help="also write the results as JSON to this path")
    ap.add_argument("--jobs", type=int, default=2, help="processes for the LOSO folds")
    ap.add_argument(
        "--engines",
        help="comma-separated serving engines (vllm, sglang, tgi): hold out only the sources "
        "with their rows, stage A from the committed constants (what a whole run refits only "
        "for a source with TensorRT-LLM or LMDeploy rows, and does here too), and print their "
        "targets, totals and residuals by source: minutes instead of a quarter of an hour, for "
        "work on the serving physics",
    )
    ap.add_argument(
        "--source",
        action="append",
        metavar="TEXT",
        help="hold out only the sources whose name contains TEXT (repeatable; each source its "
        "own fold, exactly as in a whole run) and print every held-out row: measured, "
        "predicted, ratio; for reading one source's misses row by row",
    )
    args = ap.parse_args(argv)
    if args.engines and args.source:
        ap.error("--engines and --source hold out different sets; give one")
    gpus = load_gpus()
    rows, report = load_rows(gpus)
    if args.engines:
        return quick_serving_report(rows, gpus, frozenset(args.engines.split(",")), args.jobs)
    if args.source:
        return source_rows_report(rows, gpus, tuple(args.source), args.jobs)
    val = loso_validation(rows, gpus, jobs=args.jobs)
    base = baseline_predictions(rows, gpus)
    fixed = [r for r in rows if r.lengths == "fixed"]
    dist = [r for r in rows if r.lengths == "mean"]
    out = ["# Performance-model accuracy (leave-one-source-out)", ""]
    out += ["## Targets (LOSO, fixed-length rows)", ""]
    out += target_lines(fixed, val.preds)
    out += ["", "## Same targets, baseline (before per-engine profiles, no refit)", ""]
    out += target_lines(fixed, base)
    out += ["", "## Totals per engine x metric", ""]
    out += table(fixed, val.preds, gpus, "LOSO, refitted per engine build", per_gpu=False)
    out += table(fixed, base, gpus, "Baseline, no refit", per_gpu=False)
    out += ["## Per GPU", ""]
    out += table(fixed, val.preds, gpus, f"LOSO ({len(fixed)} fixed-length rows)")
    out += table(fixed, base, gpus, "Baseline, no refit")
    out += ["## Request lengths from a distribution (ShareGPT means): scored, never fitted", ""]
    out += table(dist, val.preds, gpus, f"LOSO ({len(dist)} rows)", per_gpu=False)
    out += table(dist, base, gpus, "Baseline, no refit", per_gpu=False)
    out += [
        "## Throughput with tokens/s undefined by its source: scored both ways, never fitted",
        "",
    ]
    out += undefined_tokens_lines(load_undefined_throughput(gpus), gpus)
    out += ["## Residuals (LOSO, fixed-length rows)", ""]
    out += residual_lines(fixed, val.preds, lambda r: r.load, "By load kind")
    out += residual_lines(fixed, val.preds, _batch_class, "By load size and tensor parallelism")
    out += residual_lines(
        fixed, val.preds, running_batch_class(gpus), "By the model's running batch per replica"
    )
    out += residual_lines(fixed, val.preds, _source_label, "By source")
    out += ["## Rows read and left out", ""]
    out += skip_lines(report)
    print("\n".join(out))
    if args.json:
        payload = {
            "method": "leave-one-source-out; see bench/accuracy.py docstring",
            "rows": {"fixed": len(fixed), "distribution": len(dist)},
            "folds": val.folds,
            "loso": _stats_json(fixed, val.preds),
            "baseline": _stats_json(fixed, base),
            "loso_distribution": _stats_json(dist, val.preds),
            "baseline_distribution": _stats_json(dist, base),
            "by_build": val.by_build,
            "targets_loso": target_lines(fixed, val.preds),
            "targets_baseline": target_lines(fixed, base),
            "load_report": report.as_dict(),
            "predictions": [
                {
                    "dataset": r.dataset, "line": r.line, "source": r.source, "engine": r.engine,
                    "build": r.build, "gpu": r.gpu_id, "model": r.model.id, "tp": r.tp,
                    "precision": r.precision, "kv": r.kv_precision, "input": r.input_len,
                    "output": r.output_len, "lengths": r.lengths, "load": r.load,
                    "load_n": r.load_n, "metric": r.metric_group, "stat": r.stat,
                    "flags": list(r.flags), "measured": r.value,
                    "loso": _finite(val.preds[r.index]), "baseline": _finite(base[r.index]),
                }
                for r in rows
            ],
        }  # fmt: skip
        args.json.write_text(json.dumps(payload, indent=1, sort_keys=True), encoding="utf-8")
    return 0


def committed_stage_a() -> dict[str, Any]:
    """The committed constants without the serving engines' fits: the stage-A fit on every
    row, as a whole run computes it (rounded as written to constants.py)."""
    mapping: dict[str, Any] = dict(FITTED)
    engines: dict[str, Any] = mapping["engines"]
    mapping["engines"] = {
        k: v for k, v in engines.items() if k.partition("-")[0] not in SERVING_ENGINES
    }
    return mapping


def quick_serving_report(
    rows: Sequence[Row], gpus: Mapping[str, GpuSpec], engines: frozenset[str], jobs: int
) -> int:
    """``--engines``: LOSO of the sources with rows of ``engines`` only, printed."""
    unknown = sorted(engines - set(SERVING_ENGINES))
    if unknown:
        print(f"--engines: not a serving engine: {', '.join(unknown)}", file=sys.stderr)
        return 2
    sources = frozenset(r.source for r in rows if r.engine in engines)
    val = loso_validation(rows, gpus, jobs, committed_stage_a(), sources)
    fixed = [r for r in rows if r.lengths == "fixed" and r.engine in engines]
    out = [f"# LOSO of {', '.join(sorted(engines))} ({len(sources)} sources held out)", ""]
    # the engines' own targets (the per-GPU throughput target counts every engine's rows)
    mine = tuple(f"- {e} " for e in sorted(engines))
    out += [line for line in target_lines(fixed, val.preds) if line.startswith(mine)]
    out += ["", *table(fixed, val.preds, gpus, "LOSO, refitted per engine build", per_gpu=False)]
    out += residual_lines(fixed, val.preds, lambda r: r.load, "By load kind")
    out += residual_lines(
        fixed, val.preds, running_batch_class(gpus), "By the model's running batch per replica"
    )
    out += residual_lines(fixed, val.preds, _source_label, "By source")
    print("\n".join(out))
    return 0


def matching_sources(rows: Sequence[Row], texts: Sequence[str]) -> frozenset[str]:
    """Sources whose name contains any of ``texts`` (case-insensitive)."""
    wanted = [t.lower() for t in texts]
    return frozenset(r.source for r in rows if any(t in r.source.lower() for t in wanted))


def held_out_row_lines(rows: Sequence[Row], preds: Mapping[int, float]) -> list[str]:
    """One table line per row of ``rows``: what it measured, its held-out prediction and their
    ratio (``-`` where the model cannot run it), in the source's order."""
    out = [
        "| source | engine build | GPU | model | TP | in / out | load | metric | measured "
        "| predicted | predicted / measured |",
        "| --- | --- | --- | --- | ---: | --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        p = preds.get(r.index, math.nan)
        ok = math.isfinite(p) and p > 0
        predicted, ratio = (f"{p:.4g}", f"{p / r.value:.3f}") if ok else ("-", "-")
        out.append(
            f"| {_source_label(r)} | {r.build} | {r.gpu_id} | {r.model.id} | {r.tp} | "
            f"{r.input_len} / {r.output_len} | {r.load} {r.load_n:g} | {r.metric_group} "
            f"{r.stat} | {r.value:.4g} | {predicted} | {ratio} |"
        )
    return out


def source_rows_report(
    rows: Sequence[Row], gpus: Mapping[str, GpuSpec], texts: Sequence[str], jobs: int
) -> int:
    """``--source``: LOSO of the matching sources only, every held-out row printed."""
    sources = matching_sources(rows, texts)
    if not sources:
        print(f"--source: no source name contains {' or '.join(texts)}", file=sys.stderr)
        return 2
    val = loso_validation(rows, gpus, jobs, committed_stage_a(), sources)
    mine = [r for r in rows if r.source in sources]
    fixed = [r for r in mine if r.lengths == "fixed"]
    out = [f"# LOSO of {len(sources)} source(s) matching {' or '.join(texts)}", ""]
    out += [f"- {s}" for s in sorted(sources)]
    out += ["", *table(fixed, val.preds, gpus, "Held out, fixed-length rows", per_gpu=True)]
    out += ["### Every held-out row", "", *held_out_row_lines(mine, val.preds)]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
