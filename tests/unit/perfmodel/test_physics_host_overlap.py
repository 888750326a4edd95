"""Host work beside or between GPU steps.

Every iteration has host work per running sequence (scheduling, input tensors, sampling
bookkeeping: ``seq_overhead_us``). An engine that prepares iteration ``i + 1`` while the GPU runs
iteration ``i`` (SGLang's overlap scheduler, vLLM's asynchronous scheduling from 0.12) hides it
behind the GPU step, so an iteration takes the longer of the two; one that schedules only after
the sampled tokens of step ``i`` are back (vLLM up to 0.11) adds it to every step. The second
kind gains less from a faster card: the host part does not shrink (Amdahl).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel.calibration import (
    PUBLIC_PROFILES,
    Calibration,
    EngineProfile,
    serving_structure,
)
from service.domain.perfmodel.coefficients import build_setup
from service.domain.perfmodel.iteration import iteration_parts, iteration_time
from service.domain.perfmodel.lockstep import _iteration_time, lanes
from tests.unit.perfmodel.physics import dep, perturbed

M = PRESETS["llama-3.1-8b"]
CALS = perturbed()
BATCHES = (1.0, 4.0, 32.0, 256.0, 1024.0)
PROMPTS = (0.0, 512.0, 4096.0)


def _profiles() -> tuple[EngineProfile, EngineProfile]:
    vllm = PUBLIC_PROFILES["vllm"]
    return replace(vllm, host_overlap=False), replace(vllm, host_overlap=True)


@pytest.mark.parametrize(
    ("engine", "version", "overlap"),
    [
        ("vllm", "0.6", False),
        ("vllm", "0.11", False),
        ("vllm", "", False),
        ("vllm", "0.12", True),
        ("vllm", "0.16", True),
        ("sglang", "0.3", False),
        ("sglang", "0.4", True),
        ("sglang", "0.5", True),
        ("trtllm", "1.0", True),
    ],
)
def test_which_builds_overlap_host_work(engine: str, version: str, overlap: bool) -> None:
    assert serving_structure(engine, version).host_overlap is overlap


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_host_work_adds_to_the_step_or_hides_behind_it(cal: Calibration) -> None:
    serial, overlapped = _profiles()
    d = dep("h100-sxm")
    s_serial = build_setup(M, d, serial, cal)
    s_overlap = build_setup(M, d, overlapped, cal)
    gpu_only = replace(s_overlap, cpu_seq_s=0.0)
    assert s_serial.cpu_seq_s == s_overlap.cpu_seq_s > 0.0
    for b in BATCHES:
        for p in PROMPTS:
            gpu = iteration_time(gpu_only, b, p, 1000.0, 1000.0)
            host = s_serial.cpu_seq_s * b
            assert iteration_time(s_serial, b, p, 1000.0, 1000.0) == pytest.approx(gpu + host)
            assert iteration_time(s_overlap, b, p, 1000.0, 1000.0) == pytest.approx(max(gpu, host))
            for s in (s_serial, s_overlap):
                parts = iteration_parts(s, b, p, 1000.0, 1000.0)
                assert parts.total_s == pytest.approx(iteration_time(s, b, p, 1000.0, 1000.0))


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_the_vectorised_step_keeps_each_lanes_host_rule(cal: Calibration) -> None:
    serial, overlapped = _profiles()
    setups = [
        build_setup(M, dep("h100-sxm"), serial, cal),
        build_setup(M, dep("h100-sxm"), overlapped, cal),
        build_setup(M, dep("a100-sxm-80gb"), serial, cal),
    ]
    ln = lanes(setups, [(1000, 256)] * len(setups))
    for b in BATCHES:
        for p in PROMPTS:
            got = _iteration_time(ln, np.full(3, b), np.full(3, p))
            want = [iteration_time(s, b, p, float(ln.c[0]), 1000.0) for s in setups]
            assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("b", [64.0, 256.0])
def test_a_faster_card_gains_less_when_host_work_is_serial(cal: Calibration, b: float) -> None:
    serial, _ = _profiles()
    slow = build_setup(M, dep("a100-sxm-80gb"), serial, cal)
    fast = build_setup(M, dep("h100-sxm"), serial, cal)

    def step(s: object, host: bool) -> float:
        setup = s if host else replace(s, cpu_seq_s=0.0)  # type: ignore[type-var]
        return iteration_time(setup, b, 0.0, 1500.0, 1000.0)  # type: ignore[arg-type]

    gpu_speedup = step(slow, False) / step(fast, False)
    assert gpu_speedup > 1.2  # the H100 steps faster
    assert 1.0 < step(slow, True) / step(fast, True) < gpu_speedup
