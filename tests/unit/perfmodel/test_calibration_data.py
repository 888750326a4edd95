"""The measured data loads into typed rows: engine/version parsing, GPU and model mapping, length,
load and metric parsing, every skipped row counted under a reason, and leave-one-source-out
folds that never put a source on both sides."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

import pytest

from bench._calibration_data import (
    GPU_LABELS,
    SERVING_CSV,
    TRITON_RUN_REQUESTS,
    LoadReport,
    Row,
    build_of,
    dev_build,
    fit_rows,
    load_gpus,
    load_rows,
    load_undefined_throughput,
    loso_splits,
    parse_engine,
    parse_lengths,
    parse_load,
    parse_serve_flags,
    source_document,
)
from bench._predict import finite_factors, predict_rows
from bench.calibrate import Param, _solve
from service.domain.perfmodel.calibration import (
    BENCH_PROFILES,
    calibration_from_mapping,
    default_calibration,
)
from service.domain.perfmodel.constants import FITTED
from service.domain.perfmodel.hardware import CALIBRATED_GROUPS, calibration_group

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def loaded() -> tuple[list[Row], LoadReport]:
    return load_rows()


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("vLLM 0.6.3", ("vllm", "0.6")),
        ("vLLM v0.11.0", ("vllm", "0.11")),
        ("vLLM 0.11.1 (rocm/vllm:rocm7.0.0_vllm_0.11.1_20251103)", ("vllm", "0.11")),
        ("vLLM (ROCm; version not stated)", ("vllm", "")),
        ("vLLM (V1, ~Jan 2026)", ("vllm", "")),
        ("SGLang v0.3.0", ("sglang", "0.3")),
        ("SGLang v0.4.10.post1 (ROCm 6.3.0)", ("sglang", "0.4")),
        ("SGLang (version not stated, ~v0.4.6; attn=fa3)", ("sglang", "")),
        ("SGLang (main, ~v0.4.6, May 2025; PD disagg)", ("sglang", "")),
        ("TGI v3.0 (Dec 2024)", ("tgi", "3.0")),
        ("TensorRT-LLM v0.14.0", ("trtllm", "0.14")),
        ("TensorRT-LLM v1.0", ("trtllm", "1.0")),
        ("NVIDIA NIM 1.8.0 (Llama-3.3-70b-instruct)", ("trtllm", "1.8")),
        ("LMDeploy v0.1.0a1 (TurboMind)", ("lmdeploy", "0.1")),
    ],
)
def test_engine_and_version_parse(label: str, expected: tuple[str, str]) -> None:
    assert parse_engine(label) == expected


def test_unknown_engine_is_none_and_builds_are_keyed() -> None:
    assert parse_engine("llama.cpp b1234") is None
    assert build_of("trtllm", "1.8", "NVIDIA NIM 1.8.0 (x)") == "nim-1.8"
    assert build_of("vllm", "0.11", "vLLM v0.11.0") == "vllm-0.11"
    assert build_of("vllm", "", "vLLM (ROCm; version not stated)") == "vllm"


def test_every_gpu_label_maps_to_a_catalog_gpu() -> None:
    gpus = load_gpus()
    for gid in GPU_LABELS.values():
        assert gid in gpus
    for name in ("calibration.csv", "serving_measurements.csv"):
        with (ROOT / "service" / "data" / name).open(encoding="utf-8") as fh:
            labels = {r["gpu"] for r in csv.DictReader(fh)}
        unmapped = labels - set(GPU_LABELS)
        # what the catalog lacks: NVIDIA's desktop GB10 and the B300
        assert all(("GB10" in u or "B300" in u) for u in unmapped), unmapped


def test_lengths_use_generated_means_and_flag_distributions() -> None:
    eos = parse_lengths("32000", "random max 100 (mean 94; EOS not ignored)", "")
    assert eos == (32000, 94, "fixed", ("eos",))
    note = "client: vllm bench serve (ShareGPT (1000 prompts; mean in 217 / out 202 tokens))"
    assert parse_lengths("ShareGPT", "ShareGPT", note) == (217, 202, "mean", ("sharegpt",))
    no_means = parse_lengths("ShareGPT", "ShareGPT", "no means")
    assert isinstance(no_means, str) and no_means.startswith("lengths:")
    fixed = parse_lengths("~20000", "~2000", "")
    assert not isinstance(fixed, str) and fixed[:3] == (20000, 2000, "fixed")
    assert isinstance(parse_lengths("random up to 1024", "random up to 1024", ""), str)
    printed = "random dataset (500 prompts; mean in 3996 / out 200 tokens)"
    assert parse_lengths("4000", "random max 200 (mean 200; EOS not ignored)", printed)[:2] == (
        3996,
        200,
    )


def test_loads_parse() -> None:
    assert parse_load("max (all 1000 requests at once)", "") == ("burst", 1000.0)
    assert parse_load("max (1500 prompts, max-num-seqs 1500)", "") == ("burst", 1500.0)
    assert parse_load("rate=16", "") == ("rate", 16.0)
    assert parse_load("rate=1000", "ShareGPT, 200 prompts") == ("burst", 200.0)
    assert parse_load("8", "") == ("concurrency", 8.0)
    # more clients than the run has prompts: every prompt is sent at once
    counts = "50 prompts at c=1, 400 at c>1 (per methodology page)"
    assert parse_load("1", counts) == ("concurrency", 1.0)
    assert parse_load("256", counts) == ("concurrency", 256.0)
    assert parse_load("512", counts) == ("burst", 400.0)
    assert parse_load("max (offline, infinite request rate)", "") == ("peak", 0.0)
    assert isinstance(parse_load("k6 load test, 200 requests", ""), str)


def test_serving_command_flags() -> None:
    flags = parse_serve_flags(
        "serving: vllm serve m --max-num-seqs 1500 --max-num-batched-tokens 16384 "
        "--gpu-memory-utilization 0.85 --async-scheduling; client: x"
    )
    assert not isinstance(flags, str)
    serve, tags = flags
    assert (serve.max_batch, serve.max_num_tokens, serve.kv_fraction) == (1500, 16384, 0.85)
    assert "async-scheduling" in tags
    assert isinstance(parse_serve_flags("serving: x --speculative-algorithm EAGLE3"), str)
    assert isinstance(parse_serve_flags("serving: vllm serve m -pp 2; client"), str)


def test_every_row_is_used_or_counted(loaded: tuple[list[Row], LoadReport]) -> None:
    rows, report = loaded
    read = sum(report.read.values())
    skipped = sum(report.skipped.values())
    assert report.read == {"calibration": 3378, "serving": 3099, "validation": 180}
    assert len(rows) + skipped == read
    assert [r.index for r in rows] == list(range(len(rows)))
    reasons = set(report.skipped)
    assert "config: speculative decoding (not modelled)" in reasons
    assert "config: pipeline parallelism (not modelled)" in reasons
    assert "lengths: ShareGPT without printed means" in reasons
    # every model the measurements name has a preset (one would be listed and counted)
    assert not report.unknown_models
    assert "model: no preset" not in report.skipped


def test_rows_are_classified(loaded: tuple[list[Row], LoadReport]) -> None:
    rows, _ = loaded
    engines = {r.engine for r in rows}
    assert {"trtllm", "vllm", "sglang", "lmdeploy"} <= engines
    assert {r.load for r in rows} == {"peak", "burst", "concurrency", "rate", "static"}
    assert all(r.value > 0 and r.input_len >= 1 and r.output_len >= 1 for r in rows)
    # pipeline-parallel TensorRT-LLM rows are out; every kept calibration row is one replica set
    assert all(r.gpu_count % r.tp == 0 for r in rows)
    # the Triton points of the v0.14 page are held out with the v0.14 peak rows
    v014 = {r.source for r in rows if r.build == "trtllm-0.14"}
    assert len(v014) == 1
    assert all(r.build in BENCH_PROFILES or r.engine in ("vllm", "sglang", "tgi") for r in rows)


def test_measured_gpus_fall_in_calibrated_groups(loaded: tuple[list[Row], LoadReport]) -> None:
    rows, _ = loaded
    gpus = load_gpus()
    groups = {calibration_group(gpus[r.gpu_id]).group for r in rows}
    assert set(CALIBRATED_GROUPS) <= groups


def test_source_aliases_join_one_document() -> None:
    a = source_document(
        "github:arthurrasmusson/TensorRT-LLM@e00d4e6564921307dd264b61fe1d46f116095e0e "
        "docs/source/performance/perf-overview.md (v0.14.0 revision) section 'Online'"
    )
    with (ROOT / "service" / "data" / "calibration.csv").open(encoding="utf-8") as fh:
        v014 = next(r["source"] for r in csv.DictReader(fh) if r["engine"].endswith("v0.14.0"))
    assert a == source_document(v014)
    assert source_document("x") == "x"


def test_loso_never_puts_a_source_on_both_sides(loaded: tuple[list[Row], LoadReport]) -> None:
    rows, _ = loaded
    by_index = {r.index: r for r in rows}
    splits = list(loso_splits(rows))
    assert len(splits) == len({r.source for r in rows})
    seen: list[int] = []
    for sp in splits:
        train_sources = {by_index[i].source for i in sp.train}
        test_sources = {by_index[i].source for i in sp.test}
        assert test_sources == {sp.source}
        assert sp.source not in train_sources
        assert not set(sp.train) & set(sp.test)
        assert len(sp.train) + len(sp.test) == len(rows)
        seen += sp.test
    assert sorted(seen) == [r.index for r in rows]  # every row scored exactly once


DSTACK_DEEPSEEK = (
    "dstackai/benchmarks@7f37e6697725e58dd09b9ef190b62ce19f01d45e:"
    "Deepseek-R1/raw_data/online_results.csv"
)


DSTACK_405B = (
    "dstackai/benchmarks@06c957ab51572ca18db9c1f4bb254a9eb86df4d7:"
    "comparison/h100sxm5_vs_mi300x/raw_data/8xH100SXM5-throughput/"
)


def test_serving_file_is_the_reference_set_then_added_sources() -> None:
    """The reference serving set (2,722 rows), then dstack's DeepSeek-R1 closed loops (45 runs,
    five engine x GPU pairs, eight numbers each) and its 8x H100 Llama-3.1-405B offline runs
    (17 batches, one number each)."""
    with SERVING_CSV.open(encoding="utf-8") as fh:
        raw = list(csv.DictReader(fh))
    assert len(raw) == 2722 + 360 + 17
    added = raw[2722:]
    assert not {r["source"] for r in raw[:2722]} & {DSTACK_DEEPSEEK, DSTACK_405B}
    deepseek = [r for r in added if r["source"] == DSTACK_DEEPSEEK]
    assert len(deepseek) == 360
    runs = {(r["engine"], r["gpu"], r["output_len"], r["concurrency"]) for r in deepseek}
    assert len(runs) == 45
    assert len({r["engine"] for r in deepseek}) == 5
    llama = [r for r in added if r["source"] == DSTACK_405B]
    assert len(llama) == 17
    assert {r["metric"] for r in llama} == {"requests_per_s"}


def test_trtllm_serve_flags_are_read() -> None:
    flags = parse_serve_flags(
        "serving: trtllm-serve --backend pytorch --max_batch_size 512 --max_num_tokens 16384 "
        "--tp_size 8 --ep_size 4; client: x"
    )
    assert not isinstance(flags, str)
    serve, tags = flags
    assert (serve.max_batch, serve.max_num_tokens) == (512, 16384)
    assert tags == ("ep",)


def _run_numbers(rows: list[Row]) -> dict[tuple[object, ...], dict[str, tuple[str, ...]]]:
    """Per benchmark run on a GPU (engine, model, lengths, load): its numbers, by GPU."""
    runs: dict[tuple[object, ...], dict[str, list[str]]] = {}
    for r in rows:
        key = (r.engine_label, r.model_label, r.input_len, r.output_len, r.load, r.load_n)
        runs.setdefault(key, {}).setdefault(r.gpu_id, []).append(f"{r.metric}/{r.stat}={r.value}")
    return {k: {g: tuple(sorted(v)) for g, v in per.items()} for k, per in runs.items()}


def test_no_run_is_a_copy_of_another_gpus_run(loaded: tuple[list[Row], LoadReport]) -> None:
    """Two cards measured independently never agree to the hundredth on every number of a
    run (throughput, TTFT, TPOT, ITL); a run that does is a copied result block."""
    rows, report = loaded
    for key, per_gpu in _run_numbers(rows).items():
        seen: dict[tuple[str, ...], str] = {}
        for gpu, numbers in sorted(per_gpu.items()):
            if len(numbers) >= 3:
                assert numbers not in seen, f"{key}: {gpu} repeats {seen.get(numbers)}"
                seen[numbers] = gpu
    # the copy GPUStack published on its GLM-4.5-Air H100 page is counted, not used
    copied = [reason for reason in report.skipped if reason.startswith("source: result block")]
    assert copied
    assert not any(
        r.gpu_id == "h100-sxm" and r.model.id == "glm-4.5-air" and "Other Benchmark Cases" in r.note
        for r in rows
    )


def test_copied_block_detection_without_the_rule() -> None:
    """The check above would catch the copy: the raw file holds the same run on two GPUs."""
    with SERVING_CSV.open(encoding="utf-8") as fh:
        raw = [r for r in csv.DictReader(fh) if "Other Benchmark Cases" in r["note"]]
    by_run: dict[tuple[str, ...], dict[str, set[str]]] = {}
    for r in raw:
        key = (r["engine"], r["model"], r["input_len"], r["output_len"], r["concurrency"])
        by_run.setdefault(key, {}).setdefault(r["gpu"], set()).add(f"{r['metric']}={r['value']}")
    dupes = [
        key
        for key, per in by_run.items()
        if len(per) > 1 and len({frozenset(v) for v in per.values()}) < len(per)
    ]
    assert dupes and all(key[1] == "zai-org/GLM-4.5-Air" for key in dupes)


def test_trtllm_serve_runs_are_online_trtllm_rows(loaded: tuple[list[Row], LoadReport]) -> None:
    """dstack's trtllm-serve runs load as TensorRT-LLM closed loops with the server's batch and
    token limits and the checkpoint's default (BF16) KV cache; p99 numbers are counted, not
    scored."""
    rows, _ = loaded
    trt = [r for r in rows if r.source == DSTACK_DEEPSEEK and r.engine == "trtllm"]
    assert len(trt) == 9 * 6
    assert {r.build for r in trt} == {"trtllm-0.17"}
    assert {r.load for r in trt} == {"concurrency"}
    assert {(r.serve.max_batch, r.serve.max_num_tokens) for r in trt} == {(512, 16384)}
    assert {(r.precision, r.kv_precision) for r in trt} == {("fp8", "bf16")}
    assert {r.metric for r in trt} == {"throughput", "ttft", "tpot", "itl"}


def test_offline_vllm_batches_load_as_bursts(loaded: tuple[list[Row], LoadReport]) -> None:
    """The 405B benchmark_throughput runs are bursts of N prompts scored in requests/s."""
    rows, _ = loaded
    llama = [r for r in rows if r.source == DSTACK_405B]
    assert len(llama) == 17
    assert {(r.build, r.gpu_id, r.model.id, r.load, r.metric) for r in llama} == {
        ("vllm-0.6", "h100-sxm", "llama-3.1-405b-fp8", "burst", "requests")
    }
    assert {r.load_n for r in llama} == {4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0}


def test_development_snapshots_are_scored_not_fitted(loaded: tuple[list[Row], LoadReport]) -> None:
    assert dev_build("vLLM 0.7.4.dev181+gf35f8e22 (nightly wheel)")
    assert dev_build("TensorRT-LLM 0.17.post1.dev (trtllm-serve, PyTorch backend)")
    assert not dev_build("SGLang v0.4.3.post2")
    assert not dev_build("vLLM v0.11.0")
    rows, _ = loaded
    fitted = {r.index for r in fit_rows(rows)}
    trt = [r for r in rows if r.source == DSTACK_DEEPSEEK and r.engine == "trtllm"]
    assert trt and not fitted & {r.index for r in trt}
    # the SGLang releases of the same study are fitted
    sgl = [r for r in rows if r.source == DSTACK_DEEPSEEK and r.engine == "sglang"]
    assert sgl and {r.index for r in sgl} <= fitted


def test_triton_rate_runs_are_read_as_runs_of_their_500_requests(
    loaded: tuple[list[Row], LoadReport],
) -> None:
    rows, _ = loaded
    rate = [r for r in rows if r.load == "rate"]
    assert rate and all(r.requests == TRITON_RUN_REQUESTS == 500 for r in rate)
    assert all(r.requests == 0 for r in rows if r.load != "rate")
    scored = [r for r in rate if r.metric in ("throughput", "requests")]
    gpus = load_gpus()
    cal = default_calibration()
    played = predict_rows(scored, gpus, cal)
    factors = finite_factors(scored, gpus, cal)
    assert len(factors) == len({r.run_key for r in scored})
    # the batch fills and drains at the ends of a 500-request run: below the steady state
    assert all(0.5 < f < 1.0 for f in factors.values()), factors
    assert predict_rows(scored, gpus, cal, factors=factors) == pytest.approx(played, rel=1e-12)
    steady = predict_rows(scored, gpus, cal, factors=dict.fromkeys(factors, 1.0))
    assert all(p < s for p, s in zip(played, steady, strict=True))


def test_a_fit_on_finite_runs_matches_them_as_played_out(
    loaded: tuple[list[Row], LoadReport],
) -> None:
    """The fit holds each run's finite-run ratio fixed while it solves; its solution must fit
    the runs as they are played out at the solution's own constants."""
    rows, _ = loaded
    runs = [r for r in rows if r.requests > 0 and r.metric == "throughput" and r.input_len == 467]
    assert len(runs) >= 8
    gpus = load_gpus()
    params = [
        Param(("groups", "hopper-hbm", "eta_m"), 0.75, 0.3, 1.0),
        Param(("groups", "hopper-hbm", "eta_c"), 0.6, 0.15, 1.0),
    ]
    fitted = calibration_from_mapping(_solve(dict(FITTED), params, runs, gpus, 1.0, 100))
    ratios = [p / r.value for p, r in zip(predict_rows(runs, gpus, fitted), runs, strict=True)]
    assert abs(statistics.median(math.log(x) for x in ratios)) < 0.01, ratios
    assert all(0.95 < x < 1.05 for x in ratios), ratios


def test_throughput_of_undefined_tokens_is_scored_apart_and_never_fitted(
    loaded: tuple[list[Row], LoadReport],
) -> None:
    """AMD's MI300X results do not say whether tokens/s counts output or all tokens: the rows
    stay out of every fit and come back, flagged, only for bench/accuracy.py to score both
    readings."""
    rows, report = loaded
    undefined = load_undefined_throughput()
    assert {r.gpu_id for r in undefined} == {"mi300x"}
    assert all(r.metric == "throughput" and "tokens-undefined" in r.flags for r in undefined)
    fitted = {(r.dataset, r.line) for r in fit_rows(rows)}
    assert not fitted & {(r.dataset, r.line) for r in undefined}
    assert (
        0
        < len(undefined)
        <= report.skipped["metric: tokens/s definition not stated (output or total)"]
    )
