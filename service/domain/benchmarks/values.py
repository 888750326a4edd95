"""Measured serving performance as imported from a team's benchmark files.

A *file* holds one or more *runs* (one load level of one deployment: ``vllm bench serve``
writes one run per file, SGLang's JSONL one per line, GuideLLM one per ``benchmarks`` entry);
each run gives several *measurements* (one metric at one statistic). Lengths are what the run
measured (mean prompt and output tokens over completed requests), never what the command line
asked for: generation can stop early at an end-of-sequence token.

Loads:

* ``concurrency``: a closed loop of ``load_value`` clients (``--max-concurrency``, GuideLLM
  ``concurrent``/``synchronous``, genai-perf ``--concurrency``);
* ``rate``: Poisson arrivals at ``load_value`` requests/s (``--request-rate``);
* ``burst``: ``load_value`` requests sent at once (``--request-rate inf`` without a
  concurrency cap, GuideLLM ``throughput``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from service.domain.vocabulary import Engine, KvPrecision, Precision

BenchmarkFormat = Literal["vllm", "sglang", "guidellm", "genai-perf", "csv"]
BENCHMARK_FORMATS: tuple[BenchmarkFormat, ...] = get_args(BenchmarkFormat)
LoadKind = Literal["concurrency", "rate", "burst"]
LOAD_KINDS: tuple[LoadKind, ...] = get_args(LoadKind)
Metric = Literal["output_tokens_per_s", "requests_per_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"]
METRICS: tuple[Metric, ...] = get_args(Metric)
Stat = Literal["mean", "p50", "p99"]
STATS: tuple[Stat, ...] = get_args(Stat)

MAX_RUNS_PER_FILE = 500
MAX_LABELS = 16
LABEL_MAX_LENGTH = 64
VERSION_MAX_LENGTH = 32


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a file does not say about the deployment it measured, as the caller gives it
    (request fields or CLI options). ``None``: not given. A value given here wins over the
    file's own (a file's model id may be a served name the catalogue does not know)."""

    gpu: str | None = None
    cards: int | None = None
    tensor_parallel: int | None = None
    engine: Engine | None = None
    engine_version: str | None = None
    precision: Precision | None = None
    kv_precision: KvPrecision | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedRun:
    """One run as a file states it: the context fields it carries (``None`` where it is
    silent), measured mean lengths, load and values ``(metric, stat, value)``."""

    index: int
    context: RunContext
    prompt_tokens: float
    output_tokens: float
    load: LoadKind
    load_value: float
    values: tuple[tuple[Metric, Stat, float], ...]


@dataclass(frozen=True, slots=True)
class Measurement:
    """One measured number with everything needed to predict it. ``gpu`` is a catalog id,
    ``model`` a preset id; ``cards`` all cards of the run (``cards / tensor_parallel``
    replicas, over which throughputs are totals)."""

    run: int
    gpu: str
    cards: int
    tensor_parallel: int
    model: str
    precision: Precision
    kv_precision: KvPrecision
    engine: Engine
    engine_version: str
    prompt_tokens: float
    output_tokens: float
    load: LoadKind
    load_value: float
    metric: Metric
    stat: Stat
    value: float

    @property
    def replicas(self) -> int:
        return max(1, self.cards // self.tensor_parallel)


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """A file read: its format, runs and the measurements they became."""

    format: BenchmarkFormat
    runs: int
    measurements: tuple[Measurement, ...]


@dataclass(frozen=True, slots=True)
class BenchmarkImport:
    """The record of one imported file: its content hash (the idempotency key), format,
    labels, the admin key that sent it (a digest prefix, never the key), when, and what it
    gave. ``context`` is what the caller stated beside the file."""

    id: int
    content_sha256: str
    format: BenchmarkFormat
    filename: str | None
    labels: tuple[str, ...]
    key_id: str
    imported_at: datetime
    runs: int
    measurements: int
    context: RunContext
