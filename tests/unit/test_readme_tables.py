"""README tables rendered from the committed calibration report."""

from __future__ import annotations

from typing import Any, cast

import pytest

from service import readme_tables
from service.domain.perfmodel.constants import FIT_REPORT

REPORT: dict[str, Any] = {
    "loso": {
        "vllm": {"tpot": {"n": 40, "median_ape": 0.2, "within_25pct": 0.6, "bias": -0.05}},
        "trtllm": {
            "ttft": {"n": 8, "median_ape": 0.1, "within_25pct": 0.9, "bias": 0.02},
            "peak_throughput": {"n": 700, "median_ape": 0.125, "within_25pct": 0.8, "bias": 0.01},
        },
    },
    "loso_by_gpu": {
        "trtllm": {
            "peak_throughput": {
                "h100-sxm": {"n": 30, "median_ape": 0.1, "within_25pct": 0.9, "bias": 0.0},
                "l4": {"n": 5, "median_ape": 0.5, "within_25pct": 0.2, "bias": 0.4},
            },
            "throughput_at_load": {
                "h100-sxm": {"n": 10, "median_ape": 0.3, "within_25pct": 0.5, "bias": -0.2},
            },
        },
        "vllm": {
            "peak_throughput": {
                "a100-sxm-80gb": {"n": 25, "median_ape": 0.25, "within_25pct": 0.5, "bias": 0.1}
            }
        },
    },
}


def test_engine_table_orders_engines_and_metrics_and_prints_the_report() -> None:
    lines = readme_tables.accuracy_by_engine(REPORT).splitlines()
    assert lines[2] == "| TensorRT-LLM | peak throughput | 700 | 12.5% | 80.0% | +1.0% |"
    assert lines[3] == "| TensorRT-LLM | TTFT | 8 | 10.0% | 90.0% | +2.0% |"
    assert lines[4] == "| vLLM | TPOT | 40 | 20.0% | 60.0% | -5.0% |"


def test_gpu_table_pools_throughput_and_drops_thin_gpus_worst_first() -> None:
    lines = readme_tables.throughput_by_gpu(REPORT).splitlines()
    # h100: (30 x 10% + 10 x 30%) / 40 = 15%; l4 has 5 rows (< 20): left out
    assert lines[2:] == [
        "| a100-sxm-80gb | 25 | 25.0% | +10.0% |",
        "| h100-sxm | 40 | 15.0% | -5.0% |",
    ]


def test_rewrite_fills_marked_blocks_from_the_committed_report() -> None:
    text = "intro\n<!-- table:accuracy-by-engine -->\nstale\n<!-- /table -->\nend\n"
    out = readme_tables.rewrite(text)
    assert "stale" not in out and out.startswith("intro\n") and out.endswith("end\n")
    assert readme_tables.accuracy_by_engine(FIT_REPORT) in out
    with pytest.raises(KeyError, match="no-such"):
        readme_tables.rewrite("<!-- table:no-such -->\n<!-- /table -->")


def test_notes_list_each_missed_target_with_its_reason() -> None:
    report = {
        "target_notes": [
            {
                "engine": "sglang",
                "metric": "tpot",
                "median_ape": 0.4,
                "target": 0.25,
                "reason": "Prefill first.",
            }
        ]
    }
    assert (
        readme_tables.accuracy_notes(report)
        == "- SGLang TPOT: 40.0% (target 25.0%). Prefill first.\n"
    )
    assert readme_tables.accuracy_notes({"target_notes": []}) == "Every target is met.\n"
    assert readme_tables.accuracy_notes({}) == ""


def test_missed_targets_follow_the_targets() -> None:
    from bench.accuracy import TARGETS, missed_targets

    totals = {
        "vllm": {
            "ttft": {"median_ape": TARGETS["ttft"] + 0.01},
            "tpot": {"median_ape": TARGETS["tpot"] - 0.01},
        },
        "lmdeploy": {"ttft": {"median_ape": 0.9}},  # not a target engine
    }
    missed = missed_targets(totals)
    assert [(m["engine"], m["metric"]) for m in missed] == [("vllm", "ttft")]
    assert missed[0]["reason"]


def test_a_cause_several_misses_share_is_stated_once() -> None:
    from bench.accuracy import SHARED_CAUSES, missed_targets, shared_causes

    totals = {
        eng: {"throughput_at_load": {"median_ape": 0.9}} for eng in ("trtllm", "vllm", "sglang")
    }
    notes = missed_targets(totals)
    cited = [cast("list[str]", n["causes"]) for n in notes]
    assert all("dstack_deepseek" in c for c in cited)
    causes = shared_causes(notes)
    assert causes["dstack_deepseek"] == SHARED_CAUSES["dstack_deepseek"]
    assert set(causes) == {c for each in cited for c in each}
    text = readme_tables.accuracy_notes({"target_notes": notes, "shared_causes": causes})
    assert text.count(SHARED_CAUSES["dstack_deepseek"]["text"]) == 1
    assert text.count("(see below)") == sum(len(c) for c in cited)
    assert text.index("Causes shared") > text.rindex("(see below)")
    assert shared_causes(missed_targets({"vllm": {}})) == {}
