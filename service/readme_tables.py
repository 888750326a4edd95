"""README tables generated from committed data: the performance model's leave-one-source-out
accuracy, as ``bench/calibrate.py`` last measured it (``constants.FIT_REPORT``), the
purchase and reserved prices per GPU of the seed catalog (``service.readme_price_coverage``),
and the benchmark figures of ``bench/RESULTS.md`` (``service.readme_bench``).

A generated table sits between two HTML comments::

    <!-- table:NAME -->
    ...written by this module...
    <!-- /table -->

``service.readme_examples`` rewrites (or, with ``--check``, compares) these blocks together with
the example outputs, so ``make readme`` refreshes them and a test fails when they drift.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from service.domain.perfmodel.constants import FIT_REPORT
from service.readme_bench import (
    bench_estimates,
    bench_gpu_kernels,
    bench_plan_latency,
    bench_summary,
)
from service.readme_price_coverage import bundled_price_coverage, seed_catalog_summary

ENGINE_LABELS = {
    "trtllm": "TensorRT-LLM",
    "vllm": "vLLM",
    "sglang": "SGLang",
    "lmdeploy": "LMDeploy",
}
METRIC_LABELS = {
    "peak_throughput": "peak throughput",
    "throughput_at_load": "throughput at a fixed load",
    "ttft": "TTFT",
    "tpot": "TPOT",
    "itl": "inter-token latency",
    "e2e": "end-to-end latency",
}
THROUGHPUT = ("peak_throughput", "throughput_at_load")
MIN_GPU_ROWS = 20
"""GPUs with fewer throughput rows are left out of the per-GPU table (too few to rank)."""

_BLOCK = re.compile(
    r"(?P<open><!-- table:(?P<name>[a-z0-9-]+) -->\n).*?(?P<close><!-- /table -->)", re.DOTALL
)


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _signed(value: float) -> str:
    return f"{value * 100:+.1f}%"


def _cells(report: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = report.get(key, {})
    return value if isinstance(value, Mapping) else {}


def accuracy_by_engine(report: Mapping[str, Any] = FIT_REPORT) -> str:
    """Engine x metric: held-out rows, median APE, share within 25 %, median bias."""
    lines = [
        "| engine | metric | rows | median error | within 25% | median bias |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    loso = _cells(report, "loso")
    for engine in sorted(loso, key=lambda e: list(ENGINE_LABELS).index(e)):
        for metric, s in _ordered(loso[engine]):
            lines.append(
                f"| {ENGINE_LABELS[engine]} | {METRIC_LABELS[metric]} | {int(s['n'])} | "
                f"{_pct(s['median_ape'])} | {_pct(s['within_25pct'])} | {_signed(s['bias'])} |"
            )
    return "\n".join(lines) + "\n"


def throughput_by_gpu(report: Mapping[str, Any] = FIT_REPORT) -> str:
    """Throughput (peak and at a fixed load, pooled over engines) per GPU with at least
    ``MIN_GPU_ROWS`` held-out rows; the worst GPU first."""
    pooled: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for metrics in _cells(report, "loso_by_gpu").values():
        for metric in THROUGHPUT:
            for gpu, s in metrics.get(metric, {}).items():
                pooled.setdefault(gpu, []).append((int(s["n"]), s))
    rows: list[tuple[float, str, int, float]] = []
    for gpu, parts in pooled.items():
        n = sum(k for k, _ in parts)
        if n < MIN_GPU_ROWS:
            continue
        # medians do not pool exactly; the row-weighted mean of the cell medians is shown
        ape = sum(k * float(s["median_ape"]) for k, s in parts) / n
        bias = sum(k * float(s["bias"]) for k, s in parts) / n
        rows.append((ape, gpu, n, bias))
    lines = [
        "| GPU | throughput rows | median error | median bias |",
        "| --- | ---: | ---: | ---: |",
    ]
    for ape, gpu, n, bias in sorted(rows, reverse=True):
        lines.append(f"| {gpu} | {n} | {_pct(ape)} | {_signed(bias)} |")
    return "\n".join(lines) + "\n"


def accuracy_notes(report: Mapping[str, Any] = FIT_REPORT) -> str:
    """One bullet per missed target (``target_notes``): engine, metric, error against the
    target, and the reason recorded for it; then the causes several notes share
    (``shared_causes``), each once. A sentence when every target is met, nothing for a report
    without notes."""
    notes = report.get("target_notes")
    if not isinstance(notes, list):
        return ""
    if not notes:
        return "Every target is met.\n"
    lines = []
    for n in notes:
        lines.append(
            f"- {ENGINE_LABELS.get(n['engine'], n['engine'])} "
            f"{METRIC_LABELS.get(n['metric'], n['metric'])}: {_pct(n['median_ape'])} "
            f"(target {_pct(n['target'])}). {n['reason']}"
        )
    causes = report.get("shared_causes") or {}
    if causes:
        lines += ["", "Causes shared by several of these misses:", ""]
        lines += [f"- *{c['title']}*: {c['text']}" for _, c in sorted(causes.items())]
    return "\n".join(lines) + "\n"


def _ordered(metrics: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    order = list(METRIC_LABELS)
    return sorted(metrics.items(), key=lambda kv: order.index(kv[0]))


TABLES: dict[str, Callable[[], str]] = {
    "accuracy-by-engine": accuracy_by_engine,
    "throughput-by-gpu": throughput_by_gpu,
    "accuracy-notes": accuracy_notes,
    "price-coverage": bundled_price_coverage,
    "seed-catalog": seed_catalog_summary,
    "bench-summary": bench_summary,
    "bench-plan-latency": bench_plan_latency,
    "bench-estimates": bench_estimates,
    "bench-gpu-kernels": bench_gpu_kernels,
}


def rewrite(text: str) -> str:
    """``text`` with every generated table block rewritten; an unknown name is an error."""

    def fill(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise KeyError(f"README table {name!r} is not one of {', '.join(TABLES)}")
        return m.group("open") + TABLES[name]() + m.group("close")

    return _BLOCK.sub(fill, text)
