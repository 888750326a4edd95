"""Shared helpers of the physics tests: deployments on the fixture cards and calibrations
perturbed away from the shipped fit (so a test is about the model's structure, not its numbers).
"""

from __future__ import annotations

from dataclasses import replace

from service.domain.perfmodel import Deployment
from service.domain.perfmodel.calibration import Calibration, default_calibration
from tests.unit.perfmodel.gpu_fixtures import GPUS


def dep(gpu: str, tp: int = 1, prec: str = "bf16", engine: str = "vllm", **kw: bool) -> Deployment:
    """A replica of ``tp`` fixture cards, 16-bit KV unless the weights are fp8."""
    kv = "fp8" if prec == "fp8" else "bf16"
    return Deployment(GPUS[gpu], tp, prec, kv, engine, **kw)  # type: ignore[arg-type]


def scaled(
    cal: Calibration, engine: float = 1.0, handling: float = 1.0, **factors: float
) -> Calibration:
    """``cal`` with top-level constants multiplied by ``factors``, every engine build's
    iteration overheads (per step, per layer, per sequence) by ``engine`` and its request
    handling (``ttft_overhead_ms``) by ``handling``."""
    engines = tuple(
        (
            name,
            replace(
                c,
                step_overhead_ms=c.step_overhead_ms * engine,
                layer_overhead_us=c.layer_overhead_us * engine,
                seq_overhead_us=c.seq_overhead_us * engine,
                ttft_overhead_ms=c.ttft_overhead_ms * handling,
            ),
        )
        for name, c in cal.engines
    )
    changes = {k: getattr(cal, k) * f for k, f in factors.items()}
    return replace(cal, engines=engines, **changes)


def perturbed() -> list[Calibration]:
    """The shipped fit and a spread of perturbations of the constants a refit moves most."""
    cal = default_calibration()
    return [
        cal,
        scaled(cal, engine=0.1, handling=0.1),
        scaled(cal, handling=3.0),
        scaled(cal, engine=0.5, handling=30.0),
        scaled(cal, nvlink_latency_us=0.2, pcie_latency_us=0.3, nvlink_bw_eff=1.2),
        scaled(cal, nvlink_latency_us=2.5, pcie_latency_us=2.0, nvlink_bw_eff=0.6),
        scaled(cal, kv_read_eff=0.8, attn_eff=0.8, act_scale=0.7),
    ]
