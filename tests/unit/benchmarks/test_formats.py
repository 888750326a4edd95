"""Reading the benchmark tools' own result files (tests/fixtures/benchmarks/, provenance in
its README) into measurements, and refusing incomplete ones by name."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from service.domain.benchmarks import (
    Measurement,
    RunContext,
    detect_format,
    read_benchmark_file,
)
from service.domain.errors import InvalidInput

FIXTURES = Path(__file__).parents[2] / "fixtures" / "benchmarks"
VLLM = FIXTURES / "vllm-a100-qwen3-14b-in2000-out100.json"
A100 = RunContext(gpu="a100-sxm-80gb", tensor_parallel=1, engine_version="0.11.0", precision="bf16")


def gpu_ids(name: str) -> str:
    return name.lower()


def read(path: Path, context: RunContext = A100) -> tuple[str, list[Measurement]]:
    parsed = read_benchmark_file(path.read_text(), None, context, gpu_ids)
    return parsed.format, list(parsed.measurements)


def value(rows: list[Measurement], metric: str, stat: str = "mean") -> float:
    (match,) = [r.value for r in rows if r.metric == metric and r.stat == stat]
    return match


def test_a_vllm_result_gives_measured_mean_lengths_and_its_metrics() -> None:
    doc = json.loads(VLLM.read_text())
    fmt, rows = read(VLLM)
    assert fmt == "vllm"
    first = rows[0]
    # lengths are what was measured, not what the command line asked for
    assert first.prompt_tokens == pytest.approx(doc["total_input_tokens"] / doc["completed"])
    assert first.output_tokens == pytest.approx(doc["total_output_tokens"] / doc["completed"])
    assert first.output_tokens != 100
    assert (first.load, first.load_value) == ("burst", doc["completed"])  # request_rate inf
    assert first.model == "qwen3-14b" and first.engine == "vllm"  # backend "vllm"
    assert value(rows, "output_tokens_per_s") == doc["output_throughput"]
    assert value(rows, "tpot_ms", "p50") == doc["median_tpot_ms"]
    assert value(rows, "ttft_ms", "p99") == doc["p99_ttft_ms"]
    assert first.engine_version == "0.11.0" and first.gpu == "a100-sxm-80gb"


def test_a_vllm_result_with_a_concurrency_cap_is_a_closed_loop() -> None:
    doc = json.loads(VLLM.read_text())
    doc["max_concurrency"] = 64
    parsed = read_benchmark_file(json.dumps(doc), "vllm", A100, gpu_ids)
    assert {(m.load, m.load_value) for m in parsed.measurements} == {("concurrency", 64.0)}
    doc["request_rate"] = 2.5
    parsed = read_benchmark_file(json.dumps(doc), "vllm", A100, gpu_ids)
    assert {(m.load, m.load_value) for m in parsed.measurements} == {("rate", 2.5)}


def test_guidellm_report_gives_one_run_per_benchmark() -> None:
    fmt, rows = read(FIXTURES / "guidellm-report.json", RunContext(
        gpu="h100-sxm", tensor_parallel=1, engine="vllm", engine_version="0.11.0",
        precision="bf16",
    ))  # fmt: skip
    assert fmt == "guidellm"
    assert {(r.run, r.load, r.load_value) for r in rows} == {
        (0, "concurrency", 8.0),
        (1, "concurrency", 32.0),
    }
    run1 = [r for r in rows if r.run == 1]
    assert value(run1, "output_tokens_per_s") == 2458.0
    assert value(run1, "e2e_ms") == pytest.approx(3330.0)  # request_latency is in seconds
    assert run1[0].prompt_tokens == 1024.0 and run1[0].model == "llama-3.1-8b"


def test_genai_perf_export_reads_its_inter_token_latency_as_tpot() -> None:
    fmt, rows = read(FIXTURES / "genai-perf-profile_export_genai_perf.json", RunContext(
        gpu="h100-sxm", tensor_parallel=1, engine="trtllm", engine_version="1.0",
        precision="fp8",
    ))  # fmt: skip
    assert fmt == "genai-perf"
    assert value(rows, "tpot_ms") == 10.42 and value(rows, "ttft_ms", "p99") == 188.7
    assert {(r.load, r.load_value) for r in rows} == {("concurrency", 16.0)}
    assert rows[0].output_tokens == 256.0 and rows[0].engine == "trtllm"


def test_sglang_jsonl_reads_every_line_as_a_run() -> None:
    context = RunContext(
        gpu="h100-sxm", tensor_parallel=1, engine_version="0.5.4", precision="bf16"
    )
    with pytest.raises(InvalidInput) as caught:  # its lines carry no model id
        read(FIXTURES / "sglang-bench_serving.jsonl", context)
    assert caught.value.field == "model"
    fmt, rows = read(
        FIXTURES / "sglang-bench_serving.jsonl", replace(context, model="llama-3.1-8b")
    )
    assert fmt == "sglang"
    assert {(r.run, r.load) for r in rows} == {(0, "concurrency"), (1, "rate")}
    assert {r.engine for r in rows} == {"sglang"}
    assert value([r for r in rows if r.run == 0], "e2e_ms", "p50") == 2310.2


def test_the_serving_measurements_csv_columns_import() -> None:
    text = (
        "gpu,gpu_count,tp,model,params_b,precision,engine,input_len,output_len,concurrency,"
        "metric,value,source,note\n"
        "h100-sxm,2,1,meta-llama/Llama-3.1-8B-Instruct,8,bf16,vLLM v0.11.0,1000,200,8,"
        "output_tokens_per_s_total,2900,lab,\n"
        "h100-sxm,2,1,meta-llama/Llama-3.1-8B-Instruct,8,bf16,vLLM v0.11.0,1000,200,8,"
        "tpot_ms_p50,9.5,lab,\n"
        "h100-sxm,2,1,meta-llama/Llama-3.1-8B-Instruct,8,bf16,vLLM v0.11.0,1000,200,8,"
        "benchmark_duration_s,60,lab,\n"
    )
    parsed = read_benchmark_file(text, None, RunContext(), gpu_ids)
    assert parsed.format == "csv" and parsed.runs == 1
    assert {(m.metric, m.stat) for m in parsed.measurements} == {
        ("output_tokens_per_s", "mean"),
        ("tpot_ms", "p50"),
    }
    m = parsed.measurements[0]
    assert (m.cards, m.tensor_parallel, m.replicas, m.engine_version) == (2, 1, 2, "0.11")


@pytest.mark.parametrize(
    ("context", "field"),
    [
        (RunContext(tensor_parallel=1, engine_version="0.11.0", precision="bf16"), "gpu"),
        (RunContext(gpu="h100-sxm", engine_version="0.11.0", precision="bf16"), "tensor_parallel"),
        (RunContext(gpu="h100-sxm", tensor_parallel=1, precision="bf16"), "engine_version"),
        (RunContext(gpu="h100-sxm", tensor_parallel=1, engine_version="0.11.0"), "precision"),
        (
            RunContext(
                gpu="h100-sxm", tensor_parallel=2, cards=3, engine_version="0.11", precision="bf16"
            ),
            "cards",
        ),
    ],
)
def test_missing_context_is_named(context: RunContext, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        read_benchmark_file(VLLM.read_text(), None, context, gpu_ids)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("completed"), "completed"),
        (lambda d: d.pop("total_output_tokens"), "total_output_tokens"),
        (lambda d: d.update(output_throughput="fast"), "output_throughput"),
        (lambda d: d.update(request_rate=-1), "request_rate"),
    ],
)
def test_an_incomplete_vllm_file_names_the_key(mutate: object, field: str) -> None:
    doc = json.loads(VLLM.read_text())
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(InvalidInput) as caught:
        read_benchmark_file(json.dumps(doc), "vllm", A100, gpu_ids)
    assert caught.value.field == field


def test_json_that_is_no_result_file_asks_for_the_format() -> None:
    with pytest.raises(InvalidInput) as caught:
        detect_format('{"hello": 1}')
    assert caught.value.field == "format"


def test_an_unknown_model_is_named() -> None:
    doc = json.loads(VLLM.read_text())
    doc["model_id"] = "acme/not-a-model-7b"
    with pytest.raises(InvalidInput) as caught:
        read_benchmark_file(json.dumps(doc), None, A100, gpu_ids)
    assert caught.value.field == "model"
