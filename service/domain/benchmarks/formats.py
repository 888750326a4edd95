"""Readers of the benchmark tools' own result files, unmodified, into :class:`ParsedRun` s.

Key names follow each tool's source:

* ``vllm``: ``vllm bench serve --save-result`` (``vllm/benchmarks/serve.py``) and the older
  ``benchmarks/benchmark_serving.py``: one JSON object with ``model_id``, ``backend``,
  ``request_rate`` (a number or ``"inf"``), ``max_concurrency``, ``completed``,
  ``total_input_tokens``, ``total_output_tokens``, ``request_throughput``,
  ``output_throughput`` and ``{mean,median,p99}_{ttft,tpot,itl,e2el}_ms``.
* ``sglang``: ``python -m sglang.bench_serving --output-file``: JSON Lines, one run per line,
  the same keys except ``{mean,median,p99}_e2e_latency_ms``.
* ``guidellm``: the GuideLLM report (``benchmarks.json``): ``benchmarks[]``, each with its
  scheduling strategy (``config.strategy`` or, in 0.2 reports, ``args.strategy``: ``type_`` of
  ``synchronous``, ``concurrent`` with ``streams``, ``throughput``, ``constant`` or ``poisson``
  with ``rate``) and ``metrics.<name>.successful`` distribution summaries (``mean``,
  ``median``, ``percentiles.p99``) for ``requests_per_second``, ``output_tokens_per_second``,
  ``prompt_token_count``, ``output_token_count``, ``time_to_first_token_ms``,
  ``time_per_output_token_ms``, ``inter_token_latency_ms`` and ``request_latency`` (seconds).
* ``genai-perf``: ``profile_export_genai_perf.json``: a ``{unit, avg, p50, p99, ...}`` object
  per metric (``request_throughput``, ``output_token_throughput``, ``time_to_first_token``,
  ``inter_token_latency``, ``request_latency``, ``input_sequence_length``,
  ``output_sequence_length``) and the ``input_config`` of the run (``concurrency`` or
  ``request_rate``, ``model``; newer releases nest the load under
  ``perf_analyzer.stimulus``). genai-perf's ``inter_token_latency`` is per request
  ``(latency - TTFT) / (output tokens - 1)``, which is what vLLM calls TPOT: it is read as TPOT.
* ``csv``: the columns of ``service/data/serving_measurements.csv`` (``gpu``, ``gpu_count``,
  ``tp``, ``model``, ``precision``, ``engine``, ``input_len``, ``output_len``, ``concurrency``,
  ``metric``, ``value``; others ignored), for any other tool.

Every problem is an :class:`InvalidInput` naming where it is (``body``, or the key at fault).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from service.domain.benchmarks.values import (
    BENCHMARK_FORMATS,
    MAX_RUNS_PER_FILE,
    BenchmarkFormat,
    LoadKind,
    Metric,
    ParsedRun,
    RunContext,
    Stat,
)
from service.domain.errors import InvalidInput
from service.domain.vocabulary import ENGINES, PRECISIONS, Engine, Precision

Values = list[tuple[Metric, Stat, float]]

# vllm / sglang: (key, metric, stat)
_SERVING_KEYS: tuple[tuple[str, Metric, Stat], ...] = (
    ("output_throughput", "output_tokens_per_s", "mean"),
    ("request_throughput", "requests_per_s", "mean"),
    ("mean_ttft_ms", "ttft_ms", "mean"),
    ("median_ttft_ms", "ttft_ms", "p50"),
    ("p99_ttft_ms", "ttft_ms", "p99"),
    ("mean_tpot_ms", "tpot_ms", "mean"),
    ("median_tpot_ms", "tpot_ms", "p50"),
    ("p99_tpot_ms", "tpot_ms", "p99"),
    ("mean_itl_ms", "itl_ms", "mean"),
    ("median_itl_ms", "itl_ms", "p50"),
    ("p99_itl_ms", "itl_ms", "p99"),
    ("mean_e2el_ms", "e2e_ms", "mean"),
    ("median_e2el_ms", "e2e_ms", "p50"),
    ("p99_e2el_ms", "e2e_ms", "p99"),
    ("mean_e2e_latency_ms", "e2e_ms", "mean"),
    ("median_e2e_latency_ms", "e2e_ms", "p50"),
    ("p99_e2e_latency_ms", "e2e_ms", "p99"),
)

# The server a bench client's ``backend`` names, where it names one.
_BACKEND_ENGINES: dict[str, Engine] = {
    "vllm": "vllm", "vllm-chat": "vllm", "sglang": "sglang", "sglang-native": "sglang",
    "sglang-oai": "sglang", "sglang-oai-chat": "sglang", "trt": "trtllm",
    "tensorrt-llm": "trtllm", "tgi": "tgi",
}  # fmt: skip


def detect_format(text: str) -> BenchmarkFormat:
    """The format of ``text`` from its structure (see the module docstring)."""
    head = text.lstrip()
    if not head:
        raise InvalidInput("the body is empty: send the result file as the body", field="body")
    if head[0] != "{":
        return "csv"
    try:
        doc = _json(text)
    except InvalidInput:
        return "sglang"  # several JSON objects, one per line
    if isinstance(doc, dict):
        if "benchmarks" in doc:
            return "guidellm"
        if "input_config" in doc or "time_to_first_token" in doc:
            return "genai-perf"
        if "completed" in doc and "output_throughput" in doc:
            return "vllm" if "model_id" in doc or "mean_e2e_latency_ms" not in doc else "sglang"
    raise InvalidInput(
        "the body is JSON but not a result file this service reads (vllm bench serve, SGLang "
        "bench_serving, GuideLLM, genai-perf); name its format with format=",
        field="format",
    )


def parse_runs(text: str, fmt: BenchmarkFormat) -> tuple[ParsedRun, ...]:
    """Every run of a ``fmt`` file. Raises ``InvalidInput`` naming the problem."""
    readers: dict[str, Callable[[str], list[ParsedRun]]] = {
        "vllm": _vllm,
        "sglang": _sglang,
        "guidellm": _guidellm,
        "genai-perf": _genai_perf,
        "csv": _csv,
    }
    if fmt not in readers:
        raise InvalidInput(
            f"unknown format {fmt!r}; expected one of {', '.join(BENCHMARK_FORMATS)}",
            field="format",
        )
    runs = readers[fmt](text)
    if not runs:
        raise InvalidInput(f"the {fmt} file holds no completed run", field="body")
    if len(runs) > MAX_RUNS_PER_FILE:
        raise InvalidInput(
            f"the file holds {len(runs)} runs; at most {MAX_RUNS_PER_FILE} per file", field="body"
        )
    return tuple(runs)


# ---- shared helpers ---------------------------------------------------------------------


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"the body is not valid JSON ({exc})", field="body") from None


def _number(doc: Mapping[str, Any], key: str, where: str) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{where}{key} must be a number, not {value!r}", field=key)
    return float(value)


def _required(doc: Mapping[str, Any], key: str, where: str) -> float:
    value = _number(doc, key, where)
    if value is None:
        raise InvalidInput(f"{where}{key} is missing: the file is incomplete", field=key)
    return value


def _keep(values: Values, metric: Metric, stat: Stat, value: float | None, field: str) -> None:
    if value is None:
        return
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"{field} must be a finite number >= 0, not {value!r}", field=field)
    if value > 0:  # a zero latency or throughput is "not measured" (e.g. ITL of 1-token runs)
        values.append((metric, stat, value))


def _model(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        value = value[0] if value else None
    return str(value) if isinstance(value, str) and value.strip() else None


def _engine(backend: Any) -> Engine | None:
    return _BACKEND_ENGINES.get(str(backend).lower()) if isinstance(backend, str) else None


def _lengths(prompt: float | None, output: float | None, where: str) -> tuple[float, float]:
    if prompt is None or prompt < 1:
        raise InvalidInput(f"{where}: no measured prompt length (mean input tokens)", field="body")
    if output is None or output < 1:
        raise InvalidInput(f"{where}: no measured output length (mean output tokens)", field="body")
    return prompt, output


# ---- vllm and sglang ----------------------------------------------------------------------


def _serving_run(doc: Any, index: int, where: str) -> ParsedRun:
    if not isinstance(doc, dict):
        raise InvalidInput(f"{where}: expected a JSON object", field="body")
    completed = _required(doc, "completed", f"{where}: ")
    if completed < 1:
        raise InvalidInput(
            f"{where}: completed is {completed:g}: no request finished", field="completed"
        )
    total_in = _required(doc, "total_input_tokens", f"{where}: ")
    total_out = _required(doc, "total_output_tokens", f"{where}: ")
    prompt, output = _lengths(total_in / completed, total_out / completed, where)
    load, load_value = _serving_load(doc, completed, where)
    values: Values = []
    for key, metric, stat in _SERVING_KEYS:
        _keep(values, metric, stat, _number(doc, key, f"{where}: "), key)
    if not any(m == "output_tokens_per_s" for m, _, _ in values):
        raise InvalidInput(f"{where}: output_throughput is missing", field="output_throughput")
    context = RunContext(model=_model(doc.get("model_id")), engine=_engine(doc.get("backend")))
    return ParsedRun(index, context, prompt, output, load, load_value, tuple(values))


def _serving_load(doc: Mapping[str, Any], completed: float, where: str) -> tuple[LoadKind, float]:
    rate_raw = doc.get("request_rate", "inf")
    if isinstance(rate_raw, str) and rate_raw.strip().lower() in ("inf", "infinity"):
        rate = math.inf
    elif isinstance(rate_raw, int | float) and not isinstance(rate_raw, bool) and rate_raw > 0:
        rate = float(rate_raw)
    else:
        raise InvalidInput(
            f"{where}: request_rate {rate_raw!r} is not a rate", field="request_rate"
        )
    cap = _number(doc, "max_concurrency", f"{where}: ")
    if math.isfinite(rate):
        return "rate", rate
    if cap is not None and cap >= 1:
        return "concurrency", cap
    return "burst", completed


def _vllm(text: str) -> list[ParsedRun]:
    return [_serving_run(_json(text), 0, "vllm result")]


def _sglang(text: str) -> list[ParsedRun]:
    runs: list[ParsedRun] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                doc = json.loads(line)
            except ValueError as exc:
                raise InvalidInput(f"line {n} is not valid JSON ({exc})", field="body") from None
            runs.append(_serving_run(doc, len(runs), f"line {n}"))
    return runs


# ---- GuideLLM -----------------------------------------------------------------------------


def _summary(metrics: Mapping[str, Any], name: str, where: str) -> Mapping[str, Any] | None:
    entry = metrics.get(name)
    if entry is None:
        return None
    ok = entry.get("successful") if isinstance(entry, dict) else None
    if not isinstance(ok, dict):
        raise InvalidInput(
            f"{where}: metrics.{name}.successful is missing", field=f"metrics.{name}"
        )
    return ok


def _guidellm(text: str) -> list[ParsedRun]:
    doc = _json(text)
    benchmarks = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(benchmarks, list):
        raise InvalidInput("a GuideLLM report needs a benchmarks list", field="benchmarks")
    model = _guidellm_model(doc)
    runs: list[ParsedRun] = []
    for i, bench in enumerate(benchmarks):
        where = f"benchmarks[{i}]"
        if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
            raise InvalidInput(f"{where}.metrics is missing", field=f"{where}.metrics")
        metrics = bench["metrics"]
        counts = {}
        for name in ("prompt_token_count", "output_token_count"):
            summary = _summary(metrics, name, where)
            counts[name] = None if summary is None else _number(summary, "mean", f"{where}.{name}.")
        prompt, output = _lengths(counts["prompt_token_count"], counts["output_token_count"], where)
        load, load_value = _guidellm_load(bench, metrics, where)
        values: Values = []
        for name, metric, scale in (
            ("output_tokens_per_second", "output_tokens_per_s", 1.0),
            ("requests_per_second", "requests_per_s", 1.0),
            ("time_to_first_token_ms", "ttft_ms", 1.0),
            ("time_per_output_token_ms", "tpot_ms", 1.0),
            ("inter_token_latency_ms", "itl_ms", 1.0),
            ("request_latency", "e2e_ms", 1e3),  # seconds
        ):
            summary = _summary(metrics, name, where)
            if summary is None:
                continue
            field = f"{where}.metrics.{name}"
            percentiles = summary.get("percentiles") or {}
            for stat, raw in (
                ("mean", _number(summary, "mean", f"{field}.")),
                ("p50", _number(summary, "median", f"{field}.")),
                ("p99", _number(percentiles, "p99", f"{field}.percentiles.")),
            ):
                _keep(values, metric, stat, None if raw is None else raw * scale, field)  # type: ignore[arg-type]
        if not any(m == "output_tokens_per_s" for m, _, _ in values):
            raise InvalidInput(
                f"{where}: metrics.output_tokens_per_second is missing",
                field=f"{where}.metrics.output_tokens_per_second",
            )
        runs.append(
            ParsedRun(i, RunContext(model=model), prompt, output, load, load_value, tuple(values))
        )
    return runs


def _guidellm_model(doc: Mapping[str, Any]) -> str | None:
    for holder in (doc.get("args"), doc.get("metadata")):
        if isinstance(holder, dict) and _model(holder.get("model")):
            return _model(holder.get("model"))
    for bench in doc.get("benchmarks") or ():
        if isinstance(bench, dict):
            for path in (("config", "backend", "model"), ("worker", "backend_model")):
                node: Any = bench
                for key in path:
                    node = node.get(key) if isinstance(node, dict) else None
                if _model(node):
                    return _model(node)
    return None


def _guidellm_load(
    bench: Mapping[str, Any], metrics: Mapping[str, Any], where: str
) -> tuple[LoadKind, float]:
    strategy = None
    for holder in (bench.get("config"), bench.get("args")):
        if isinstance(holder, dict) and isinstance(holder.get("strategy"), dict):
            strategy = holder["strategy"]
            break
    if strategy is None:
        raise InvalidInput(f"{where}: config.strategy is missing", field=f"{where}.config.strategy")
    kind = strategy.get("type_")
    if kind == "synchronous":
        return "concurrency", 1.0
    if kind == "concurrent":
        return "concurrency", _required(strategy, "streams", f"{where}.config.strategy.")
    if kind in ("constant", "poisson"):
        return "rate", _required(strategy, "rate", f"{where}.config.strategy.")
    if kind == "throughput":
        totals = metrics.get("request_totals") or bench.get("request_totals") or {}
        count = (
            _number(totals, "successful", f"{where}.request_totals.")
            if isinstance(totals, dict)
            else None
        )
        cap = _number(strategy, "max_concurrency", f"{where}.config.strategy.")
        if cap:
            return "concurrency", cap
        if count:
            return "burst", count
        raise InvalidInput(
            f"{where}: a throughput run needs max_concurrency or request_totals.successful",
            field=f"{where}.config.strategy.max_concurrency",
        )
    raise InvalidInput(
        f"{where}: scheduling strategy {kind!r} is not one this service models "
        "(synchronous, concurrent, throughput, constant, poisson)",
        field=f"{where}.config.strategy.type_",
    )


# ---- genai-perf ---------------------------------------------------------------------------

_UNIT_TO_MS = {"ms": 1.0, "s": 1e3, "sec": 1e3, "us": 1e-3, "ns": 1e-6}


def _genai_perf(text: str) -> list[ParsedRun]:
    doc = _json(text)
    if not isinstance(doc, dict):
        raise InvalidInput("a genai-perf export is a JSON object", field="body")
    config = doc.get("input_config")
    if not isinstance(config, dict):
        raise InvalidInput("input_config is missing: the file is incomplete", field="input_config")

    def stat(name: str, key: str) -> float | None:
        entry = doc.get(name)
        if entry is None:
            return None
        if not isinstance(entry, dict):
            raise InvalidInput(f"{name} must be an object with avg, p50, p99", field=name)
        return _number(entry, key, f"{name}.")

    prompt, output = _lengths(
        stat("input_sequence_length", "avg"), stat("output_sequence_length", "avg"), "genai-perf"
    )
    values: Values = []
    for name, metric in (
        ("output_token_throughput", "output_tokens_per_s"),
        ("request_throughput", "requests_per_s"),
    ):
        _keep(values, metric, "mean", stat(name, "avg"), name)  # type: ignore[arg-type]
    for name, metric in (
        ("time_to_first_token", "ttft_ms"),
        ("inter_token_latency", "tpot_ms"),
        ("request_latency", "e2e_ms"),
    ):
        unit = str((doc.get(name) or {}).get("unit", "ms")).lower()
        if unit not in _UNIT_TO_MS:
            raise InvalidInput(f"{name}.unit {unit!r} is not a time unit", field=f"{name}.unit")
        for key, st in (("avg", "mean"), ("p50", "p50"), ("p99", "p99")):
            raw = stat(name, key)
            _keep(values, metric, st, None if raw is None else raw * _UNIT_TO_MS[unit], name)  # type: ignore[arg-type]
    if not any(m == "output_tokens_per_s" for m, _, _ in values):
        raise InvalidInput("output_token_throughput is missing", field="output_token_throughput")
    load, load_value = _genai_perf_load(config)
    model = _model(config.get("model")) or _model(config.get("model_names"))
    return [ParsedRun(0, RunContext(model=model), prompt, output, load, load_value, tuple(values))]


def _genai_perf_load(config: Mapping[str, Any]) -> tuple[LoadKind, float]:
    holders = [config]
    pa = config.get("perf_analyzer")
    if isinstance(pa, dict) and isinstance(pa.get("stimulus"), dict):
        holders.insert(0, pa["stimulus"])
    for holder in holders:
        rate = _number(holder, "request_rate", "input_config.")
        if rate:
            return "rate", rate
        conc = _number(holder, "concurrency", "input_config.")
        if conc:
            return "concurrency", conc
    raise InvalidInput(
        "input_config names neither concurrency nor request_rate", field="input_config.concurrency"
    )


# ---- CSV ----------------------------------------------------------------------------------

_CSV_COLUMNS = (
    "gpu",
    "model",
    "precision",
    "engine",
    "input_len",
    "output_len",
    "concurrency",
    "metric",
    "value",
)
_CSV_METRIC = re.compile(r"^(ttft|tpot|itl|e2e)_ms_(mean|p50|p99|stat_not_stated)$")
_BURST = re.compile(r"^max\b.*?(?:all\s+)?(\d+)\s+(?:requests|prompts)", re.IGNORECASE)
_ENGINE_LABEL = re.compile(
    r"^\s*(vllm|sglang|tensorrt-llm|trt-?llm|tgi)\b\s*v?(\d+\.\d+)?", re.IGNORECASE
)


def _csv(text: str) -> list[ParsedRun]:
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    missing = [c for c in _CSV_COLUMNS if c not in header]
    if missing:
        raise InvalidInput(f"CSV header lacks the column(s) {', '.join(missing)}", field=missing[0])
    runs: dict[tuple[str, ...], ParsedRun] = {}
    for n, row in enumerate(reader, start=2):
        where = f"row {n}"
        parsed = _csv_row(row, where)
        if parsed is None:
            continue
        key, run_template, value = parsed
        run = runs.get(key)
        if run is None:
            run = ParsedRun(len(runs), *run_template, ())
        runs[key] = ParsedRun(
            run.index, run.context, run.prompt_tokens, run.output_tokens, run.load,
            run.load_value, (*run.values, value),
        )  # fmt: skip
    return list(runs.values())


def _csv_row(
    row: Mapping[str, str | None], where: str
) -> (
    tuple[
        tuple[str, ...],
        tuple[RunContext, float, float, LoadKind, float],
        tuple[Metric, Stat, float],
    ]
    | None
):
    def cell(name: str) -> str:
        return (row.get(name) or "").strip()

    metric_stat = _csv_metric(cell("metric"))
    if metric_stat is None:
        return None  # a metric the model does not predict (durations, totals): not a measurement
    metric, stat = metric_stat
    try:
        value = float(cell("value"))
        prompt, output = float(cell("input_len")), float(cell("output_len"))
    except ValueError:
        raise InvalidInput(
            f"{where}: value, input_len and output_len must be numbers (measured means)",
            field="input_len",
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise InvalidInput(f"{where}: value must be a positive number", field="value")
    prompt, output = _lengths(prompt, output, where)
    load, load_value = _csv_load(cell("concurrency"), where)
    engine, version = _csv_engine(cell("engine"))
    context = RunContext(
        gpu=cell("gpu") or None,
        cards=_csv_int(cell("gpu_count"), "gpu_count", where),
        tensor_parallel=_csv_int(cell("tp"), "tp", where),
        engine=engine,
        engine_version=version,
        precision=_csv_precision(cell("precision")),
        model=cell("model") or None,
    )
    key = tuple(
        cell(c)
        for c in (
            "gpu",
            "gpu_count",
            "tp",
            "model",
            "precision",
            "engine",
            "input_len",
            "output_len",
            "concurrency",
            "source",
        )
    )
    return key, (context, prompt, output, load, load_value), (metric, stat, value)


def _csv_metric(name: str) -> tuple[Metric, Stat] | None:
    if name in ("output_tokens_per_s_total", "output_tok_s"):
        return "output_tokens_per_s", "mean"
    if name == "requests_per_s":
        return "requests_per_s", "mean"
    match = _CSV_METRIC.match(name)
    if match is None:
        return None
    metric: Metric = f"{match.group(1)}_ms"  # type: ignore[assignment]
    stat = match.group(2)
    return metric, ("mean" if stat == "stat_not_stated" else stat)  # type: ignore[return-value]


def _csv_load(cell: str, where: str) -> tuple[LoadKind, float]:
    text = cell.strip().lower()
    if text.isdigit() and int(text) >= 1:
        return "concurrency", float(text)
    if text.startswith("rate="):
        try:
            rate = float(text.removeprefix("rate="))
        except ValueError:
            rate = -1.0
        if rate > 0:
            return "rate", rate
    burst = _BURST.match(cell.strip())
    if burst:
        return "burst", float(burst.group(1))
    raise InvalidInput(
        f"{where}: concurrency {cell!r} is not a load this service models (N clients, rate=R, "
        "or 'max (all N requests at once)')",
        field="concurrency",
    )


def _csv_int(cell: str, name: str, where: str) -> int | None:
    if not cell:
        return None
    if not cell.isdigit() or int(cell) < 1:
        raise InvalidInput(f"{where}: {name} must be a whole number >= 1", field=name)
    return int(cell)


def _csv_engine(cell: str) -> tuple[Engine | None, str | None]:
    match = _ENGINE_LABEL.match(cell)
    if match is None:
        return None, None
    name = match.group(1).lower()
    engine: Engine = "trtllm" if "trt" in name or "tensorrt" in name else name  # type: ignore[assignment]
    return (engine if engine in ENGINES else None), match.group(2)


def _csv_precision(cell: str) -> Precision | None:
    word = cell.split(" ", 1)[0].strip().lower()
    return word if word in PRECISIONS else None
