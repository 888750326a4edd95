"""Shared by bench/calibrate.py and bench/accuracy.py: load the measured rows, map their labels
to catalog ids / presets / engine profiles, split them, and predict each row with the model.

Data: ``service/data/calibration.csv`` (a copy of the shared reference file) and
``service/data/gpus.csv`` (the catalog), both read from the repository.

Decisions about the rows (also in the README section this script's output is pasted into):

* GPU labels are mapped explicitly (``GPU_LABELS``). ``A100-80GB (SXM/PCIe not stated)`` (LMDeploy)
  -> ``a100-sxm-80gb``: the source ran on an "(x8) A100-80G" server (8-GPU boxes are HGX/DGX SXM
  in practice) and its Llama-2-70B TP4 batch-1 step of 29 ms leaves no room for ~160 PCIe
  all-reduces of tens of microseconds each. ``H100-80GB (SXM/PCIe not stated)`` (NIM) ->
  ``h100-sxm``: its batch-1 inter-token latency of 18.6 ms reads 35 GB of FP8 weights per card,
  i.e. >= 1.9 TB/s, which an H100 PCIe (2.0 TB/s) could not sustain with any overhead.
* Pipeline-parallel rows (``gpu_count > tp``: 60 RTX PRO 6000 rows of TRT-LLM v1.0) are LEFT OUT:
  the model has no pipeline parallelism (the planner places one tensor-parallel replica per
  machine).
* LMDeploy ShareGPT rows (variable lengths, 21 rows) are LEFT OUT: their mean prompt length is
  not in the CSV and the model is for fixed shapes.
* ``_p50`` values that the note marks as means are compared with the model's means.
* TRT-LLM FP8 and FP4 rows use an FP8 KV cache (trtllm-bench FP8 builds set it; the FP4 checkpoints
  ship FP8 KV); FP16 rows a 16-bit one. L40S, A100-PCIe and RTX PRO 6000 rows with TP > 1
  all-reduce over PCIe (``allow_pcie_tensor_parallel=True``; the A100-PCIe system is taken to
  have no NVLink bridges, see ``measured_gpu``).
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from service.domain.catalog import GpuSpec
from service.domain.llm import ModelArch, resolve_model
from service.domain.perfmodel.calibration import BENCH_PROFILES, Calibration
from service.domain.perfmodel.core import build_setup, kv_pool_bytes
from service.domain.perfmodel.serving import estimate_with, static_batch_point
from service.domain.perfmodel.values import Deployment, KvPrecision, Precision, RequestShape
from service.store.csv_format import parse_gpus_csv

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION_CSV = ROOT / "service" / "data" / "calibration.csv"
GPUS_CSV = ROOT / "service" / "data" / "gpus.csv"

GPU_LABELS: dict[str, str] = {
    "H200-SXM-141GB": "h200-sxm",
    "H100-SXM-80GB": "h100-sxm",
    "A100-SXM4-80GB": "a100-sxm-80gb",
    "A100-PCIe-80GB": "a100-pcie-80gb",
    "L40S": "l40s",
    "B200-SXM-180GB": "b200",
    "GB200-192GB": "gb200",
    "RTX-PRO-6000-Blackwell-Server": "rtx-pro-6000-blackwell",
    "A100-80GB (SXM/PCIe not stated)": "a100-sxm-80gb",
    "H100-80GB (SXM/PCIe not stated)": "h100-sxm",
}

ENGINE_LABELS: dict[str, str] = {
    "TensorRT-LLM v0.14.0": "trtllm-0.14",
    "TensorRT-LLM v1.0": "trtllm-1.0",
    "LMDeploy v0.1.0a1 (TurboMind)": "lmdeploy-0.1",
    "NVIDIA NIM 1.8.0 (Llama-3.3-70b-instruct)": "nim-1.8",
}

METRIC_NAMES = {
    "output_tokens_per_s_total": "throughput",
    "ttft_ms_p50": "ttft",
    "tpot_ms_p50": "tpot",
    "requests_per_s": "requests",
}


@dataclass(frozen=True, slots=True)
class Row:
    """One measured number and everything needed to predict it."""

    index: int
    gpu_label: str
    gpu_id: str
    model_label: str
    model: ModelArch
    engine_label: str
    profile: str
    precision: Precision
    kv_precision: KvPrecision
    tp: int
    gpu_count: int
    input_len: int
    output_len: int
    concurrency: int | None
    metric: str
    value: float
    kind: str  # peak | static | closed | pp | sharegpt
    note: str

    @property
    def shape_key(self) -> str:
        """Identity of a request shape of one model (the unit held out together)."""
        return f"{self.model.id}|{self.input_len}|{self.output_len}"

    @property
    def used(self) -> bool:
        """Rows the fit and the headline accuracy use."""
        return self.kind in ("peak", "static", "closed")


def held_out(row: Row) -> bool:
    """Deterministic hold-out: a quarter of (model, prompt, output) shapes by SHA-256."""
    digest = hashlib.sha256(row.shape_key.encode()).digest()
    return digest[0] % 4 == 0


def load_gpus() -> dict[str, GpuSpec]:
    """Catalog GPUs by id, parsed with the product's own CSV parser."""
    return {g.id: g for g in parse_gpus_csv(GPUS_CSV.read_text(encoding="utf-8"))}


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def load_rows() -> list[Row]:
    """All 1,019 rows with labels resolved (raises KeyError on an unmapped label)."""
    rows: list[Row] = []
    with CALIBRATION_CSV.open(encoding="utf-8", newline="") as fh:
        for i, r in enumerate(csv.DictReader(fh)):
            model = resolve_model(r["model"]).arch
            profile = ENGINE_LABELS[r["engine"]]
            prec = r["precision"]
            kv: KvPrecision = "fp16" if prec == "fp16" else "fp8"
            tp, count = int(r["tp"]), int(r["gpu_count"])
            conc = _int_or_none(r["concurrency"])
            l_in = _int_or_none(r["input_len"])
            l_out = _int_or_none(r["output_len"])
            if l_in is None or l_out is None:
                kind = "sharegpt"
            elif count > tp:
                kind = "pp"
            elif profile in ("trtllm-0.14", "trtllm-1.0"):
                kind = "peak"
            elif profile == "lmdeploy-0.1":
                kind = "static"
            else:
                kind = "closed"
            rows.append(
                Row(
                    index=i,
                    gpu_label=r["gpu"],
                    gpu_id=GPU_LABELS[r["gpu"]],
                    model_label=r["model"],
                    model=model,
                    engine_label=r["engine"],
                    profile=profile,
                    precision=prec,  # type: ignore[arg-type]
                    kv_precision=kv,
                    tp=tp,
                    gpu_count=count,
                    input_len=l_in or 0,
                    output_len=l_out or 0,
                    concurrency=conc,
                    metric=METRIC_NAMES[r["metric"]],
                    value=float(r["value"]),
                    kind=kind,
                    note=r["note"],
                )
            )
    return rows


def measured_gpu(row: Row, gpus: dict[str, GpuSpec]) -> GpuSpec:
    """The card as the source ran it.

    TRT-LLM's A100-PCIe-80GB system is taken WITHOUT NVLink bridges: its TP2 throughput is
    30-45 % below the A100-SXM4's at 5 % less bandwidth (e.g. Mixtral-8x7B 128/128: 3,810 vs
    5,915 tok/s), which bridged pairs (600 GB/s) would not lose; so every TP group all-reduces
    over PCIe Gen4.
    """
    gpu = gpus[row.gpu_id]
    if row.gpu_label == "A100-PCIe-80GB":
        return replace(gpu, interconnect_bandwidth_gbps=0.0, nvlink_domain=1)
    return gpu


def deployment(row: Row, gpus: dict[str, GpuSpec]) -> Deployment:
    """The replica a row measured (PCIe all-reduce allowed where the source ran it)."""
    return Deployment(
        gpu=measured_gpu(row, gpus),
        tensor_parallel=row.tp,
        precision=row.precision,
        kv_precision=row.kv_precision,
        engine="trtllm",
        allow_pcie_tensor_parallel=True,
    )


def predict(row: Row, gpus: dict[str, GpuSpec], cal: Calibration) -> float:
    """Model prediction for one used row, in the row's unit (NaN when it cannot run)."""
    profile = BENCH_PROFILES[row.profile]
    dep = deployment(row, gpus)
    shape = RequestShape(row.input_len, row.output_len)
    if row.kind == "peak":
        est = estimate_with(row.model, dep, shape, profile, cal)
        if not est.fits:
            return float("nan")
        return est.output_tokens_per_s * (row.gpu_count // row.tp)
    if row.kind == "static":
        assert row.concurrency is not None
        s = build_setup(row.model, dep, profile, cal)
        if s.reject or kv_pool_bytes(s, row.input_len, row.output_len) <= 0:
            return float("nan")
        res = static_batch_point(s, row.input_len, row.output_len, row.concurrency)
        if row.metric == "throughput":
            return res.output_tokens_per_s
        if row.metric == "ttft":
            return res.ttft_mean_s * 1e3
        return res.tpot_p50_s * 1e3
    if row.kind == "closed":
        est = estimate_with(row.model, dep, shape, profile, cal, concurrency=row.concurrency)
        if not est.fits:
            return float("nan")
        if row.metric == "throughput":
            return est.output_tokens_per_s
        if row.metric == "ttft":
            return est.ttft_ms
        return est.tpot_ms
    raise ValueError(f"row {row.index} of kind {row.kind} is not predicted")
