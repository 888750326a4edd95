"""A parsed file plus the caller's context -> :class:`Measurement` rows, or a 422 naming the
first thing still missing. Nothing here touches storage: the use case stores the result only
when every run of the file is complete."""

from __future__ import annotations

import re
from collections.abc import Callable

from service.domain.benchmarks.formats import detect_format, parse_runs
from service.domain.benchmarks.values import (
    LABEL_MAX_LENGTH,
    MAX_LABELS,
    VERSION_MAX_LENGTH,
    BenchmarkFormat,
    Measurement,
    ParsedFile,
    ParsedRun,
    RunContext,
)
from service.domain.errors import DomainError, InvalidInput
from service.domain.llm import resolve_model
from service.domain.vocabulary import ENGINES, KV_PRECISIONS, PRECISIONS

GpuResolver = Callable[[str], str]
"""Catalog id of a GPU name or alias (raises ``UnknownGpu``)."""

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:=/-]*$")
_VERSION = re.compile(r"^v?\d+\.\d+(\.\d+)?([.+-]?[A-Za-z0-9]+)*$")


def check_labels(labels: tuple[str, ...]) -> tuple[str, ...]:
    """Labels as given, each checked (letters, digits and ``._:=/-``), duplicates dropped."""
    if len(labels) > MAX_LABELS:
        raise InvalidInput(f"at most {MAX_LABELS} labels", field="labels")
    for label in labels:
        if not _LABEL.match(label) or len(label) > LABEL_MAX_LENGTH:
            raise InvalidInput(
                f"label {label!r}: 1 to {LABEL_MAX_LENGTH} letters, digits and ._:=/- "
                "(e.g. team=search, cluster:eu-1)",
                field="labels",
            )
    return tuple(dict.fromkeys(labels))


def read_benchmark_file(
    text: str,
    fmt: BenchmarkFormat | None,
    context: RunContext,
    resolve_gpu: GpuResolver,
) -> ParsedFile:
    """Parse ``text`` (``fmt`` ``None``: detected) and complete every run with ``context``.

    A context field given by the caller wins over the file's; a field neither gives is a 422
    naming it (``gpu``, ``tensor_parallel``, ``engine``, ``engine_version``, ``precision``,
    ``model``). ``cards`` defaults to ``tensor_parallel`` (one replica)."""
    found = fmt or detect_format(text)
    runs = parse_runs(text, found)
    rows: list[Measurement] = []
    for run in runs:
        rows.extend(_measurements(run, context, resolve_gpu, len(runs) > 1))
    return ParsedFile(found, len(runs), tuple(rows))


def _measurements(
    run: ParsedRun, given: RunContext, resolve_gpu: GpuResolver, many: bool
) -> list[Measurement]:
    where = f"run {run.index + 1}: " if many else ""

    def pick(name: str) -> object:
        value = getattr(given, name)
        return value if value is not None else getattr(run.context, name)

    def missing(name: str, what: str) -> InvalidInput:
        return InvalidInput(f"{where}the file does not say {what}: give {name}", field=name)

    gpu_name = pick("gpu")
    if not isinstance(gpu_name, str):
        raise missing("gpu", "which GPU ran it")
    try:
        gpu = resolve_gpu(gpu_name)
    except DomainError as exc:
        raise InvalidInput(f"{where}{exc.message}", field="gpu") from None
    tp = pick("tensor_parallel")
    if not isinstance(tp, int):
        raise missing("tensor_parallel", "the tensor-parallel degree")
    cards = pick("cards")
    cards = tp if cards is None else cards
    if not isinstance(cards, int) or tp < 1 or cards < tp or cards % tp:
        raise InvalidInput(
            f"{where}cards ({cards}) must be a whole multiple of tensor_parallel ({tp})",
            field="cards",
        )
    engine = pick("engine")
    if engine not in ENGINES:
        raise missing("engine", f"which engine served it ({', '.join(ENGINES)})")
    version = pick("engine_version")
    if not isinstance(version, str) or not version.strip():
        raise missing("engine_version", f"the {engine} release (e.g. 0.11.0)")
    version = version.strip()
    if len(version) > VERSION_MAX_LENGTH or not _VERSION.match(version):
        raise InvalidInput(
            f"{where}engine_version {version!r} is not a release number", field="engine_version"
        )
    precision = pick("precision")
    if precision not in PRECISIONS:
        raise missing("precision", f"the weight format ({', '.join(PRECISIONS)})")
    kv = pick("kv_precision") or "bf16"
    if kv not in KV_PRECISIONS:
        raise InvalidInput(f"{where}kv_precision {kv!r} is unknown", field="kv_precision")
    model_name = pick("model")
    if not isinstance(model_name, str):
        raise missing("model", "which model it served")
    try:
        model = resolve_model(model_name).arch.id
    except DomainError as exc:
        raise InvalidInput(f"{where}{exc.message}", field="model") from None
    if run.prompt_tokens + run.output_tokens > _context_of(model):
        raise InvalidInput(f"{where}measured lengths exceed {model}'s context", field="body")
    return [
        Measurement(
            run=run.index,
            gpu=gpu,
            cards=cards,
            tensor_parallel=tp,
            model=model,
            precision=precision,
            kv_precision=kv,
            engine=engine,
            engine_version=version.removeprefix("v"),
            prompt_tokens=run.prompt_tokens,
            output_tokens=run.output_tokens,
            load=run.load,
            load_value=run.load_value,
            metric=metric,
            stat=stat,
            value=value,
        )
        for metric, stat, value in run.values
    ]


def _context_of(model: str) -> int:
    return resolve_model(model).arch.max_context
