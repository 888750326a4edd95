"""The performance model's kernel terms next to forward passes timed on a GPU
(``bench/gpu_forward.py``'s CSV).

For each measured decode or prefill step, the model's iteration time for the same step (one
card, 16-bit weights and KV cache) with the engine's fixed per-step cost and host work set to
zero (its per-layer kernel latency kept): what the model says the GPU kernels take. Columns
per engine profile: predicted ms and its ratio to the measurement.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

from bench._calibration_data import load_gpus
from service.domain.catalog import GpuSpec
from service.domain.llm.presets import PRESETS
from service.domain.perfmodel.calibration import default_calibration, resolve_profile
from service.domain.perfmodel.capacity import engine_setup
from service.domain.perfmodel.coefficients import Setup
from service.domain.perfmodel.iteration import iteration_time
from service.domain.perfmodel.values import Deployment, Engine, Precision

ROOT = Path(__file__).resolve().parents[1]
GPU_IDS = {"NVIDIA H200": "h200-sxm", "NVIDIA H100 80GB HBM3": "h100-sxm"}
ENGINES: tuple[Engine, ...] = ("vllm", "sglang", "trtllm")
_PRECISIONS: dict[str, Precision] = {"bf16": "bf16", "fp8": "fp8"}


@dataclass(frozen=True, slots=True)
class Step:
    """One measured step and the model's kernel time for it under each engine profile."""

    gpu: str
    model: str
    precision: Precision
    phase: str
    batch: int
    tokens: int
    context: int
    measured_ms: float
    predicted_ms: dict[Engine, float]


@cache
def _gpus() -> dict[str, GpuSpec]:
    return load_gpus()


def kernel_setup(model_id: str, gpu_id: str, precision: Precision, engine: Engine) -> Setup:
    """The engine's setup for one card (``precision`` weights, 16-bit KV cache) with its
    per-step and host costs removed; its per-layer latency (kernel tails and launch gaps that a
    CUDA graph of the bare kernels has too) stays."""
    dep = Deployment(
        gpu=_gpus()[gpu_id],
        tensor_parallel=1,
        precision=precision,
        kv_precision="bf16",
        engine=engine,
    )
    model = PRESETS[model_id]
    s = engine_setup(model, dep)
    ec = default_calibration().engine_by_name[resolve_profile(engine).profile.constants]
    layers_s = ec.layer_overhead_us * 1e-6 * model.n_sublayers / 2.0
    share = layers_s / (layers_s + ec.step_overhead_ms * 1e-3)  # of the (derated) fixed cost
    return replace(s, oh_step_s=s.oh_step_s * share, cpu_seq_s=0.0)


def kernel_ms(s: Setup, phase: str, batch: int, tokens: int, context: int) -> float:
    """Predicted kernel time (ms) of one decode step of ``batch`` sequences at ``context``
    tokens, or of one prefill of ``tokens`` prompt tokens."""
    if phase == "decode":
        return iteration_time(s, float(batch), 0.0, float(context), float(context)) * 1e3
    return iteration_time(s, 0.0, float(tokens), 0.0, float(tokens)) * 1e3


def steps(path: Path) -> list[Step]:
    """Measured decode and prefill rows of ``path`` with the model's predictions."""
    out = []
    with path.open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["phase"] not in ("decode", "prefill"):
                continue
            gpu = GPU_IDS[r["gpu"]]
            b, n, c = int(r["batch"]), int(r["tokens"]), int(r["context"])
            prec = _PRECISIONS[r["precision"]]
            pred = {
                e: kernel_ms(kernel_setup(r["model"], gpu, prec, e), r["phase"], b, n, c)
                for e in ENGINES
            }
            out.append(Step(gpu, r["model"], prec, r["phase"], b, n, c, float(r["ms"]), pred))
    return out


GROUPS = (
    ("bf16 decode", "bf16", "decode", 0),
    ("bf16 prefill >= 512 tokens", "bf16", "prefill", 512),
    ("fp8 decode", "fp8", "decode", 0),
    ("fp8 prefill >= 512 tokens", "fp8", "prefill", 512),
)
"""Summary columns: (label, precision, phase, fewest prompt tokens). Prefills of 512 tokens
and more are compute-bound; shorter ones still stream the weights."""


def in_group(s: Step, precision: str, phase: str, min_tokens: int) -> bool:
    return s.precision == precision and s.phase == phase and s.tokens >= min_tokens


def summary(rows: list[Step]) -> str:
    """Engine x group: median predicted / measured and its range."""
    lines = [
        "| engine | " + " | ".join(g[0] for g in GROUPS) + " |",
        "| --- |" + " ---: |" * len(GROUPS),
    ]
    for e in ENGINES:
        cells = []
        for _, prec, phase, least in GROUPS:
            r = [s.predicted_ms[e] / s.measured_ms for s in rows if in_group(s, prec, phase, least)]
            cells.append(f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})")
        lines.append(f"| {e} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


DATASHEET_BANDWIDTH = {"h100-sxm": 3.35e12, "h200-sxm": 4.8e12}
"""Bytes/s of the measured cards' datasheets (the law below is stated against them)."""
LAW_MAX_BATCH = 16


def step_bytes(s: Step) -> float:
    """Bytes one decode step reads: the linear layers' weights (1 byte per FP8 weight), the
    16-bit LM head and the 16-bit KV cache of every sequence."""
    m = PRESETS[s.model]
    q, kv = m.n_heads * m.head_dim, m.n_kv_heads * m.head_dim
    linear = m.n_layers * (m.hidden_size * (2 * q + 2 * kv) + 3 * m.hidden_size * m.ffn_size)
    weights = linear * (1 if s.precision == "fp8" else 2) + 2 * m.hidden_size * m.vocab_size
    return weights + 2 * m.n_layers * s.batch * kv * s.context * 2


@dataclass(frozen=True, slots=True)
class Law:
    """Decode steps of up to :data:`LAW_MAX_BATCH` sequences on every measured card, fitted
    as bytes / (``efficiency`` x datasheet bandwidth) + ``layer_us`` per layer (or, with
    ``layer_us`` 0, bandwidth alone): median and worst relative error."""

    precision: str
    rows: int
    efficiency: float
    layer_us: float
    median_error: float
    worst_error: float


def decode_laws(rows: list[Step]) -> list[Law]:
    """Per precision: the two-term law and the bandwidth-only law over ``rows``' small-batch
    decode steps (least squares on time)."""
    out = []
    for precision in ("bf16", "fp8"):
        sel = [
            s
            for s in rows
            if s.phase == "decode" and s.precision == precision and s.batch <= LAW_MAX_BATCH
        ]
        if len(sel) < 3:
            continue
        y = np.array([s.measured_ms / 1e3 for s in sel])
        read = [step_bytes(s) / DATASHEET_BANDWIDTH[s.gpu] for s in sel]
        layers = [float(PRESETS[s.model].n_layers) for s in sel]
        for a in (np.array([read, layers]).T, np.array([read]).T):
            x, *_ = np.linalg.lstsq(a, y, rcond=None)
            err = np.abs(a @ x / y - 1.0)
            latency = float(x[1]) * 1e6 if len(x) > 1 else 0.0
            out.append(
                Law(
                    precision,
                    len(sel),
                    1.0 / float(x[0]),
                    latency,
                    float(np.median(err)),
                    float(err.max()),
                )
            )
    return out


def law_table(paths: list[Path]) -> str:
    """:func:`decode_laws` over every file's steps, as a markdown table."""
    rows = [s for p in paths for s in steps(p)]
    lines = [
        "| precision | decode steps | law | bandwidth efficiency | latency per layer | "
        "median error | worst error |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for law in decode_laws(rows):
        what = "bytes / bandwidth + per layer" if law.layer_us else "bytes / bandwidth"
        lines.append(
            f"| {law.precision} | {law.rows} | {what} | {law.efficiency:.2f} | "
            f"{f'{law.layer_us:.0f} us' if law.layer_us else 'none'} | "
            f"{law.median_error:.1%} | {law.worst_error:.1%} |"
        )
    return "\n".join(lines)


def card_name(path: Path) -> str:
    """The GPU a measurement file was taken on (its first row's ``gpu``)."""
    with path.open(newline="", encoding="utf-8") as fh:
        return next(csv.DictReader(fh))["gpu"]


def report(path: Path) -> str:
    """The summary (median and range of predicted / measured per engine and step kind), then
    every measured step: measured ms, and per engine predicted ms and ratio."""
    rows = steps(path)
    try:
        shown = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        shown = path.as_posix()
    with path.open(newline="", encoding="utf-8") as fh:
        ceilings = [
            f"{r['note']} ({r['precision']})"
            for r in csv.DictReader(fh)
            if r["phase"] not in ("decode", "prefill")
        ]
    out = [
        f"Card ceilings on the same machine: {'; '.join(ceilings)}.",
        "",
        f"Measured: {shown} ({len(rows)} steps). Ratio = "
        "the model's kernel time (per-step and host costs set to zero, per-layer latency "
        "kept) / measured time; "
        "median (range):",
        "",
        summary(rows),
        "",
        "| model | step | measured ms | " + " | ".join(f"{e} ms (x)" for e in ENGINES) + " |",
        "|" + " --- |" * 2 + " ---: |" * (1 + len(ENGINES)),
    ]
    for s in rows:
        what = (
            f"decode b={s.batch} ctx={s.context}"
            if s.phase == "decode"
            else f"prefill {s.tokens} tokens"
        )
        cells = " | ".join(
            f"{s.predicted_ms[e]:.2f} ({s.predicted_ms[e] / s.measured_ms:.2f})" for e in ENGINES
        )
        out.append(f"| {s.model} {s.precision} | {what} | {s.measured_ms:.2f} | {cells} |")
    return "\n".join(out)
