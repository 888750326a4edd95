"""calibration.csv's TensorRT-LLM release rows are what bench/data/perf_overview_rows.py reads
from the saved perf-overview pages: the csv cannot drift from the markdown, both table layouts
parse, and a number a later page repeats is kept once."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.data.perf_overview_rows import (
    DATA_DIR,
    RELEASES,
    Cell,
    TableError,
    build_plan,
    parse_cells,
    read_calibration,
    read_csv,
    render,
    stated_version,
)

STATED = (
    "**All data in the table below was generated using version 0.13.0 and presents token "
    "throughput in tokens/second.**"
)
OLD_LAYOUT = f"""\
## Throughput Measurements

{STATED}

|              |                          |               |                 |             |
| ------------ | ------------------------ | ------------- | --------------- | ----------- |
|              |                          | **GPU**       | H100 80GB HBM3  |             |
|              |                          | **Precision** | FP8             | Mixed       |
| **Model**    | **Input/Output Lengths** | **TP**        |                 |             |
| Mistral 7B   | 128/128                  | 1             | 30,152.19       | 16711.12    |
|              | 2048/128                 | 1             | 3,676.37        |             |
| Mixtral 8x7B | 128/128                  | 2             | 25,135.25       |             |
|              |                          | 4             |                 | 27,747.43   |

## Reproducing Benchmarked Results

| Stage | Command |
| :- | - |
| Run | `trtllm-bench` |
"""

NEW_LAYOUT = """\
## Throughput Measurements

The data collected for the v0.21 benchmarks was run with the following file:

#### Llama 3.3 70B FP4

|                          | GPU:   | B200     | GB200  |
|:-----------------------------|:---|:----------|:--------------|
|    | TP Size   | 1      | 1          |
| ISL, OSL |    |           |               |
|                              |    |           |               |
| 128, 128                     |    | 10,613.84 | 11,100.97     |
| 2048, 128                    |    |           | 1,418.47      |
"""


def test_calibration_csv_is_what_the_pages_give() -> None:
    text = read_calibration()
    plan = build_plan(read_csv(text)[1])
    assert plan.problems == []
    assert render(text, plan) == text


def test_old_layout_parses_gpu_precision_and_repeated_keys() -> None:
    assert parse_cells(OLD_LAYOUT) == [
        Cell("Mistral 7B", "FP8", "H100 80GB HBM3", 1, 128, 128, "30152.19"),
        Cell("Mistral 7B", "Mixed", "H100 80GB HBM3", 1, 128, 128, "16711.12"),
        Cell("Mistral 7B", "FP8", "H100 80GB HBM3", 1, 2048, 128, "3676.37"),
        Cell("Mixtral 8x7B", "FP8", "H100 80GB HBM3", 2, 128, 128, "25135.25"),
        Cell("Mixtral 8x7B", "Mixed", "H100 80GB HBM3", 4, 128, 128, "27747.43"),
    ]
    assert stated_version(OLD_LAYOUT) == "0.13.0"


def test_new_layout_parses_sections() -> None:
    assert parse_cells(NEW_LAYOUT) == [
        Cell("Llama 3.3 70B", "FP4", "B200", 1, 128, 128, "10613.84"),
        Cell("Llama 3.3 70B", "FP4", "GB200", 1, 128, 128, "11100.97"),
        Cell("Llama 3.3 70B", "FP4", "GB200", 1, 2048, 128, "1418.47"),
    ]
    assert stated_version(NEW_LAYOUT) == "0.21"


def test_unreadable_pages_are_refused() -> None:
    with pytest.raises(TableError):
        stated_version(OLD_LAYOUT + "\n" + NEW_LAYOUT)
    with pytest.raises(TableError):
        parse_cells(OLD_LAYOUT.replace("## Throughput Measurements", "## Results"))


def test_repeated_numbers_stay_with_the_earliest_release() -> None:
    plan = build_plan(read_csv(read_calibration())[1])
    # v0.21's Llama 4 Maverick table reprints v0.20's ("please use v0.20")
    v021 = next(r for r in RELEASES if r.version == "0.21")
    maverick = [
        c for c in parse_cells((DATA_DIR / v021.file).read_text(encoding="utf-8"))
        if c.model == "Llama 4 Maverick"
    ]  # fmt: skip
    assert maverick
    assert plan.copies[(v021.engine, "TensorRT-LLM v0.20")] == len(maverick)
    assert all(r["model"] != "Llama-4-Maverick-17B-128E" for r in plan.rows[v021.engine])
    keys = Counter(r.measurement for rows in plan.rows.values() for r in rows)
    assert max(keys.values()) == 1


def test_every_release_is_labelled_with_the_version_its_tables_state() -> None:
    for release in RELEASES:
        text = (DATA_DIR / release.file).read_text(encoding="utf-8")
        assert stated_version(text) == release.version
