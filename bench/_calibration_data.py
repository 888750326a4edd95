"""Measured serving performance as typed rows: shared by bench/calibrate.py and bench/accuracy.py.

Three files, all in the repository (nothing is read from outside it):

* ``service/data/calibration.csv``: TensorRT-LLM peak throughput of the performance overview
  (``trtllm-bench``, ``gptManagerBenchmark`` for v0.10/v0.11; v0.10 to v0.21 and v1.0), NVIDIA
  NIM 1.8 closed-loop latency, LMDeploy 0.1 static batches;
* ``service/data/serving_measurements.csv``: vLLM, SGLang and TGI serving benchmarks (GPUStack
  performance lab, vLLM/SGLang/LMSYS/TGI/AMD/Vultr pages and CI reports), and dstack's
  DeepSeek-R1 comparison (vLLM, SGLang and trtllm-serve closed loops on 8x H200 / 8x MI300X);
* ``bench/validation_points.csv``: TensorRT-LLM (Triton) online-serving points under a request
  rate, read from the same v0.14 document as the v0.14 peak rows.

Every row is mapped, or skipped with a counted reason (:class:`LoadReport`). Decisions:

* **Engine and version** come from the ``engine`` label (:func:`parse_engine`): ``"vLLM v0.6.3"``
  -> ``("vllm", "0.6")``, ``"SGLang v0.3.0"`` -> ``("sglang", "0.3")``; TensorRT-LLM and NIM
  builds -> ``trtllm``; a label that says "version not stated" (or only guesses one with "~")
  has version ``""``. The *build* (``vllm-0.11``, ``trtllm-1.0``, ``nim-1.8``) keys the fitted
  constants; rows without a version use the engine's pooled build (``vllm``).
* **GPU labels** map explicitly to catalog ids (``GPU_LABELS``). Labels that do not say SXM or
  PCIe are taken as SXM (8-GPU HGX servers, and single-card runs whose bandwidth-bound decode
  rates need SXM bandwidth); such rows carry the flag ``variant-assumed``. GPUs the catalog
  lacks (DGX Spark GB10, B300) are skipped and counted.
* **Models** map to the product's presets through its own name resolution
  (``resolve_model``), with ``MODEL_PRESETS`` for labels it cannot read (annotations in the
  label). Models without a preset would be skipped and listed; every model in the data has
  one. Vultr's "Nemotron Nano 30B" (vLLM 0.16, March 2026; the page does not name the
  checkpoint) is read as Nemotron 3 Nano 30B-A3B, the only Nemotron Nano of that size.
* **Lengths**: integers as given; ``random max 100 (mean 94; EOS not ignored)`` -> the mean
  (94); a ``mean in X / out Y`` in the note overrides both (the client's printed means).
  ShareGPT runs with printed means are kept as ``lengths="mean"`` (a length *distribution*
  whose mean is known: scored separately, never fitted); ShareGPT without means, "random up
  to N", "not stated" are skipped.
* **Load**: ``peak`` (``trtllm-bench`` offline, infinite rate), ``burst`` (every request sent
  at t=0: GPUStack's ``vllm bench serve`` without a rate, AMD's max-load runs), ``concurrency``
  (N closed-loop clients; a run with fewer prompts than clients is a burst of its prompts),
  ``rate`` (Poisson at N req/s; rate >= 1000 is a burst), ``static``
  (one batch of N started together: LMDeploy, vLLM ``benchmark_latency``). k6 scenarios and
  unstated loads are skipped.
* **Metrics**: output tokens/s (``throughput``), ``requests`` (req/s, only where the run gives
  no output tokens/s), TTFT, TPOT, ITL, E2E at p50 / mean (a statistic "not stated" is taken as
  vLLM's default, the mean). p99 rows are counted but not scored: the closed-loop and burst
  load models give means. Totals that repeat another row of the same run (total tokens/s,
  input tokens/s, req/s beside tokens/s), per-node / per-GPU headline figures of multi-node
  deployments, benchmark durations and throughputs whose definition the source leaves open
  are skipped.
* **Serving configuration**: flags in the serving command (``--max-num-seqs``,
  ``--max-num-batched-tokens``, trtllm-serve's ``--max_batch_size`` / ``--max_num_tokens``,
  ``--gpu-memory-utilization``, ``--enable-dp-attention``,
  ``--kv-cache-dtype fp8``, chunked prefill off) become :class:`ServeFlags`; speculative
  decoding and pipeline parallelism are skipped (not modelled); expert parallelism and
  SGLang's data-parallel attention are modelled as tensor parallelism (flags ``ep``,
  ``dp-attention``), which is what gpuplan's ``sglang``/``vllm`` profiles describe: the
  physics' attention-DP mode is TensorRT-LLM's (every non-expert weight replicated, token
  budget per rank), not SGLang's (attention weights replicated, MLP sharded).
* **Fitted or only scored** (:func:`fit_rows`): length distributions, runs of a handful of
  output tokens and development snapshots of an engine are scored, never fitted.
* **Source** (the hold-out unit) is the ``source`` column, with ``SOURCE_ALIASES`` joining
  copies of one document (the v0.14 TensorRT-LLM page appears in calibration.csv and in
  validation_points.csv). Result blocks a source published under the wrong GPU
  (``COPIED_BLOCKS``: identical to the hundredth to another GPU's page, contradicted by the
  page's own summary) are skipped.

TRT-LLM rows keep the conventions of the first calibration: FP8/FP4 rows use an FP8 KV cache;
L40S, A100-PCIe and RTX PRO 6000 with TP > 1 all-reduce over PCIe; pipeline-parallel rows are
skipped; LMDeploy's ``A100-80GB`` is the SXM part and NIM's ``H100-80GB`` the SXM part (their
batch-1 step times need NVLink and SXM bandwidth).
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from service.domain.catalog import GpuSpec
from service.domain.errors import DomainError
from service.domain.llm import ModelArch, resolve_model
from service.domain.perfmodel.values import KvPrecision, Precision
from service.store.csv_format import parse_gpus_csv

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION_CSV = ROOT / "service" / "data" / "calibration.csv"
SERVING_CSV = ROOT / "service" / "data" / "serving_measurements.csv"
VALIDATION_CSV = ROOT / "bench" / "validation_points.csv"
# Requests per run of the v0.14 Triton points ("generated using version 0.14.0, with 500
# requests", perf-overview of v0.17, bench/data/perf_overview/v0.17.md).
TRITON_RUN_REQUESTS = 500
GPUS_CSV = ROOT / "service" / "data" / "gpus.csv"

LoadKind = Literal["peak", "burst", "concurrency", "rate", "static"]
MetricKind = Literal["throughput", "requests", "ttft", "tpot", "itl", "e2e"]
Stat = Literal["p50", "mean"]
Lengths = Literal["fixed", "mean"]

ENGINES = ("trtllm", "vllm", "sglang", "tgi", "lmdeploy")

# ---------------------------------------------------------------------------------------------
# label tables
# ---------------------------------------------------------------------------------------------

GPU_LABELS: dict[str, str] = {
    # calibration.csv
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
    # serving_measurements.csv
    "H100-SXM5-80GB": "h100-sxm",
    "MI300X-192GB": "mi300x",
    "MI325X-256GB": "mi325x",
    "B200-SXM-180GB (HGX B200)": "b200",
    "L4-24GB": "l4",
    "GB200": "gb200",
    "H100 (variant not stated)": "h100-sxm",
    "A100-80GB (variant not stated)": "a100-sxm-80gb",
    "H100-80GB (variant not stated)": "h100-sxm",
    "H200 (variant not stated)": "h200-sxm",
}
GPU_VARIANT_ASSUMED = frozenset(label for label in GPU_LABELS if "not stated" in label)

MODEL_PRESETS: dict[str, str] = {
    "Qwen/Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-v3",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "meta-llama/Llama-3.1-405B-Instruct": "llama-3.1-405b",
    "meta-llama/Llama-3.1-405B (FP8)": "llama-3.1-405b",
    "amd/Llama-3.1-405B-Instruct-FP8-KV": "llama-3.1-405b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "amd/Llama-3.1-70B-Instruct-FP8-KV": "llama-3.1-70b",
    "meta-llama/Llama-3.1-70B-Instruct (model inferred from post context, "
    "Case 7 does not name it)": "llama-3.1-70b",
    "meta-llama/Llama-3-70B": "llama-3-70b",
    "mistralai/Mixtral-8x7B": "mixtral-8x7b",
    "Nemotron Nano 30B (as named on page; exact HF id not stated)": "nemotron-3-nano-30b-a3b",
}

# (precision label) -> (weight precision, KV precision or "" for the engine default)
PRECISION_LABELS: dict[str, tuple[Precision, str]] = {
    "bf16": ("bf16", ""),
    "fp16": ("fp16", ""),
    "bf16 (not stated)": ("bf16", ""),
    "bf16 (default dtype; not stated)": ("bf16", ""),
    "bf16 weights, kv=BF16": ("bf16", "bf16"),
    "bf16 weights, kv=FP8": ("bf16", "fp8"),
    "fp8": ("fp8", ""),
    "fp8 weights": ("fp8", ""),
    "fp8 (native block-FP8)": ("fp8", ""),
    "fp8 (weights + KV)": ("fp8", "fp8"),
    "fp8 (native block-FP8) + fp8 kv cache": ("fp8", "fp8"),
    "fp4": ("fp4", ""),
    "mxfp4 MoE weights": ("fp4", ""),
    "mxfp4 MoE weights, kv=BF16": ("fp4", "bf16"),
    "mxfp4 MoE weights, kv=FP8": ("fp4", "fp8"),
    "mxfp4 MoE weights, kv=FP8 skip-SW": ("fp4", "fp8"),
    "int4 (awq)": ("int4", ""),
}

METRICS: dict[str, tuple[MetricKind, Stat]] = {
    "output_tokens_per_s_total": ("throughput", "mean"),
    "requests_per_s": ("requests", "mean"),
    "ttft_ms_p50": ("ttft", "p50"),
    "ttft_ms_mean": ("ttft", "mean"),
    "ttft_ms_stat_not_stated": ("ttft", "mean"),
    "tpot_ms_p50": ("tpot", "p50"),
    "tpot_ms_mean": ("tpot", "mean"),
    "tpot_ms_stat_not_stated": ("tpot", "mean"),
    "itl_ms_p50": ("itl", "p50"),
    "itl_ms_mean": ("itl", "mean"),
    "e2e_ms_p50": ("e2e", "p50"),
    "e2e_ms_mean": ("e2e", "mean"),
    "e2e_ms_stat_not_stated": ("e2e", "mean"),
    "output_tokens_per_s": ("throughput", "mean"),  # validation_points.csv
}
REDUNDANT_METRICS = frozenset({"total_tokens_per_s_total", "input_tokens_per_s_total"})
AMBIGUOUS_METRICS = frozenset({"throughput_tokens_per_s_as_reported"})
READ_AS_OUTPUT: tuple[MetricKind, Stat] = ("throughput", "mean")
"""How :func:`load_undefined_throughput` reads an :data:`AMBIGUOUS_METRICS` row."""

# One benchmark document appearing under two spellings.
_V014_DOC = (
    "github:NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (v0.14.0 revision) "
    "read via fork arthurrasmusson/TensorRT-LLM@e00d4e6564921307dd264b61fe1d46f116095e0e"
)
SOURCE_ALIASES: dict[str, str] = {
    "github:arthurrasmusson/TensorRT-LLM@e00d4e6564921307dd264b61fe1d46f116095e0e "
    "docs/source/performance/perf-overview.md (v0.14.0 revision)": _V014_DOC,
}


# Result blocks a source published under the wrong GPU, as ``(source document suffix, text in
# the row's note)`` -> why. Their rows are skipped and counted, never fitted or scored.
#
# GPUStack's GLM-4.5-Air H100 page (docs/performance-lab/glm-4.5-air/h100.md): every number of
# its "Other Benchmark Cases" blocks (vLLM baseline and SGLang optimized, 32K/4K/2K/128-token
# prompts) equals, to the hundredth, the same blocks of the A100 page (a100.md). The A100 page's
# own summary table repeats them (total 6,271 / 13,012 tok/s on the 128-token case), while the
# H100 page's summary table gives 7,067 / 28,622 tok/s for the same cases (and 2.2-3.6x the
# block figures on the others): the H100 page carries a copy of the A100 results.
COPIED_BLOCKS: dict[tuple[str, str], str] = {
    (
        "docs/performance-lab/glm-4.5-air/h100.md",
        "section 'Other Benchmark Cases'",
    ): "source: result block copied from another GPU's page (GPUStack GLM-4.5-Air H100)",
}


def copied_block(source: str, note: str) -> str:
    """Why a row's result block is a copy published under the wrong GPU ("" when it is not)."""
    for (suffix, marker), reason in COPIED_BLOCKS.items():
        if source.endswith(suffix) and marker in note:
            return reason
    return ""


def source_document(raw: str) -> str:
    """The hold-out unit for a ``source`` cell: the document, one spelling per document."""
    for prefix, doc in SOURCE_ALIASES.items():
        if raw.startswith(prefix):
            return doc
    return raw


# ---------------------------------------------------------------------------------------------
# parsers
# ---------------------------------------------------------------------------------------------

_VERSION = re.compile(r"(?<![~\w.])v?(\d+)\.(\d+)")


def parse_engine(label: str) -> tuple[str, str] | None:
    """``(engine, version)`` of an engine label, version ``"major.minor"`` or ``""`` when the
    label does not state one; ``None`` for an engine gpuplan does not model."""
    low = label.lower()
    if "tensorrt-llm" in low or re.search(r"\bnim\b", low):
        engine = "trtllm"
    elif low.startswith("vllm"):
        engine = "vllm"
    elif low.startswith("sglang"):
        engine = "sglang"
    elif low.startswith("tgi"):
        engine = "tgi"
    elif low.startswith("lmdeploy"):
        engine = "lmdeploy"
    else:
        return None
    if "not stated" in low:
        return engine, ""
    m = _VERSION.search(label)
    return engine, (f"{int(m.group(1))}.{int(m.group(2))}" if m else "")


def build_of(engine: str, version: str, label: str) -> str:
    """Key of the fitted constants a row belongs to: ``engine-version``, NIM's own build, or the
    engine's pooled key when the version is unknown."""
    if engine == "trtllm" and "nim" in label.lower():
        return f"nim-{version}" if version else "nim"
    return f"{engine}-{version}" if version else engine


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


_MEAN_LENGTHS = re.compile(r"mean in (\d+) / out (\d+) tokens")
_RANDOM_OUT = re.compile(r"^random max (\d+) \(mean (\d+)")
_APPROX = re.compile(r"^~(\d+)$")


def parse_lengths(
    input_cell: str, output_cell: str, note: str
) -> tuple[int, int, Lengths, tuple[str, ...]] | str:
    """``(prompt, output, lengths, flags)`` or a skip reason."""
    flags: list[str] = []
    printed = _MEAN_LENGTHS.search(note)
    sharegpt = input_cell.strip().lower() == "sharegpt"
    if sharegpt:
        if printed is None:
            return "lengths: ShareGPT without printed means"
        return int(printed.group(1)), int(printed.group(2)), "mean", ("sharegpt",)
    l_in = _int(input_cell)
    if l_in is None:
        approx = _APPROX.match(input_cell.strip())
        if approx is None:
            return "lengths: not stated or random up to a maximum"
        l_in = int(approx.group(1))
        flags.append("approx-lengths")
    l_out = _int(output_cell)
    if l_out is None:
        rnd = _RANDOM_OUT.match(output_cell.strip())
        approx = _APPROX.match(output_cell.strip())
        if rnd is not None:
            l_out = int(rnd.group(2))
            flags.append("eos")
        elif approx is not None:
            l_out = int(approx.group(1))
        else:
            return "lengths: output not stated (prefill-only or unknown)"
    if printed is not None:
        l_in, l_out = int(printed.group(1)), int(printed.group(2))
    if l_in < 1 or l_out < 1:
        return "lengths: output not stated (prefill-only or unknown)"
    return l_in, l_out, "fixed", tuple(flags)


_BURST = re.compile(r"^max \((?:all )?(\d+) (?:requests|prompts)")
_PROMPTS = re.compile(r"(\d+) prompts")
_PROMPTS_ABOVE_ONE = re.compile(r"(\d+) prompts at c=1, (\d+) at c>1")


def parse_load(cell: str, note: str) -> tuple[LoadKind, float] | str:
    """``(load kind, N)``: clients, requests in the burst, or req/s; or a skip reason."""
    text = cell.strip()
    n = _int(text)
    if n is not None:
        # a closed loop with more clients than the run has prompts sends them all at once
        m = _PROMPTS_ABOVE_ONE.search(note)
        if m and n > 1 and int(m.group(2)) <= n:
            return "burst", float(m.group(2))
        return "concurrency", float(n)
    if text.startswith("rate="):
        rate = float(text.removeprefix("rate="))
        if rate >= 1000.0:
            m = _PROMPTS.search(note)
            return ("burst", float(m.group(1))) if m else ("peak", 0.0)
        return "rate", rate
    m = _BURST.match(text)
    if m:
        return "burst", float(m.group(1))
    if text.startswith("max (offline"):
        return "peak", 0.0
    if text == "max":
        m = _PROMPTS.search(note)
        return ("burst", float(m.group(1))) if m else ("peak", 0.0)
    return "load: not stated or a scripted scenario (k6)"


@dataclass(frozen=True, slots=True)
class ServeFlags:
    """Serving-command settings that differ from the engine's defaults (``None`` = default)."""

    max_batch: int | None = None
    max_num_tokens: int | None = None
    kv_fraction: float | None = None
    chunked_prefill: bool | None = None


# vLLM / SGLang spellings, then trtllm-serve's (``--max_batch_size``, ``--max_num_tokens``)
_FLAG_INT = {
    "max_batch": re.compile(
        r"--max-num-seqs[ =](\d+)|--max-running-requests[ =](\d+)|--max_batch_size[ =](\d+)"
    ),
    "max_num_tokens": re.compile(
        r"--max-num-batched-tokens[ =](\d+)|--chunked-prefill-size[ =](\d+)"
        r"|--max_num_tokens[ =](\d+)"
    ),
}
_FLAG_FRAC = re.compile(r"--gpu-memory-utilization[ =]([\d.]+)|--mem-fraction-static[ =]([\d.]+)")


def parse_serve_flags(note: str) -> tuple[ServeFlags, tuple[str, ...]] | str:
    """Settings from a serving command in ``note``, or a skip reason for unmodelled modes."""
    low = note.lower()
    if "speculative" in low or "mtp/nextn" in low or "eagle" in low:
        return "config: speculative decoding (not modelled)"
    if re.search(r"(^|\s)-pp\s|--pp-size|pipeline", low):
        return "config: pipeline parallelism (not modelled)"
    if "disagg" in low or "p/d" in low:
        return "config: disaggregated prefill/decode (not modelled)"
    values: dict[str, Any] = {}
    for name, rx in _FLAG_INT.items():
        m = rx.search(note)
        if m:
            values[name] = int(next(g for g in m.groups() if g))
    m = _FLAG_FRAC.search(note)
    if m:
        values["kv_fraction"] = float(next(g for g in m.groups() if g))
    if "chunked prefill off" in low or "chunked-prefill off" in low:
        values["chunked_prefill"] = False
    flags: list[str] = []
    if "--enable-dp-attention" in low:
        flags.append("dp-attention")
    if "--enable-expert-parallel" in low or "--ep-size" in low or "--ep_size" in low:
        flags.append("ep")
    if "--async-scheduling" in low:
        flags.append("async-scheduling")
    return ServeFlags(**values), tuple(flags)


# ---------------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    """One measured number and everything needed to predict it.

    ``input_len``/``output_len`` are tokens (the means where lengths vary); ``load_n`` is the
    number of closed-loop clients (``concurrency``), of requests sent at once (``burst``), of
    sequences in the batch (``static``) or the request rate in req/s (``rate``); 0 for ``peak``.
    ``value`` is in the metric's unit: output tokens/s (whole run, all replicas), req/s, or ms.
    ``requests``: how many requests a ``rate`` run sent, where its source says (0: not said;
    the run is then read at the engine's steady state).
    """

    index: int
    dataset: str
    line: int
    source: str
    engine: str
    version: str
    build: str
    engine_label: str
    gpu_label: str
    gpu_id: str
    model_label: str
    model: ModelArch
    precision: Precision
    kv_precision: KvPrecision
    tp: int
    gpu_count: int
    input_len: int
    output_len: int
    lengths: Lengths
    load: LoadKind
    load_n: float
    metric: MetricKind
    stat: Stat
    value: float
    serve: ServeFlags = field(default_factory=ServeFlags)
    flags: tuple[str, ...] = ()
    note: str = ""
    requests: int = 0

    @property
    def replicas(self) -> int:
        """Independent replicas whose throughput the row adds up (``gpu_count / tp``)."""
        return max(1, self.gpu_count // self.tp)

    @property
    def run_key(self) -> tuple[object, ...]:
        """Identity of the benchmark run the row is one number of (rows of one run share one
        prediction)."""
        return (
            self.dataset, self.source, self.note, self.engine_label, self.gpu_label, self.tp,
            self.gpu_count, self.model_label, self.precision, self.kv_precision, self.input_len,
            self.output_len, self.load, self.load_n,
        )  # fmt: skip

    @property
    def metric_group(self) -> str:
        """Reporting metric: ``peak_throughput`` (peak and burst runs), ``throughput_at_load``
        (closed loop, rate, static batch), ``ttft``, ``tpot``, ``itl``, ``e2e``."""
        if self.metric in ("throughput", "requests"):
            return "peak_throughput" if self.load in ("peak", "burst") else "throughput_at_load"
        return self.metric


@dataclass
class LoadReport:
    """What was read, what was used, and why the rest was not."""

    read: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    unknown_models: Counter[str] = field(default_factory=Counter)
    unknown_gpus: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str, detail: str = "") -> None:
        """Count one skipped row under ``reason`` (and the label for model/GPU reasons)."""
        self.skipped[reason] += 1
        if reason == "model: no preset":
            self.unknown_models[detail] += 1
        elif reason == "gpu: not in catalog":
            self.unknown_gpus[detail] += 1

    def as_dict(self) -> dict[str, object]:
        """Plain form for JSON reports."""
        return {
            "read": dict(sorted(self.read.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "unknown_models": dict(sorted(self.unknown_models.items())),
            "unknown_gpus": dict(sorted(self.unknown_gpus.items())),
        }


def load_gpus() -> dict[str, GpuSpec]:
    """Catalog GPUs by id, parsed with the product's own CSV parser."""
    return {g.id: g for g in parse_gpus_csv(GPUS_CSV.read_text(encoding="utf-8"))}


_MODEL_CACHE: dict[str, ModelArch | None] = {}


def resolve_label(label: str) -> ModelArch | None:
    """A model label -> preset architecture (``MODEL_PRESETS`` for labels the product's name
    resolution cannot read, else the product's own ``resolve_model``); ``None`` when no preset
    matches."""
    if label in MODEL_PRESETS:
        return resolve_model(MODEL_PRESETS[label]).arch
    if label not in _MODEL_CACHE:
        try:
            _MODEL_CACHE[label] = resolve_model(label).arch
        except DomainError:
            _MODEL_CACHE[label] = None
    return _MODEL_CACHE[label]


def _tp_count(tp_cell: str, count_cell: str) -> tuple[int, int, bool] | str:
    """``(tp, gpu_count, attention_dp)`` or a skip reason."""
    text = tp_cell.strip()
    dp = False
    m = re.fullmatch(r"(\d+) \(dp (\d+)\)", text)
    if m:
        text, dp = m.group(1), True
    if re.fullmatch(r"\d+ \(pp \d+\)", text):
        return "config: pipeline parallelism (not modelled)"
    tp = _int(text)
    count = _int(count_cell)
    if tp is None or count is None:
        return "deployment: tensor parallel or GPU count not stated, or multi-node"
    if count % tp:
        return "deployment: GPU count not a multiple of tensor parallel"
    return tp, count, dp


def _calibration_load(profile_label: str, cell: str) -> tuple[LoadKind, float]:
    n = _int(cell)
    if n is None:
        return "peak", 0.0
    if profile_label.startswith("LMDeploy"):
        return "static", float(n)
    return "concurrency", float(n)


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _skip_p99(report: LoadReport, metric: str) -> bool:
    if metric.endswith("_p99"):
        report.skip("metric: p99 (tail not modelled under closed-loop and burst loads)")
        return True
    return False


def _common(
    r: Mapping[str, str], report: LoadReport, gpus: Mapping[str, GpuSpec]
) -> tuple[str, ModelArch, tuple[str, str, str]] | None:
    """GPU id, model and (engine, version, build) of a row, or ``None`` after counting the skip."""
    gpu_id = GPU_LABELS.get(r["gpu"])
    if gpu_id is None or gpu_id not in gpus:
        report.skip("gpu: not in catalog", r["gpu"])
        return None
    eng = parse_engine(r["engine"])
    if eng is None:
        report.skip("engine: not modelled", r["engine"])
        return None
    model = resolve_label(r["model"])
    if model is None:
        report.skip("model: no preset", r["model"])
        return None
    return gpu_id, model, (eng[0], eng[1], build_of(eng[0], eng[1], r["engine"]))


def load_rows(gpus: Mapping[str, GpuSpec] | None = None) -> tuple[list[Row], LoadReport]:
    """Every usable row of the three files (in file order) and the report of the rest."""
    gpus = gpus if gpus is not None else load_gpus()
    report = LoadReport()
    rows: list[Row] = []
    rows += _load_calibration(gpus, report, len(rows))
    rows += _load_serving(gpus, report, len(rows))
    rows += _load_validation(gpus, report, len(rows))
    return rows, report


def load_undefined_throughput(gpus: Mapping[str, GpuSpec] | None = None) -> list[Row]:
    """The throughput rows :func:`load_rows` skips because their source does not say whether
    tokens/s counts output tokens or all tokens (AMD's MI300X vLLM results), read as output
    tokens/s and flagged ``tokens-undefined``; every other rule of :func:`load_rows` applies.
    Scored both ways by ``bench/accuracy.py``, never fitted."""
    gpus = gpus if gpus is not None else load_gpus()
    return _load_serving(gpus, LoadReport(), 0, undefined_tokens=True)


def _load_calibration(gpus: Mapping[str, GpuSpec], report: LoadReport, start: int) -> list[Row]:
    out: list[Row] = []
    for line, r in enumerate(_read(CALIBRATION_CSV), start=2):
        report.read["calibration"] += 1
        common = _common(r, report, gpus)
        if common is None:
            continue
        gpu_id, model, (engine, version, build) = common
        lengths = parse_lengths(r["input_len"], r["output_len"], "")
        if isinstance(lengths, str):
            report.skip(lengths)
            continue
        l_in, l_out, kind, lflags = lengths
        tp, count = int(r["tp"]), int(r["gpu_count"])
        if count > tp:
            report.skip("config: pipeline parallelism (not modelled)")
            continue
        prec = r["precision"]
        load, n = _calibration_load(r["engine"], r["concurrency"])
        metric, stat = METRICS[r["metric"]]
        flags = list(lflags)
        if r["gpu"] in GPU_VARIANT_ASSUMED:
            flags.append("variant-assumed")
        if "stored under p50" in r["note"] and stat == "p50":
            stat = "mean"
        out.append(
            Row(
                index=start + len(out), dataset="calibration", line=line,
                source=source_document(r["source"]), engine=engine, version=version,
                build=build, engine_label=r["engine"], gpu_label=r["gpu"], gpu_id=gpu_id,
                model_label=r["model"], model=model, precision=prec,  # type: ignore[arg-type]
                kv_precision="fp16" if prec == "fp16" else "fp8", tp=tp, gpu_count=count,
                input_len=l_in, output_len=l_out, lengths=kind, load=load, load_n=n,
                metric=metric, stat=stat, value=float(r["value"]), flags=tuple(flags),
                note=r["note"],
            )
        )  # fmt: skip
    return out


def _runs_with_tokens(raw: Sequence[Mapping[str, str]]) -> set[tuple[str, ...]]:
    keys = set()
    for r in raw:
        if r["metric"] == "output_tokens_per_s_total":
            keys.add(_raw_run(r))
    return keys


def _raw_run(r: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(r[k] for k in ("source", "note", "engine", "gpu", "tp", "model", "precision",
                                "input_len", "output_len", "concurrency"))  # fmt: skip


def _load_serving(
    gpus: Mapping[str, GpuSpec], report: LoadReport, start: int, *, undefined_tokens: bool = False
) -> list[Row]:
    """The serving file's usable rows; ``undefined_tokens``: only its throughput rows whose
    tokens/s definition is not stated, read as output tokens/s (see
    :func:`load_undefined_throughput`)."""
    out: list[Row] = []
    raw = _read(SERVING_CSV)
    with_tokens = _runs_with_tokens(raw)
    for line, r in enumerate(raw, start=2):
        report.read["serving"] += 1
        metric_label = r["metric"]
        if undefined_tokens and metric_label not in AMBIGUOUS_METRICS:
            continue
        if _skip_p99(report, metric_label):
            continue
        if metric_label in REDUNDANT_METRICS or (
            metric_label == "requests_per_s" and _raw_run(r) in with_tokens
        ):
            report.skip("metric: repeats another row of the run (totals, req/s)")
            continue
        if metric_label in AMBIGUOUS_METRICS and not undefined_tokens:
            report.skip("metric: tokens/s definition not stated (output or total)")
            continue
        if metric_label not in METRICS and not undefined_tokens:
            report.skip("metric: per-node/per-GPU headline, prefill/decode-only or duration")
            continue
        copied = copied_block(r["source"], r["note"])
        if copied:
            report.skip(copied)
            continue
        common = _common(r, report, gpus)
        if common is None:
            continue
        gpu_id, model, (engine, version, build) = common
        tpc = _tp_count(r["tp"], r["gpu_count"])
        if isinstance(tpc, str):
            report.skip(tpc)
            continue
        tp, count, dp = tpc
        serve = parse_serve_flags(r["note"])
        if isinstance(serve, str):
            report.skip(serve)
            continue
        serve_flags, sflags = serve
        if dp and "dp-attention" not in sflags:
            sflags = (*sflags, "dp-attention")
        prec_label = PRECISION_LABELS.get(r["precision"])
        if prec_label is None:
            report.skip("precision: not stated")
            continue
        prec, kv_label = prec_label
        if "kv cache fp8" in r["note"].lower() or "--kv-cache-dtype fp8" in r["note"].lower():
            kv_label = "fp8"
        kv: KvPrecision = "fp8" if kv_label == "fp8" else ("fp16" if prec == "fp16" else "bf16")
        lengths = parse_lengths(r["input_len"], r["output_len"], r["note"])
        if isinstance(lengths, str):
            report.skip(lengths)
            continue
        l_in, l_out, kind, lflags = lengths
        load = parse_load(r["concurrency"], r["note"])
        if isinstance(load, str):
            report.skip(load)
            continue
        if "benchmark_latency" in r["note"] and load[0] == "concurrency":
            load = ("static", load[1])
        metric, stat = READ_AS_OUTPUT if undefined_tokens else METRICS[metric_label]
        flags = [*lflags, *sflags, *(("tokens-undefined",) if undefined_tokens else ())]
        if r["gpu"] in GPU_VARIANT_ASSUMED:
            flags.append("variant-assumed")
        out.append(
            Row(
                index=start + len(out), dataset="serving", line=line,
                source=source_document(r["source"]), engine=engine, version=version,
                build=build, engine_label=r["engine"], gpu_label=r["gpu"], gpu_id=gpu_id,
                model_label=r["model"], model=model, precision=prec, kv_precision=kv, tp=tp,
                gpu_count=count, input_len=l_in, output_len=l_out, lengths=kind, load=load[0],
                load_n=load[1], metric=metric, stat=stat, value=float(r["value"]),
                serve=serve_flags, flags=tuple(flags), note=r["note"],
            )
        )  # fmt: skip
    return out


def _load_validation(gpus: Mapping[str, GpuSpec], report: LoadReport, start: int) -> list[Row]:
    """TensorRT-LLM (Triton backend, v0.14 document) points under a Poisson request rate.

    Where the server kept up (achieved >= 0.9 x offered) the throughput equals the offered load
    and tests nothing: skipped. Where it fell behind, the latency depends on how long the run
    lasted: TTFT/TPOT skipped, the throughput (the server's capacity) kept.
    """
    out: list[Row] = []
    for line, r in enumerate(_read(VALIDATION_CSV), start=2):
        report.read["validation"] += 1
        gpu_id = r["gpu"]
        if gpu_id not in gpus:
            report.skip("gpu: not in catalog", gpu_id)
            continue
        model = resolve_label(r["model"])
        if model is None:
            report.skip("model: no preset", r["model"])
            continue
        offered, achieved = float(r["offered_qps"]), float(r["achieved_rps"])
        metric, stat = METRICS[r["metric"]]
        saturated = achieved < 0.9 * offered
        if metric == "throughput" and not saturated:
            report.skip("load: throughput equals the offered rate (server kept up)")
            continue
        if metric != "throughput" and saturated:
            report.skip("load: overloaded, latency depends on the run length")
            continue
        out.append(
            Row(
                index=start + len(out), dataset="validation", line=line,
                source=source_document(r["source"]), engine="trtllm", version="0.14",
                build="trtllm-0.14", engine_label="TensorRT-LLM v0.14.0 (Triton backend)",
                gpu_label=gpu_id, gpu_id=gpu_id, model_label=r["model"], model=model,
                precision=r["precision"],  # type: ignore[arg-type]
                kv_precision=r["kv_precision"],  # type: ignore[arg-type]
                tp=int(r["tp"]), gpu_count=int(r["tp"]), input_len=int(r["input_len"]),
                output_len=int(r["output_len"]), lengths="fixed", load="rate",
                load_n=offered, metric=metric, stat=stat, value=float(r["value"]),
                note="Triton TensorRT-LLM backend, Poisson arrivals",
                requests=TRITON_RUN_REQUESTS,
            )
        )  # fmt: skip
    return out


# ---------------------------------------------------------------------------------------------
# hold-out splits
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Split:
    """One leave-one-source-out fold: fit on ``train``, score ``test`` (row indices)."""

    source: str
    train: tuple[int, ...]
    test: tuple[int, ...]


def loso_splits(rows: Sequence[Row], scored: Sequence[Row] | None = None) -> Iterator[Split]:
    """Leave-one-source-out folds, one per source of ``scored`` (default: ``rows``), in sorted
    source order. ``train`` holds every row of ``rows`` from any *other* source, so no source
    is ever on both sides of a fold."""
    scored = rows if scored is None else scored
    for src in sorted({r.source for r in scored}):
        yield Split(
            source=src,
            train=tuple(r.index for r in rows if r.source != src),
            test=tuple(r.index for r in scored if r.source == src),
        )


MIN_FIT_OUTPUT = 16


# A development snapshot's version string: ``0.7.4.dev181+gf35f8e22``, ``0.17.post1.dev``.
_DEV_BUILD = re.compile(r"\d\.dev\d*\b")


def dev_build(engine_label: str) -> bool:
    """Whether the engine label names a development snapshot rather than a release."""
    return _DEV_BUILD.search(engine_label) is not None


def fit_rows(rows: Sequence[Row]) -> list[Row]:
    """Rows the fit may use: fixed request lengths (length distributions are only scored), at
    least ``MIN_FIT_OUTPUT`` output tokens, and a released engine build.

    Runs of a handful of output tokens (GPUStack's 128 in / 4 out) are bound by the per-request
    serving path (HTTP, tokenisation, scheduling of each request), which the model does not
    represent; fitting engine constants to them would bend every other prediction. Development
    snapshots (``0.7.4.dev181``, TensorRT-LLM ``0.17.post1.dev``: a main-branch build between
    releases, there with the then-new PyTorch backend) are not the release whose fitted constants
    their version would key: fitted, dstack's trtllm-serve DeepSeek-R1 runs pushed TensorRT-LLM
    0.17's step and layer overheads to their bounds, which its release measurements (the v0.17
    performance overview) do not show. Rows of a hybrid state-space model (Mamba-2 layers:
    one source so far) are scored only as well: the fitted constants describe attention, GEMM
    and MoE kernels, and fitting them to the Mamba-2 kernels' time would move them for every
    other model. All are scored like every other row."""
    return [
        r
        for r in rows
        if r.lengths == "fixed"
        and r.output_len >= MIN_FIT_OUTPUT
        and not dev_build(r.engine_label)
        and not r.model.ssm_layers
    ]
