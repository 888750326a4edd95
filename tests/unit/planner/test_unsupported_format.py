"""A GPU whose generation has no kernels for the request's weight or KV-cache format is
rejected for that reason alone: no tensor-parallel degree changes it, so the reason names
none, and the plan goes on with the GPUs that can run the format."""

from __future__ import annotations

from functools import cache

import pytest

from service.domain.catalog import CatalogSnapshot, latest_per_offer
from service.domain.planner import plan
from service.store.csv_format import bundled_text, parse_gpus_csv, parse_prices_csv
from tests.support.plan_requests import plan_request


@cache
def snapshot() -> CatalogSnapshot:
    gpus = tuple(parse_gpus_csv(bundled_text("gpus.csv")))
    prices = latest_per_offer(parse_prices_csv(bundled_text("prices.csv")))
    return CatalogSnapshot(revision=1, gpus=gpus, prices=prices)


@pytest.mark.parametrize(
    ("precision", "kv_precision", "needle"),
    [
        ("fp4", "bf16", "fp4 is not supported on T4 (turing)"),
        ("fp8", "bf16", "fp8 is not supported on T4 (turing)"),
        ("bf16", "fp8", "FP8 KV cache needs Ampere or newer; T4 is turing"),
    ],
)
def test_a_format_the_card_cannot_run_is_its_reason(
    precision: str, kv_precision: str, needle: str
) -> None:
    request = plan_request(
        gpus=("t4", "l4"), precision=precision, kv_precision=kv_precision, qps=0.5
    )
    result = plan(request, snapshot())
    t4 = [r for r in result.rejected if r.gpu == "t4"]
    assert [r.code for r in t4] == ["unsupported_format"]
    assert needle in t4[0].reason and "tensor_parallel" not in t4[0].reason
    assert t4[0].best_ttft_ms is None  # nothing was sized on it
    assert result.fleet is not None
    assert {line.gpu for line in result.fleet.lines} == {"l4"}


def test_a_format_every_card_runs_rejects_none_for_it() -> None:
    result = plan(plan_request(gpus=("t4", "l4"), qps=0.5, kv_precision="fp16"), snapshot())
    assert all(r.code != "unsupported_format" for r in result.rejected)
