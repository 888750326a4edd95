"""TensorRT-LLM performance-overview tables -> rows of ``service/data/calibration.csv``.

The markdown of ``docs/source/performance/perf-overview.md`` of several TensorRT-LLM releases is
kept next to this script (``bench/data/perf_overview/*.md``, provenance in its README.md). This
script reads their throughput tables and writes one calibration row per table cell:

* both layouts: the old one (v0.10 to v0.17: GPU and precision header rows, one row per model,
  TP size and ISL/OSL) and the newer one (v0.19 on: one section per model and precision, GPU and
  TP size header rows, one row per ISL/OSL);
* the engine label is the version the tables say they were produced with ("All data in the
  table below was generated using version X", or "The data collected for the vX benchmarks");
* GPUs and models gpuplan cannot map are skipped and counted: GH200 is not in the catalog (its
  v0.15 and v0.17 columns were measured with gptManagerBenchmark, not trtllm-bench, as those
  pages say); so are numbers whose ISL + OSL exceed the model's context window (GPT-J, Falcon,
  Llama 2 at the longer lengths), which gpuplan refuses to estimate;
* a number that another release's table repeats (same GPU, TP, model, precision, ISL, OSL and
  value) is one measurement printed twice: only the earliest release keeps it;
* v0.14.0 is already in the csv (the first calibration's rows, kept as they are): its table is
  parsed only to check that every one of those rows is a cell of it, and to find copies of its
  numbers in later releases; the csv's v1.0 rows count as present for the same purpose.

Usage::

    .venv/bin/python bench/data/perf_overview_rows.py           # rewrite the releases' rows
    .venv/bin/python bench/data/perf_overview_rows.py --check   # exit 1 if the csv differs

The default mode replaces the rows of the releases this script writes, in place: every other
row keeps its place and order; the generated rows follow the last other TensorRT-LLM row.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._calibration_data import GPU_LABELS  # noqa: E402
from service.domain.llm import resolve_model  # noqa: E402

DATA_DIR = Path(__file__).resolve().parent / "perf_overview"
CALIBRATION_CSV = ROOT / "service" / "data" / "calibration.csv"

COLUMNS = (
    "gpu", "gpu_count", "tp", "model", "params_b", "precision", "engine", "input_len",
    "output_len", "concurrency", "metric", "value", "source", "note",
)  # fmt: skip
METRIC = "output_tokens_per_s_total"
DOC_PATH = "docs/source/performance/perf-overview.md"

TRT_CONCURRENCY = "max (offline, infinite request rate, in-flight batching)"
PYTORCH_CONCURRENCY = "max (offline, infinite request rate)"
FIXED_LENGTHS = "synthetic fixed ISL/OSL"


# ---------------------------------------------------------------------------------------------
# releases
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Release:
    """One saved perf-overview.md and how its rows are labelled.

    ``version`` is the release the file's tables state; ``write`` is False for a release whose
    rows the csv already holds from elsewhere (checked, not rewritten).
    """

    file: str
    version: str
    source: str
    harness: str
    concurrency: str
    scope: str
    write: bool = True

    @property
    def engine(self) -> str:
        """The csv's engine label: ``TensorRT-LLM v0.15.0``."""
        return f"TensorRT-LLM v{self.version}"


def _nvidia(commit: str, version: str) -> str:
    return f"github:NVIDIA/TensorRT-LLM@{commit} {DOC_PATH} (v{version} revision)"


def _nvidia_unpinned(version: str, file_id: str) -> str:
    return (
        f"github:NVIDIA/TensorRT-LLM {DOC_PATH} (v{version} revision; commit not identified, "
        f"stored index file id {file_id}; copy in bench/data/perf_overview/)"
    )


_TRT = "TensorRT engine"
_GPTMANAGER = "gptManagerBenchmark IFB, TensorRT engine"
_TRTLLM_BENCH = f"trtllm-bench throughput, {_TRT}"

RELEASES: tuple[Release, ...] = (
    Release(
        file="v0.10.0.md", version="0.10.0", source=_nvidia_unpinned("0.10.0", "5853938931"),
        harness=f"{_GPTMANAGER} (max_utilization scheduler, KV 0.9 of free memory, chunked "
        "context, streaming)",
        concurrency=TRT_CONCURRENCY, scope="total across all TP GPUs",
    ),
    Release(
        file="v0.11.0.md", version="0.11.0",
        source=_nvidia("74238417a172aea1fbb9d0b3c7c6e8a6a0f129f1", "0.11.0"),
        harness=f"{_GPTMANAGER} (guaranteed_no_evict scheduler, KV 0.99 of free memory, "
        "chunked context)",
        concurrency=TRT_CONCURRENCY, scope="total across all TP GPUs",
    ),
    Release(
        file="v0.12.0.md", version="0.12.0",
        source=_nvidia("31ac30e928a2db795799fdcab6be446bfa3a3998", "0.12.0"),
        harness=_TRTLLM_BENCH, concurrency=TRT_CONCURRENCY, scope="total across all TP GPUs",
    ),
    Release(
        file="v0.13.0.md", version="0.13.0", source=_nvidia_unpinned("0.13.0", "5856956924"),
        harness=_TRTLLM_BENCH, concurrency=TRT_CONCURRENCY, scope="total across all TP GPUs",
    ),
    Release(
        file="v0.14.0.md", version="0.14.0",
        source="github:NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (v0.14.0 "
        "revision) read via fork arthurrasmusson/TensorRT-LLM@"
        "e00d4e6564921307dd264b61fe1d46f116095e0e",
        harness="trtllm-bench throughput", concurrency=TRT_CONCURRENCY,
        scope="total across all TP GPUs", write=False,
    ),
    Release(
        file="v0.15.0.md", version="0.15.0",
        source=_nvidia("aaacc9bd68b3e839fd25a0c7a80964d9b393ac99", "0.15.0"),
        harness=_TRTLLM_BENCH, concurrency=TRT_CONCURRENCY, scope="total across all TP GPUs",
    ),
    Release(
        file="v0.17.md", version="0.17",
        source=_nvidia("258c7540c03517def55d9a5aadfa9288af474e1b", "0.17"),
        harness=_TRTLLM_BENCH, concurrency=TRT_CONCURRENCY, scope="total across all TP GPUs",
    ),
    Release(
        file="v0.20.md", version="0.20", source=_nvidia_unpinned("0.20", "8901493438"),
        harness="trtllm-bench throughput, PyTorch backend", concurrency=PYTORCH_CONCURRENCY,
        scope="total across all GPUs",
    ),
    Release(
        file="v0.21.md", version="0.21", source=_nvidia_unpinned("0.21", "2488042217"),
        harness="trtllm-bench throughput, PyTorch backend", concurrency=PYTORCH_CONCURRENCY,
        scope="total across all GPUs",
    ),
)  # fmt: skip

# Releases whose rows the csv holds and this script does not write (copies are looked up there).
PRESENT_ENGINES = ("TensorRT-LLM v1.0",)

# ---------------------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------------------

# Table GPU header -> the csv's GPU label (bench/_calibration_data.py GPU_LABELS), or None.
GPU_NAMES: dict[str, str | None] = {
    "H200 141GB HBM3": "H200-SXM-141GB",
    "H200": "H200-SXM-141GB",  # v0.21: "H200 SXM 141GB (DGX H200)"
    "H100 80GB HBM3": "H100-SXM-80GB",
    "H100": "H100-SXM-80GB",  # v0.21: "H100 SXM 80GB (DGX H100)"
    "A100-SXM4-80GB": "A100-SXM4-80GB",
    "A100-PCIE-80GB": "A100-PCIe-80GB",
    "L40S": "L40S",
    "B200": "B200-SXM-180GB",  # v0.21: "B200 180GB (DGX B200)"
    "GB200": "GB200-192GB",  # v0.21: "GB200 192GB (GB200 NVL72)"
    # GH200 (v0.11 "120GB", v0.15 "96GB HBM3 CG1", v0.17 "480GB", v0.21 "96GB HBM3 (480GB
    # LPDDR5X)"): skipped while the catalog has no GH200. Mapping them needs a GPU label in
    # bench/_calibration_data.py, and v0.15/v0.17 GH200 rows a note that those columns were
    # measured with gptManagerBenchmark (engines from trtllm-bench build), as those pages say.
    "GH200 120GB": None,
    "GH200 96GB HBM3 CG1": None,
    "GH200 480GB": None,
    "GH200": None,
}
SKIP_GH200 = "gpu: GH200 (Grace Hopper) not in gpuplan's catalog"


@dataclass(frozen=True, slots=True)
class Model:
    """The csv's model label (resolves to a preset), nominal size and note."""

    label: str
    params_b: str
    note: str = ""


MODELS: dict[str, Model] = {
    "GPTJ 6B": Model("GPT-J-6B", "6"),
    "LLaMA v2 7B": Model("Llama-2-7B", "7"),
    "LLaMA v2 70B": Model("Llama-2-70B", "70"),
    "LLaMA v3 8B": Model("Llama-3-8B", "8"),
    "LLaMA v3 70B": Model("Llama-3-70B", "70"),
    "LLaMA v3.1 8B": Model("Llama-3.1-8B", "8"),
    "LLaMA v3.1 70B": Model("Llama-3.1-70B", "70"),
    "LLaMA v3.1 405B": Model("Llama-3.1-405B", "405"),
    "Llama 3.1 8B": Model("Llama-3.1-8B", "8"),
    "Llama 3.3 70B": Model("Llama-3.3-70B", "70"),
    "Llama 3.1 405B": Model("Llama-3.1-405B", "405"),
    "Llama 4 Maverick": Model("Llama-4-Maverick-17B-128E", "400", "MoE 17B active"),
    "Mistral 7B": Model("Mistral-7B", "7.3"),
    "Mixtral 8x7B": Model("Mixtral-8x7B", "46.7", "MoE ~12.9B active"),
    "Mixtral 8x22B": Model("Mixtral-8x22B", "141", "MoE ~39B active"),
    "Falcon 180B": Model("Falcon-180B", "180"),
}

PRECISIONS: dict[str, str] = {"FP8": "fp8", "FP16": "fp16", "FP4": "fp4", "Mixed": "fp16"}
MIXED_NOTE = "table precision 'Mixed' (unquantized FP16/BF16), stored as fp16"

# v0.19 on: the ModelOpt checkpoint each model section was measured with (listed in the page).
CHECKPOINTS: dict[tuple[str, str], str] = {
    ("Llama 3.3 70B", "FP4"): "nvidia/Llama-3.3-70B-Instruct-FP4",
    ("Llama 3.1 405B", "FP4"): "nvidia/Llama-3.1-405B-Instruct-FP4",
    ("Llama 3.1 8B", "FP8"): "nvidia/Llama-3.1-8B-Instruct-FP8",
    ("Llama 3.3 70B", "FP8"): "nvidia/Llama-3.3-70B-Instruct-FP8",
    ("Llama 3.1 405B", "FP8"): "nvidia/Llama-3.1-405B-Instruct-FP8",
    ("Llama 4 Maverick", "FP8"): "nvidia/Llama-4-Maverick-17B-128E-Instruct-FP8",
}


# ---------------------------------------------------------------------------------------------
# markdown tables
# ---------------------------------------------------------------------------------------------


class TableError(ValueError):
    """A throughput table this script cannot read as it expects."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One number of a throughput table, with the labels of its row and column."""

    model: str
    precision: str
    gpu: str
    tp: int
    isl: int
    osl: int
    value: str


_VERSION_STATED = re.compile(
    r"All data in the table below was generated using version (\d+\.\d+(?:\.\d+)?) and "
    r"presents token throughput|The data collected for the v(\d+\.\d+(?:\.\d+)?) benchmarks"
)


def stated_version(text: str) -> str:
    """The release the page's throughput tables say they were produced with."""
    found: set[str] = {m.group(1) or m.group(2) for m in _VERSION_STATED.finditer(text)}
    if len(found) != 1:
        raise TableError(f"expected one stated version, found {sorted(found)}")
    return found.pop()


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [c.strip().replace("**", "").strip() for c in body.split("|")]


def _is_rule(cells: Sequence[str]) -> bool:
    return all(re.fullmatch(r":?-+:?", c) for c in cells if c) and any(cells)


def _throughput_section(text: str) -> list[str]:
    """Lines from '## Throughput Measurements' to the next level-2 heading."""
    lines = text.splitlines()
    start = next(
        (i for i, ln in enumerate(lines) if ln.strip() == "## Throughput Measurements"), None
    )
    if start is None:
        raise TableError("no '## Throughput Measurements' section")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1 : end]


def _tables(lines: Sequence[str]) -> Iterator[tuple[str, list[list[str]]]]:
    """``(last '####' heading, rows)`` for each table (rules dropped)."""
    heading = ""
    rows: list[list[str]] = []
    for line in [*lines, ""]:
        if line.lstrip().startswith("|"):
            cells = _cells(line)
            if not _is_rule(cells):
                rows.append(cells)
            continue
        if rows:
            yield heading, rows
            rows = []
        if line.startswith("#### "):
            heading = line[5:].strip()


def _lengths(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\s*[/,]\s*(\d+)", text)
    if m is None:
        raise TableError(f"unreadable ISL/OSL {text!r}")
    return int(m.group(1)), int(m.group(2))


def _number(text: str) -> str | None:
    """The table's number without thousands separators, or None for an empty cell."""
    t = text.replace(",", "").strip()
    if not t:
        return None
    try:
        Decimal(t)
    except InvalidOperation as err:
        raise TableError(f"unreadable number {text!r}") from err
    return t


def _filled(values: Sequence[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.append(v or (out[-1] if out else ""))
    return out


def _row_named(rows: Sequence[Sequence[str]], *names: str) -> int:
    for i, r in enumerate(rows):
        if any(c.rstrip(":") in names for c in r):
            return i
    raise TableError(f"no header row naming {names}")


def _old_layout(rows: list[list[str]]) -> Iterator[Cell]:
    """GPU row, precision row, a 'Model' row naming the key columns, then one row per
    (model, TP, ISL/OSL) with one number per GPU column; blank key cells repeat the row above."""
    gpu_row = rows[_row_named(rows, "GPU")]
    prec_row = rows[_row_named(rows, "Precision")]
    key_i = _row_named(rows, "Model")
    header = rows[key_i]
    col = {name: i for i, name in enumerate(header) if name}
    i_model = col["Model"]
    i_tp = next(i for n, i in col.items() if n in ("TP", "TP Size", "Tensor Model Parallel Size"))
    i_len = next(
        i for n, i in col.items() if n in ("Input/Output Lengths", "Runtime Input/Output Lengths")
    )
    first = max(i_model, i_tp, i_len) + 1
    width = max(len(gpu_row), len(prec_row))
    gpus = _filled([*gpu_row, *[""] * width][first:width])
    precs = _filled([*prec_row, *[""] * width][first:width])
    model = tp = lengths = ""
    for raw in rows[key_i + 1 :]:
        r = [*raw, *[""] * (width - len(raw))]
        model, tp, lengths = r[i_model] or model, r[i_tp] or tp, r[i_len] or lengths
        if not (model and tp and lengths):
            raise TableError(f"row without model, TP or lengths: {raw}")
        isl, osl = _lengths(lengths)
        for gpu, prec, text in zip(gpus, precs, r[first:width], strict=True):
            value = _number(text)
            if value is not None:
                yield Cell(model, prec, gpu, int(tp), isl, osl, value)


_SECTION = re.compile(r"^(?P<model>.+?) (?P<prec>FP4|FP8|FP16|BF16)$")


def _new_layout(heading: str, rows: list[list[str]]) -> Iterator[Cell]:
    """A '#### <model> <precision>' section: GPU row, TP Size row, then one row per ISL/OSL."""
    m = _SECTION.match(heading)
    if m is None:
        raise TableError(f"section heading without model and precision: {heading!r}")
    gpu_row = rows[_row_named(rows, "GPU")]
    tp_i = _row_named(rows, "TP Size")
    tp_row = rows[tp_i]
    first = 2
    gpus = _filled(gpu_row[first:])
    tps = tp_row[first:]
    for r in rows[tp_i + 1 :]:
        if not r[0] or r[0] in ("ISL, OSL", "Runtime Input/Output Lengths"):
            continue
        isl, osl = _lengths(r[0])
        for gpu, tp, text in zip(gpus, tps, r[first:], strict=False):
            value = _number(text)
            if value is not None:
                yield Cell(m.group("model"), m.group("prec"), gpu, int(tp), isl, osl, value)


def parse_cells(text: str) -> list[Cell]:
    """Every number of the page's throughput tables, in table order."""
    out: list[Cell] = []
    for heading, rows in _tables(_throughput_section(text)):
        flat = [c.rstrip(":") for r in rows for c in r]
        if "Precision" in flat:
            out += _old_layout(rows)
        elif "TP Size" in flat:
            out += _new_layout(heading, rows)
    if not out:
        raise TableError("no throughput table")
    return out


# ---------------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CsvRow:
    """One calibration.csv row (all cells as text, in ``COLUMNS`` order)."""

    cells: tuple[str, ...]

    def __getitem__(self, column: str) -> str:
        return self.cells[COLUMNS.index(column)]

    @property
    def measurement(self) -> tuple[object, ...]:
        """What identifies one measured number across releases."""
        return (
            self["gpu"], self["tp"], self["model"], self["precision"], self["input_len"],
            self["output_len"], Decimal(self["value"]),
        )  # fmt: skip


@dataclass
class Plan:
    """The rows each release contributes and what was left out, with reasons."""

    rows: dict[str, list[CsvRow]] = field(default_factory=dict)
    parsed: Counter[str] = field(default_factory=Counter)
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)
    copies: Counter[tuple[str, str]] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)


def _row(release: Release, cell: Cell) -> CsvRow | str:
    """The csv row for one table cell, or a skip reason."""
    if cell.gpu not in GPU_NAMES:
        return f"gpu: unknown table header {cell.gpu!r}"
    gpu = GPU_NAMES[cell.gpu]
    if gpu is None:
        return SKIP_GH200
    if gpu not in GPU_LABELS:
        return f"gpu: {gpu} has no catalog id in bench/_calibration_data.py"
    model = MODELS.get(cell.model)
    if model is None:
        return f"model: no gpuplan preset for {cell.model!r}"
    precision = PRECISIONS.get(cell.precision)
    if precision is None:
        return f"precision: unknown {cell.precision!r}"
    window = resolve_model(model.label).arch.max_context
    if cell.isl + cell.osl > window:
        return (
            f"lengths: ISL+OSL over {model.label}'s {window}-token context window "
            "(gpuplan rejects the request)"
        )
    notes = [release.harness, FIXED_LENGTHS, release.scope]
    if cell.precision == "Mixed":
        notes.append(MIXED_NOTE)
    checkpoint = CHECKPOINTS.get((cell.model, cell.precision))
    if checkpoint is not None:
        notes.append(f"{checkpoint} checkpoint")
    if model.note:
        notes.append(model.note)
    return CsvRow(
        (
            gpu, str(cell.tp), str(cell.tp), model.label, model.params_b, precision,
            release.engine, str(cell.isl), str(cell.osl), release.concurrency, METRIC,
            cell.value, release.source, "; ".join(notes),
        )
    )  # fmt: skip


def _read_release(release: Release) -> list[Cell]:
    """The numbers of one saved page, after checking the version its tables state."""
    text = (DATA_DIR / release.file).read_text(encoding="utf-8")
    stated = stated_version(text)
    if stated != release.version:
        raise TableError(f"{release.file}: tables say version {stated}, not {release.version}")
    for (model, prec), checkpoint in CHECKPOINTS.items():
        if f"#### {model} {prec}" in text and checkpoint not in text:
            raise TableError(f"{release.file}: checkpoint {checkpoint} not named")
    return parse_cells(text)


def build_plan(existing: Sequence[CsvRow]) -> Plan:
    """Rows of every written release, copies of earlier releases' numbers removed; ``existing``
    (the csv's rows) supplies the rows of releases this script does not write."""
    plan = Plan()
    seen: dict[tuple[object, ...], str] = {}
    for release in RELEASES:
        cells = _read_release(release)
        plan.parsed[release.engine] = len(cells)
        rows: list[CsvRow] = []
        for cell in cells:
            row = _row(release, cell)
            if isinstance(row, str):
                plan.skipped[(release.engine, row)] += 1
            else:
                rows.append(row)
        if not release.write:
            _check_reference(release, rows, existing, plan)
        kept: list[CsvRow] = []
        for row in rows:
            first = seen.setdefault(row.measurement, release.engine)
            if first != release.engine:
                plan.copies[(release.engine, first)] += 1
            else:
                kept.append(row)
        if release.write:
            plan.rows[release.engine] = kept
    written = {r.engine for r in RELEASES if r.write}
    for row in existing:
        if row["engine"] in PRESENT_ENGINES and row.measurement in seen:
            first = seen[row.measurement]
            if first in written:
                plan.problems.append(
                    f"{row['engine']} row repeats a {first} number: {row.cells[:12]}"
                )
    return plan


def _check_reference(
    release: Release, rows: Sequence[CsvRow], existing: Sequence[CsvRow], plan: Plan
) -> None:
    """Every csv row of a release this script does not write must be a cell of its table."""
    table = {r.measurement for r in rows}
    present = [r for r in existing if r["engine"] == release.engine]
    if not present:
        plan.problems.append(f"{release.engine}: no rows in the csv to check")
    for r in present:
        if r.measurement not in table:
            plan.problems.append(f"{release.engine} row not in its table: {r.cells[:12]}")


# ---------------------------------------------------------------------------------------------
# csv
# ---------------------------------------------------------------------------------------------


def read_csv(text: str) -> tuple[list[str], list[CsvRow]]:
    """Header and rows of calibration.csv text."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader)
    if tuple(header) != COLUMNS:
        raise TableError(f"unexpected calibration.csv header {header}")
    return header, [CsvRow(tuple(r)) for r in reader]


def render(text: str, plan: Plan) -> str:
    """calibration.csv text with the written releases' rows replaced by ``plan``'s: other rows
    keep their order; the generated rows follow the last other TensorRT-LLM row."""
    header, rows = read_csv(text)
    written = set(plan.rows)
    kept = [r for r in rows if r["engine"] not in written]
    trt = [i for i, r in enumerate(kept) if r["engine"].startswith("TensorRT-LLM")]
    at = trt[-1] + 1 if trt else len(kept)
    new = [r for release in RELEASES for r in plan.rows.get(release.engine, [])]
    out = io.StringIO(newline="")
    writer = csv.writer(out)  # calibration.csv: minimal quoting, CRLF line ends
    writer.writerow(header)
    writer.writerows(r.cells for r in [*kept[:at], *new, *kept[at:]])
    return out.getvalue()


def _summary(plan: Plan) -> Iterable[str]:
    for release in RELEASES:
        name = release.engine
        rows = plan.rows.get(name, [])
        by_gpu = Counter(r["gpu"] for r in rows)
        state = "written" if release.write else "in the csv, checked only"
        gpus = ", ".join(f"{g} {n}" for g, n in sorted(by_gpu.items()))
        yield f"{name}: {plan.parsed[name]} table numbers; {state}: {len(rows)} rows ({gpus})"
        for (rel, reason), n in sorted(plan.skipped.items()):
            if rel == name:
                yield f"    skipped {n}: {reason}"
        for (rel, first), n in sorted(plan.copies.items()):
            if rel == name:
                yield f"    dropped {n}: copies of {first} numbers"
    total = sum(len(v) for v in plan.rows.values())
    yield f"total written rows: {total}; dropped copies: {sum(plan.copies.values())}"


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite calibration.csv, or with ``--check`` report whether it is current."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if calibration.csv is not what this writes"
    )
    args = parser.parse_args(argv)
    text = read_calibration()
    plan = build_plan(read_csv(text)[1])
    for line in _summary(plan):
        print(line)
    for problem in plan.problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    if plan.problems:
        return 1
    wanted = render(text, plan)
    if args.check:
        if wanted != text:
            print(f"{CALIBRATION_CSV} differs from the perf-overview tables; rerun without --check")
            return 1
        print(f"{CALIBRATION_CSV} is current")
        return 0
    if wanted != text:
        with CALIBRATION_CSV.open("w", encoding="utf-8", newline="") as fh:
            fh.write(wanted)
        print(f"rewrote {CALIBRATION_CSV}")
    return 0


def read_calibration() -> str:
    """calibration.csv as it is on disk (line ends kept)."""
    with CALIBRATION_CSV.open(encoding="utf-8", newline="") as fh:
        return fh.read()


if __name__ == "__main__":
    sys.exit(main())
