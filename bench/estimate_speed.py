"""CPU cost of one performance-model estimate (``estimate`` and ``max_qps_under_slo``).

Every call uses a request shape not seen before, so the per-call memoisation never answers: the
figures are the cost of the model itself. CPU time via ``time.process_time``.

Run: ``.venv/bin/python bench/estimate_speed.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time

from service.domain.llm import resolve_model
from service.domain.perfmodel import Deployment, RequestShape, Slo, estimate, max_qps_under_slo
from service.store.csv_format import bundled_text, parse_gpus_csv

CASES = (
    ("llama-3.1-8b", "l4", 1, "bf16"),
    ("llama-3.1-70b", "h100-sxm", 2, "fp8"),
    ("mixtral-8x7b", "a100-sxm-80gb", 2, "bf16"),
    ("deepseek-v3", "h200-sxm", 8, "fp8"),
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    n = 2_000 if parser.parse_args().quick else 20_000
    gpus = {g.id: g for g in parse_gpus_csv(bundled_text("gpus.csv"))}
    rng = random.Random(0)
    print("# Estimate cost\n")
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}.\n"
    )
    print("| model | GPU | TP | call | calls | CPU us/call | calls/s (1 core) |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: |")
    for model_id, gpu_id, tp, precision in CASES:
        model = resolve_model(model_id).arch
        dep = Deployment(gpus[gpu_id], tp, precision, "bf16", "vllm")  # type: ignore[arg-type]
        shapes = [RequestShape(rng.randint(64, 8000), rng.randint(16, 2000)) for _ in range(n)]
        calls = (
            ("estimate (peak)", lambda s, m=model, d=dep: estimate(m, d, s)),
            ("estimate (qps=2)", lambda s, m=model, d=dep: estimate(m, d, s, qps=2.0)),
            (
                "estimate (concurrency=64)",
                lambda s, m=model, d=dep: estimate(m, d, s, concurrency=64),
            ),
            (
                "max_qps_under_slo",
                lambda s, m=model, d=dep: max_qps_under_slo(m, d, s, Slo(3000, 80, None, 95)),
            ),
        )
        for label, call in calls:
            batch = shapes[: n // 4] if "max_qps" in label else shapes
            started = time.process_time()
            for shape in batch:
                call(RequestShape(shape.prompt_tokens + 1, shape.output_tokens))
            per_call = (time.process_time() - started) / len(batch)
            print(
                f"| {model_id} | {gpu_id} | {tp} | {label} | {len(batch)} | "
                f"{per_call * 1e6:.1f} | {1 / per_call:,.0f} |"
            )


if __name__ == "__main__":
    main()
