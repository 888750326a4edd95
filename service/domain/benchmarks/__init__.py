"""A team's own benchmark result files as measurements (``values``), read from the tools'
own formats (``formats``) and completed with the context a file does not hold (``ingest``)."""

from service.domain.benchmarks.formats import detect_format, parse_runs
from service.domain.benchmarks.ingest import check_labels, read_benchmark_file
from service.domain.benchmarks.values import (
    BENCHMARK_FORMATS,
    LOAD_KINDS,
    METRICS,
    STATS,
    BenchmarkFormat,
    BenchmarkImport,
    LoadKind,
    Measurement,
    Metric,
    ParsedFile,
    ParsedRun,
    RunContext,
    Stat,
)

__all__ = [
    "BENCHMARK_FORMATS",
    "LOAD_KINDS",
    "METRICS",
    "STATS",
    "BenchmarkFormat",
    "BenchmarkImport",
    "LoadKind",
    "Measurement",
    "Metric",
    "ParsedFile",
    "ParsedRun",
    "RunContext",
    "Stat",
    "check_labels",
    "detect_format",
    "parse_runs",
    "read_benchmark_file",
]
