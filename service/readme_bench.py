"""README benchmark figures, read from ``bench/RESULTS.md`` (which ``make bench``, i.e.
``bench/run_all.py``, writes from the benchmarks' own output).

``service.readme_tables`` writes each of these into its ``<!-- table:NAME -->`` block of the
README, so ``make readme`` refreshes them after a benchmark run and a test fails when the README
and the committed ``bench/RESULTS.md`` disagree:

- ``bench-summary``: the table of *Reliability and benchmarks* (served throughput, uncached plan
  latency and scaling, curve cost, estimate cost, server memory);
- ``bench-plan-latency``: the uncached plan latency on the bundled catalog (*Plans*);
- ``bench-estimates``: the cost of one estimate (*Performance model*);
- ``bench-gpu-kernels``: the model's kernel time against forward passes timed on a GPU
  (*Performance model*).

Every figure is copied as ``bench/RESULTS.md`` prints it (a range is the smallest and the
largest of the cells it spans). The sections and their markdown tables are found by heading and
by column name; a missing section, column, row or figure raises :class:`BenchResultsError`
naming it, so a changed benchmark output stops ``make readme`` rather than writing blanks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "RESULTS.md"

PLAN_LATENCY = "Uncached plan latency and scaling"
GROWTH_REQUESTS = "4 buckets, cold"
CATALOG_GROWTH = f"Catalog growth ({GROWTH_REQUESTS})"
REQUEST_BUCKETS = "Request buckets (real catalog, cold)"
ESTIMATES = "Cost of one estimate"
SERVED = "Served throughput: cached plans vs /healthz"
MEMORY = "Server memory under distinct plans"
CURVES = "Uncached curve cost"
# The subsections of "Kernel terms vs forward passes timed on a GPU", one per card measured
# (the GPU's name as PyTorch reports it).
GPU_KERNEL_CARDS = ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
MACHINE = "Benchmark results"
"""The file's title: the machine of the full run is listed under it."""

_HEADING = re.compile(r"^(?P<level>#{1,6}) (?P<title>.+?)\s*$")
_SEPARATOR = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")


class BenchResultsError(ValueError):
    """``bench/RESULTS.md`` lacks a section, table, column, row or figure the README cites."""


@dataclass(frozen=True, slots=True)
class Table:
    """One markdown table of a section: its header and its rows as {column: cell}."""

    section: str
    header: tuple[str, ...]
    rows: tuple[Mapping[str, str], ...]

    def row(self, column: str, value: str) -> Mapping[str, str]:
        """The one row whose ``column`` is ``value``."""
        found = [r for r in self.rows if r[column] == value]
        if len(found) != 1:
            raise BenchResultsError(
                f"bench/RESULTS.md section {self.section!r}: expected one row with "
                f"{column} = {value!r}, found {len(found)}"
            )
        return found[0]

    def rows_where(
        self, keep: Callable[[Mapping[str, str]], bool], what: str
    ) -> list[Mapping[str, str]]:
        """The rows ``keep`` accepts, at least one (``what`` names them in the error)."""
        found = [r for r in self.rows if keep(r)]
        if not found:
            raise BenchResultsError(f"bench/RESULTS.md section {self.section!r}: no {what} row")
        return found


def section(text: str, title: str) -> str:
    """The text under the one heading ``title`` (any level), up to the next heading of the same
    or a higher level; subsections included, fenced code blocks never read as headings."""
    lines = text.splitlines()
    headings: list[tuple[int, int, str]] = []  # (line, level, title)
    fenced = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            headings.append((i, len(m.group("level")), m.group("title")))
    found = [(i, level) for i, level, t in headings if t == title]
    if len(found) != 1:
        raise BenchResultsError(
            f"bench/RESULTS.md: expected one section {title!r}, found {len(found)}"
        )
    start, level = found[0]
    end = next((i for i, lv, _ in headings if i > start and lv <= level), len(lines))
    return "\n".join(lines[start + 1 : end])


def _cells(line: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in line.strip().removeprefix("|").removesuffix("|").split("|"))


def tables(text: str, title: str) -> list[Table]:
    """Every markdown table of section ``title``, in order."""
    found: list[Table] = []
    lines = section(text, title).splitlines()
    i = 0
    while i + 1 < len(lines):
        if not (lines[i].startswith("|") and _SEPARATOR.match(lines[i + 1].replace(" ", ""))):
            i += 1
            continue
        header = _cells(lines[i])
        rows = []
        i += 2
        while i < len(lines) and lines[i].startswith("|"):
            cells = _cells(lines[i])
            if len(cells) != len(header) or not all(cells):
                raise BenchResultsError(
                    f"bench/RESULTS.md section {title!r}: row {lines[i]!r} does not fill the "
                    f"{len(header)} columns of {' | '.join(header)}"
                )
            rows.append(dict(zip(header, cells, strict=True)))
            i += 1
        found.append(Table(title, header, tuple(rows)))
    return found


def table(text: str, title: str, columns: Sequence[str]) -> Table:
    """The first table of section ``title`` that has every one of ``columns``, with rows."""
    candidates = tables(text, title)
    for t in candidates:
        if all(c in t.header for c in columns) and t.rows:
            return t
    seen = "; ".join(" | ".join(t.header) for t in candidates) or "none"
    raise BenchResultsError(
        f"bench/RESULTS.md section {title!r}: no table with the column(s) "
        f"{', '.join(repr(c) for c in columns)} (tables there: {seen})"
    )


def figure(text: str, title: str, pattern: str) -> re.Match[str]:
    """The first match of ``pattern`` in the prose of section ``title``."""
    m = re.search(pattern, section(text, title))
    if m is None:
        raise BenchResultsError(f"bench/RESULTS.md section {title!r}: no text matching {pattern!r}")
    return m


def _number(cell: str) -> float:
    m = re.match(r"[+-]?[\d,]*\.?\d+", cell)
    if m is None:
        raise BenchResultsError(f"bench/RESULTS.md: {cell!r} is not a figure")
    return float(m.group().replace(",", ""))


def span(cells: Iterable[str]) -> str:
    """``low–high`` of ``cells`` as printed (just the one figure when they are all equal)."""
    ordered = sorted(cells, key=_number)
    low, high = ordered[0], ordered[-1]
    return low if _number(low) == _number(high) else f"{low}–{high}"


def _real_catalog(text: str) -> re.Match[str]:
    return figure(
        text,
        PLAN_LATENCY,
        r"Model (?P<model>[^,]+), real catalog: (?P<gpus>[\d,]+) GPUs, (?P<offers>[\d,]+) "
        r"on-demand offers, (?P<kept>[\d,]+) left after pruning",
    )


def _machine(text: str, title: str) -> str:
    return figure(text, title, r"(?m)^Machine: (?P<machine>.+?)\.?$").group("machine")


def plan_latency(text: str) -> str:
    """The planner's uncached latency on the bundled catalog, 1 and 4 buckets, cold and warm,
    with the catalog's offers before and after pruning."""
    catalog = _real_catalog(text)
    columns = ("case", "plans", "p50 ms", "p99 ms", "max ms", "CPU ms")
    latency = table(text, PLAN_LATENCY, columns)
    intro = (
        f"Model {catalog['model']}; bundled catalog: {catalog['gpus']} GPUs, "
        f"{catalog['offers']} on-demand offers, {catalog['kept']} after pruning (what the MILP "
        f"sees). Machine: {_machine(text, PLAN_LATENCY)}. Wall clock per plan, and the CPU time "
        "per plan (mean) of the process's threads and its helper process:"
    )
    return _table_after(intro, columns, latency.rows)


def _table_after(intro: str, columns: Sequence[str], rows: Iterable[Mapping[str, str]]) -> str:
    """``intro``, a blank line, and a markdown table of ``rows`` (first column left-aligned,
    the others right-aligned)."""
    lines = [
        intro,
        "",
        "| " + " | ".join(columns) + " |",
        "| --- |" + " ---: |" * (len(columns) - 1),
    ]
    lines.extend("| " + " | ".join(r[c] for c in columns) + " |" for r in rows)
    return "\n".join(lines) + "\n"


def _estimate_spans(text: str) -> tuple[list[tuple[str, str]], int]:
    """(call, CPU µs range over the model/GPU pairs) in the order listed, and how many pairs."""
    t = table(text, ESTIMATES, ("model", "GPU", "call", "CPU us/call"))
    calls: dict[str, list[str]] = {}
    for r in t.rows:
        calls.setdefault(r["call"], []).append(r["CPU us/call"])
    pairs = {(r["model"], r["GPU"]) for r in t.rows}
    return [(call, span(cells)) for call, cells in calls.items()], len(pairs)


def estimates(text: str) -> str:
    """CPU per estimate call, by call, over the benchmark's model/GPU pairs."""
    spans, pairs = _estimate_spans(text)
    per_call = "; ".join(f"`{call}` {cells} µs" for call, cells in spans)
    return (
        f"CPU per call over {pairs} model/GPU pairs (machine: {_machine(text, ESTIMATES)}): "
        f"{per_call}.\n"
    )


def gpu_kernels(text: str) -> str:
    """Per measured card (:data:`GPU_KERNEL_CARDS`, each a subsection): its measured ceilings
    and, per engine profile, the model's kernel time over the measured one (median and range)
    for each kind of step."""
    parts = []
    for card in GPU_KERNEL_CARDS:
        ceilings = figure(text, card, r"Card ceilings on the same machine: (?P<c>[^\n]+?)\.\n")
        first = table(text, card, ("engine",))
        intro = (
            f"{card}: ceilings measured on the card: {ceilings['c']}. Model kernel time / "
            "measured, median (range):"
        )
        parts.append(_table_after(intro, first.header, first.rows))
    return "\n".join(parts)


def _throughput(text: str, logging: str) -> list[str]:
    """Per backend, at ``logging``: cached POST and /healthz req/s, and the ratios."""
    served = table(text, SERVED, ("backend", "logging", "endpoint", "req/s"))
    post, get = "(a)/(c) POST cached / healthz", "(b)/(c) GET cached / healthz"
    ratios = table(text, SERVED, ("backend", "logging", post, get))

    def rate(backend: str, endpoint: str) -> str:
        [row] = served.rows_where(
            lambda s: (
                (s["backend"], s["logging"]) == (backend, logging)
                and s["endpoint"].startswith(endpoint)
            ),
            f"{backend}, {logging}, {endpoint}",
        )
        return row["req/s"]

    return [
        f"{r['backend']}: {rate(r['backend'], '(a)')} vs {rate(r['backend'], '(c)')} req/s, "
        f"ratio {r[post]}; cached `GET /v1/plan` {r[get]}"
        for r in ratios.rows_where(lambda r: r["logging"] == logging, f"{logging} logging")
    ]


def summary(text: str) -> str:
    """The *Reliability and benchmarks* table: one row per benchmark the README cites."""
    cpu = figure(text, MACHINE, r"(?m)^- CPU: (?P<cpu>.+)$").group("cpu")
    ram = figure(text, MACHINE, r"(?m)^- RAM: (?P<ram>.+)$").group("ram")

    catalog = _real_catalog(text)
    latency = table(text, PLAN_LATENCY, ("case", "p50 ms", "p99 ms", "CPU ms"))
    cold = latency.row("case", "real catalog, 4 bucket(s), cold")
    warm = latency.row("case", "real catalog, 4 bucket(s), warm")
    growth = table(text, CATALOG_GROWTH, ("catalog", "GPU types", "offers", "p50 ms", "p99 ms"))
    biggest = growth.rows[-1]
    buckets = table(text, REQUEST_BUCKETS, ("buckets", "p50 ms", "p99 ms"))
    most = buckets.rows[-1]

    curve_columns = ("request", "plan curve (s)", "whole chart (s)", "series", "solves / points")
    curve_table = table(text, CURVES, (*curve_columns, "cost vs SLO (s)"))
    [curve] = curve_table.rows_where(
        lambda r: r["request"].startswith("README plan request"), "README plan request"
    )
    series = int(_number(curve["series"]))
    points = int(_number(curve["solves / points"].split("/")[-1].strip()))
    if series < 1 or points % series:
        raise BenchResultsError(
            f"bench/RESULTS.md section {CURVES!r}: {points} points is not a whole number of "
            f"points for each of {series} series"
        )

    spans, pairs = _estimate_spans(text)

    memory = table(text, MEMORY, ("plans sent", "RSS MiB", "growth since start MiB"))
    ready = memory.rows[0]
    judged = memory.rows_where(lambda r: "extension" not in r["plans sent"], "judged")[-1]
    last = memory.rows[-1]
    second_half = figure(
        text, MEMORY, r"RSS growth over the second half \((?P<span>[^)]+)\): (?P<growth>\S+ MiB)"
    )
    cache = figure(
        text,
        MEMORY,
        r"the cache holds the newest (?P<plans>[\d,]+) plans, whose JSON bodies total "
        r"(?P<size>[\d.]+ \w+)",
    )
    helpers = figure(
        text,
        MEMORY,
        r"Helper processes below the server.*?: (?P<n0>\d+) at start, PSS (?P<start>[\d.]+) "
        r"MiB; \d+ at the end, PSS (?P<end>[\d.]+) MiB",
    )

    post_info = "; ".join(_throughput(text, "INFO"))
    post_warning = "; ".join(_throughput(text, "WARNING"))
    rows = [
        (
            "cached `POST /v1/plans` vs `/healthz`, same server, wrk on loopback "
            "(default INFO logging)",
            post_info,
        ),
        ("the same with WARNING logging", post_warning),
        (
            f"uncached plan, {catalog['model']}, real catalog ({catalog['gpus']} GPUs, "
            f"{catalog['offers']} offers, {catalog['kept']} after pruning), 4 buckets",
            f"p50 {cold['p50 ms']} ms / p99 {cold['p99 ms']} ms (cold: new shapes), "
            f"p50 {warm['p50 ms']} ms / p99 {warm['p99 ms']} ms (warm: recurring shapes); "
            f"{cold['CPU ms']} ms of CPU per plan, helper process included (cold)",
        ),
        (
            f"catalog grown to {biggest['catalog']} ({biggest['GPU types']} GPU types, "
            f"{biggest['offers']} offers), {GROWTH_REQUESTS}",
            f"p50 {biggest['p50 ms']} ms / p99 {biggest['p99 ms']} ms; {most['buckets']} "
            f"buckets on the real catalog: p50 {most['p50 ms']} ms / p99 {most['p99 ms']} ms",
        ),
        (
            f"{points // series}-point cost-vs-load curve, README plan request",
            f"the plan's own curve {curve['plan curve (s)']} s; the whole chart with its "
            f"{series - 1} single-type curves {curve['whole chart (s)']} s; cost vs SLO "
            f"{curve['cost vs SLO (s)']} s",
        ),
        (
            f"estimates, CPU per call ({pairs} model/GPU pairs)",
            "; ".join(f"`{call}` {cells} µs" for call, cells in spans),
        ),
        (
            f"server memory (RSS) over {judged['plans sent']} distinct plans",
            f"{ready['RSS MiB']} → {judged['RSS MiB']} MiB "
            f"({judged['growth since start MiB']}); {second_half['growth']} over the second "
            f"half ({second_half['span']}); {last['RSS MiB']} MiB at {last['plans sent']}. "
            f"The plan cache holds the newest {cache['plans']} plans ({cache['size']}). Beside "
            f"the server, its {helpers['n0']} helper processes: PSS {helpers['start']} → "
            f"{helpers['end']} MiB",
        ),
    ]
    lines = [
        f"Machine: {cpu}; {ram} of RAM.",
        "",
        "| what | measured |",
        "| --- | --- |",
        *(f"| {what} | {measured} |" for what, measured in rows),
    ]
    return "\n".join(lines) + "\n"


def bench_summary() -> str:
    """:func:`summary` of the committed ``bench/RESULTS.md``."""
    return summary(RESULTS.read_text())


def bench_plan_latency() -> str:
    """:func:`plan_latency` of the committed ``bench/RESULTS.md``."""
    return plan_latency(RESULTS.read_text())


def bench_gpu_kernels() -> str:
    """:func:`gpu_kernels` of the committed ``bench/RESULTS.md``."""
    return gpu_kernels(RESULTS.read_text())


def bench_estimates() -> str:
    """:func:`estimates` of the committed ``bench/RESULTS.md``."""
    return estimates(RESULTS.read_text())
