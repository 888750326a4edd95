"""README benchmark figures read from bench/RESULTS.md: the parser on a small file of the same
shape, its errors, and the README against the committed RESULTS.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service import readme_bench, readme_tables
from service.readme_bench import BenchResultsError
from service.readme_examples import README, diff, main

RESULTS = """\
# Benchmark results

Machine for this run:

- CPU: Test CPU, 3 cores
- RAM: 7.5 GiB

## Uncached plan latency and scaling

Machine: x86_64, 3 cores, Python 3.11.9.
Model m-1 fp8, real catalog: 5 GPUs, 1234 on-demand offers, 56 left after pruning offers
dominated on price.

| case | plans | p50 ms | p99 ms | max ms | CPU ms |
| --- | ---: | ---: | ---: | ---: | ---: |
| real catalog, 1 bucket(s), cold | 10 | 11.0 | 12.0 | 13.0 | 14.0 |
| real catalog, 4 bucket(s), cold | 10 | 41.0 | 42.0 | 43.0 | 44.0 |
| real catalog, 4 bucket(s), warm | 10 | 31.0 | 32.0 | 33.0 | 34.0 |

### Catalog growth (4 buckets, cold)

| catalog | GPU types | offers | after pruning | plans | p50 ms | p99 ms | max ms |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1x | 5 | 1234 | 56 | 10 | 40.0 | 45.0 | 46.0 |
| 3x | 15 | 3702 | 168 | 10 | 90.5 | 99.5 | 99.9 |

### Request buckets (real catalog, cold)

| buckets | plans | p50 ms | p99 ms | max ms |
| ---: | ---: | ---: | ---: | ---: |
| 1 | 5 | 10.0 | 11.0 | 11.0 |
| 6 | 5 | 60.0 | 66.0 | 66.0 |

## Cost of one estimate

Machine: x86_64, 3 cores, Python 3.11.9.

| model | GPU | TP | call | calls | CPU us/call | calls/s (1 core) |
| --- | --- | ---: | --- | ---: | ---: | ---: |
| m-1 | g1 | 1 | estimate (peak) | 10 | 30.5 | 32,787 |
| m-1 | g1 | 1 | max_qps_under_slo | 10 | 100.0 | 10,000 |
| m-2 | g2 | 2 | estimate (peak) | 10 | 9.5 | 105,263 |
| m-2 | g2 | 2 | max_qps_under_slo | 10 | 100.0 | 10,000 |

## Fleet-solver scaling

```text
# not a heading: inside a code block
options  kept
```

## Served throughput: cached plans vs /healthz

| backend | logging | endpoint | requests | req/s | p50 ms | check |
| --- | --- | --- | ---: | ---: | ---: | --- |
| B1 | INFO | (a) POST /v1/plans, cached | 100 | 1,000 | 1.0 | ok |
| B1 | INFO | (b) GET /v1/plan?..., cached | 90 | 900 | 1.0 | ok |
| B1 | INFO | (c) GET /healthz | 200 | 2,000 | 1.0 | ok |
| B1 | WARNING | (a) POST /v1/plans, cached | 120 | 1,200 | 1.0 | ok |
| B1 | WARNING | (b) GET /v1/plan?..., cached | 110 | 1,100 | 1.0 | ok |
| B1 | WARNING | (c) GET /healthz | 300 | 3,000 | 1.0 | ok |

| backend | logging | (a)/(c) POST cached / healthz | (b)/(c) GET cached / healthz |
| --- | --- | ---: | ---: |
| B1 | INFO | 0.50 (meets target 0.5) | 0.45 |
| B1 | WARNING | 0.40 (BELOW target 0.5) | 0.37 |

## Server memory under distinct plans

| plans sent | server misses | server hits | RSS MiB | growth since start MiB | peak RSS MiB |
| ---: | ---: | ---: | ---: | ---: | ---: |
| 0 (ready) | 0 | 0 | 100.0 | 0.0 | 100.0 |
| 500 | 500 | 0 | 110.0 | +10.0 | 110.0 |
| 1,000 | 1,000 | 0 | 111.0 | +11.0 | 111.0 |
| 2,000 (extension) | 2,000 | 0 | 112.5 | +12.5 | 112.5 |

- Plan-cache size: the cache holds the newest 300 plans, whose JSON bodies total 1.2 MiB (mean).
- RSS growth over the second half (500 to 1,000 plans): +1.0 MiB, against +10.0 MiB.
- Helper processes below the server: 3 at start, PSS 150.0 MiB; 3 at the end, PSS 160.5 MiB.

## Uncached curve cost

| request | plan curve (s) | whole chart (s) | series | solves / points | cost vs SLO (s) |
|---|---:|---:|---:|---:|---:|
| README plan request (m-1, 2 shapes) | 0.100 | 0.900 | 4 | 50 / 80 | 0.050 |
| m-2, one shape | 0.200 | 0.300 | 2 | 20 / 40 | 0.060 |

## Kernel terms vs forward passes timed on a GPU

### NVIDIA H100 80GB HBM3

Card ceilings on the same machine: 4 GB sum: 3000 GB/s (bf16); 8192^3 GEMM: 790 TFLOP/s (bf16).

| engine | bf16 decode | bf16 prefill >= 512 tokens |
| --- | ---: | ---: |
| e-1 | 1.30 (1.10-1.40) | 1.10 (1.00-1.20) |

| model | step | measured ms | e-1 ms (x) |
| --- | --- | ---: | ---: |
| m-1 bf16 | decode b=1 ctx=512 | 6.50 | 8.45 (1.30) |

### NVIDIA H200

Card ceilings on the same machine: 4 GB sum: 4000 GB/s (bf16); 8192^3 GEMM: 700 TFLOP/s (bf16).

| engine | bf16 decode | bf16 prefill >= 512 tokens |
| --- | ---: | ---: |
| e-1 | 0.90 (0.80-1.00) | 1.50 (1.40-1.60) |

| model | step | measured ms | e-1 ms (x) |
| --- | --- | ---: | ---: |
| m-1 bf16 | decode b=1 ctx=512 | 5.00 | 4.50 (0.90) |
"""


def measured(summary: str, what: str) -> str:
    """The ``measured`` cell of the summary row whose ``what`` starts with ``what``."""
    [cell] = [
        line.split(" | ")[1].removesuffix(" |")
        for line in summary.splitlines()
        if line.startswith(f"| {what}")
    ]
    return cell


def test_summary_cites_each_figure_as_the_results_print_it() -> None:
    summary = readme_bench.summary(RESULTS)
    assert summary.startswith("Machine: Test CPU, 3 cores; 7.5 GiB of RAM.\n")
    assert measured(summary, "cached `POST") == (
        "B1: 1,000 vs 2,000 req/s, ratio 0.50 (meets target 0.5); cached `GET /v1/plan` 0.45"
    )
    assert measured(summary, "the same with WARNING") == (
        "B1: 1,200 vs 3,000 req/s, ratio 0.40 (BELOW target 0.5); cached `GET /v1/plan` 0.37"
    )
    assert (
        "| uncached plan, m-1 fp8, real catalog (5 GPUs, 1234 offers, 56 after pruning), "
        "4 buckets | p50 41.0 ms / p99 42.0 ms (cold: new shapes), p50 31.0 ms / p99 32.0 ms "
        "(warm: recurring shapes); 44.0 ms of CPU per plan, helper process included (cold) |"
    ) in summary
    # the largest catalog and the most buckets: the last rows of their tables
    assert (
        "| catalog grown to 3x (15 GPU types, 3702 offers), 4 buckets, cold | p50 90.5 ms / "
        "p99 99.5 ms; 6 buckets on the real catalog: p50 60.0 ms / p99 66.0 ms |"
    ) in summary
    # 80 points over 4 series: 20 per curve; the plan's own curve and 3 single-type curves
    assert (
        "| 20-point cost-vs-load curve, README plan request | the plan's own curve 0.100 s; "
        "the whole chart with its 3 single-type curves 0.900 s; cost vs SLO 0.050 s |"
    ) in summary
    # a range is the smallest and the largest cell, compared as numbers; equal cells give one
    assert measured(summary, "estimates") == (
        "`estimate (peak)` 9.5–30.5 µs; `max_qps_under_slo` 100.0 µs"
    )
    assert measured(summary, "server memory (RSS) over 1,000 distinct plans") == (
        "100.0 → 111.0 MiB (+11.0); +1.0 MiB over the second half (500 to 1,000 plans); "
        "112.5 MiB at 2,000 (extension). The plan cache holds the newest 300 plans (1.2 MiB). "
        "Beside the server, its 3 helper processes: PSS 150.0 → 160.5 MiB"
    )


def test_plan_latency_copies_the_real_catalog_rows() -> None:
    lines = readme_bench.plan_latency(RESULTS).splitlines()
    assert lines[0].startswith(
        "Model m-1 fp8; bundled catalog: 5 GPUs, 1234 on-demand offers, 56 after pruning "
        "(what the MILP sees). Machine: x86_64, 3 cores, Python 3.11.9."
    )
    assert lines[4:] == [
        "| real catalog, 1 bucket(s), cold | 10 | 11.0 | 12.0 | 13.0 | 14.0 |",
        "| real catalog, 4 bucket(s), cold | 10 | 41.0 | 42.0 | 43.0 | 44.0 |",
        "| real catalog, 4 bucket(s), warm | 10 | 31.0 | 32.0 | 33.0 | 34.0 |",
    ]


def test_estimates_sentence_counts_the_model_gpu_pairs() -> None:
    assert readme_bench.estimates(RESULTS) == (
        "CPU per call over 2 model/GPU pairs (machine: x86_64, 3 cores, Python 3.11.9): "
        "`estimate (peak)` 9.5–30.5 µs; `max_qps_under_slo` 100.0 µs.\n"
    )


def test_gpu_kernels_copies_the_ceilings_and_the_engine_summary() -> None:
    assert readme_bench.gpu_kernels(RESULTS).splitlines() == [
        "NVIDIA H100 80GB HBM3: ceilings measured on the card: 4 GB sum: 3000 GB/s (bf16); "
        "8192^3 GEMM: 790 TFLOP/s (bf16). Model kernel time / measured, median (range):",
        "",
        "| engine | bf16 decode | bf16 prefill >= 512 tokens |",
        "| --- | ---: | ---: |",
        "| e-1 | 1.30 (1.10-1.40) | 1.10 (1.00-1.20) |",
        "",
        "NVIDIA H200: ceilings measured on the card: 4 GB sum: 4000 GB/s (bf16); "
        "8192^3 GEMM: 700 TFLOP/s (bf16). Model kernel time / measured, median (range):",
        "",
        "| engine | bf16 decode | bf16 prefill >= 512 tokens |",
        "| --- | ---: | ---: |",
        "| e-1 | 0.90 (0.80-1.00) | 1.50 (1.40-1.60) |",
    ]


def test_a_heading_inside_a_code_block_does_not_end_the_section() -> None:
    body = readme_bench.section(RESULTS, "Fleet-solver scaling")
    assert "# not a heading" in body and "Served throughput" not in body
    # a section runs to the next heading of its level, its subsections included
    assert "| 6 | 5 |" in readme_bench.section(RESULTS, "Uncached plan latency and scaling")


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (
            RESULTS.replace("## Uncached curve cost", "## Curve cost"),
            "expected one section 'Uncached curve cost', found 0",
        ),
        (
            RESULTS.replace("| RSS MiB |", "| RSS KiB |"),
            "section 'Server memory under distinct plans': no table with the column(s) "
            "'plans sent', 'RSS MiB'",
        ),
        (
            RESULTS.replace("| (a)/(c) POST cached / healthz |", "| POST / healthz |"),
            "section 'Served throughput: cached plans vs /healthz': no table with the column(s) "
            "'backend', 'logging', '(a)/(c) POST cached / healthz'",
        ),
        (
            RESULTS.replace("real catalog, 4 bucket(s), warm", "real catalog, 4 buckets, warm"),
            "section 'Uncached plan latency and scaling': expected one row with case = "
            "'real catalog, 4 bucket(s), warm', found 0",
        ),
        (
            RESULTS.replace("| 1,000 | 1,000 | 0 | 111.0 |", "| 1,000 | 1,000 | 0 |  |"),
            "does not fill the 6 columns of plans sent | server misses",
        ),
        (
            RESULTS.replace("RSS growth over the second half", "RSS growth later"),
            "section 'Server memory under distinct plans': no text matching",
        ),
        (
            RESULTS.replace("| B1 | WARNING | (c) GET /healthz |", "| B1 | WARNING | (d) x |"),
            "section 'Served throughput: cached plans vs /healthz': no B1, WARNING, (c) row",
        ),
        (
            RESULTS.replace("| 4 | 50 / 80 |", "| 3 | 50 / 80 |"),
            "section 'Uncached curve cost': 80 points is not a whole number of points",
        ),
        (
            RESULTS.replace("- RAM: 7.5 GiB\n", ""),
            "section 'Benchmark results': no text matching",
        ),
    ],
)
def test_a_missing_section_column_row_or_figure_fails_naming_it(broken: str, message: str) -> None:
    with pytest.raises(BenchResultsError, match=re.escape(message)):
        readme_bench.summary(broken)


def test_readme_benchmark_figures_are_those_of_the_committed_results() -> None:
    current = README.read_text()
    names = re.findall(r"<!-- table:(bench-[a-z-]+) -->", current)
    assert names == [
        "bench-plan-latency",
        "bench-gpu-kernels",
        "bench-estimates",
        "bench-summary",
    ]
    changes = diff(current, readme_tables.rewrite(current))
    assert changes == "", f"README tables drifted; run `make readme`:\n{changes}"


def test_make_readme_stops_with_the_parse_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text(RESULTS.replace("## Cost of one estimate", "## Estimates"))
    monkeypatch.setattr(readme_bench, "RESULTS", results)
    readme = tmp_path / "README.md"
    text = "# Figures\n\n<!-- table:bench-estimates -->\nstale\n<!-- /table -->\n"
    readme.write_text(text)
    assert main(["--readme", str(readme)], out=print) == 2
    assert "expected one section 'Cost of one estimate', found 0" in capsys.readouterr().err
    assert readme.read_text() == text  # nothing written
