"""All-reduce cost follows message size, link bandwidth and a per-step latency of microseconds;
on switched NVLink domains the latency does not grow with the group (one-shot/two-shot/NVLS),
over PCIe it does (ring hops). Consequence: on NVSwitch parts an 8-way tensor-parallel replica
of a 70B model decodes a single sequence faster than a 4-way one (half the weights per card, the
same few microseconds per all-reduce), as every published TensorRT-LLM and vLLM result shows.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import RequestShape, estimate
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, Calibration, default_calibration
from service.domain.perfmodel.coefficients import (
    allreduce_algorithms,
    allreduce_seconds,
    build_setup,
)
from service.domain.perfmodel.hardware import link_plan, link_topology
from service.domain.perfmodel.serving import estimate_with
from tests.unit.perfmodel.gpu_fixtures import GPUS
from tests.unit.perfmodel.physics import dep, perturbed

M70 = PRESETS["llama-3.1-70b"]
SHAPE = RequestShape(128, 256)
CALS = perturbed()
DECODE_MESSAGE = 8192 * 2.0  # one token of a 70B model's hidden state, 16-bit


def algos(gpu: str, t: int, cal: Calibration | None = None, **gpu_changes: object):  # type: ignore[no-untyped-def]
    g = replace(GPUS[gpu], **gpu_changes) if gpu_changes else GPUS[gpu]  # type: ignore[arg-type]
    return allreduce_algorithms(link_plan(g, t, True), cal or default_calibration(), t)


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm", "b200"])
@pytest.mark.parametrize("engine", ["trtllm", "vllm"])
@pytest.mark.parametrize("prec", ["bf16", "fp8"])
def test_tp8_decodes_a_70b_model_faster_than_tp4_on_nvswitch(
    gpu: str, engine: str, prec: str
) -> None:
    tp4 = estimate(M70, dep(gpu, 4, prec, engine), SHAPE, concurrency=1)
    tp8 = estimate(M70, dep(gpu, 8, prec, engine), SHAPE, concurrency=1)
    assert tp4.fits and tp8.fits
    assert tp8.tpot_ms <= tp4.tpot_ms


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_tp8_beats_tp4_under_perturbed_calibrations(cal: Calibration) -> None:
    for gpu in ("h100-sxm", "h200-sxm", "b200"):
        for engine in ("trtllm", "vllm"):
            prof = PUBLIC_PROFILES[engine]
            tp4 = estimate_with(M70, dep(gpu, 4, engine=engine), SHAPE, prof, cal, concurrency=1)
            tp8 = estimate_with(M70, dep(gpu, 8, engine=engine), SHAPE, prof, cal, concurrency=1)
            assert tp8.tpot_ms <= tp4.tpot_ms, (gpu, engine)


@pytest.mark.parametrize("gpu", ["h100-sxm", "b200", "a100-sxm-80gb", "l40s"])
def test_allreduce_time_grows_with_message_size(gpu: str) -> None:
    a = algos(gpu, 4)
    sizes = [2.0**k for k in range(4, 31)]
    times = [allreduce_seconds(a, m) for m in sizes]
    assert all(t2 > t1 for t1, t2 in itertools.pairwise(times))
    # large messages are bandwidth-bound: 1 GiB takes about 1 GiB / bandwidth
    assert times[-1] > 50 * times[0]


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-sxm-80gb", "a100-pcie-80gb"])
def test_allreduce_time_falls_with_link_bandwidth(gpu: str) -> None:
    t = 2 if gpu == "a100-pcie-80gb" else 8
    bw = GPUS[gpu].interconnect_bandwidth_gbps
    slow, fast = algos(gpu, t), algos(gpu, t, interconnect_bandwidth_gbps=2 * bw)
    for m in (DECODE_MESSAGE, 1e6, 1e8):
        assert allreduce_seconds(fast, m) < allreduce_seconds(slow, m)
    # a bandwidth-bound message takes about half as long over twice the bandwidth
    assert allreduce_seconds(fast, 1e9) == pytest.approx(allreduce_seconds(slow, 1e9) / 2, rel=0.01)


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm", "b200", "gb200", "a100-sxm-80gb"])
def test_switched_latency_is_microseconds_and_flat_in_group_size(
    cal: Calibration, gpu: str
) -> None:
    """A decode-sized all-reduce on a switched domain costs one synchronised step of the link
    (microseconds) at any group size, not 2 (t - 1) ring hops."""
    assert link_plan(GPUS[gpu], 8, False).topology == "switched"
    step = cal.nvlink_latency_us * 1e-6
    small = [allreduce_seconds(algos(gpu, t, cal), DECODE_MESSAGE) for t in (2, 4, 8)]
    assert all(step <= s < 1.5 * step + 2e-6 for s in small)
    assert max(small) < 1.5 * min(small)
    assert step < 100e-6


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_pcie_pays_ring_hops_of_tens_of_microseconds(cal: Calibration) -> None:
    """Over PCIe the collective is a ring: 2 (t - 1) hops, each tens of microseconds, so the
    latency grows with the group and dwarfs a switched domain's."""
    ring = [allreduce_seconds(algos("l40s", t, cal), DECODE_MESSAGE) for t in (2, 4, 8)]
    assert ring[0] < ring[1] < ring[2]
    assert ring[2] >= 14 * cal.pcie_latency_us * 1e-6
    assert ring[1] > 50e-6
    switched = allreduce_seconds(algos("h100-sxm", 8, cal), DECODE_MESSAGE)
    assert ring[2] > 5 * switched


def test_partial_mesh_runs_rings_and_full_mesh_splits_its_links() -> None:
    cube = replace(GPUS["v100-sxm2-32gb"], interconnect="NVLink 2 (hybrid cube-mesh)")
    assert link_topology(cube) == "ring"
    cal = default_calibration()
    ring8 = allreduce_algorithms(link_plan(cube, 8, False), cal, 8)
    assert len(ring8) == 1 and ring8[0][0] == pytest.approx(14 * cal.nvlink_latency_us * 1e-6)
    mesh = replace(GPUS["h100-sxm"], vendor="AMD", interconnect="Infinity Fabric (xGMI), 7 links")
    assert link_topology(mesh) == "mesh"
    # a pair uses one of the seven links; the whole group all of them
    assert link_plan(mesh, 2, False).gbps_per_direction == pytest.approx(450.0 / 7)
    assert link_plan(mesh, 8, False).gbps_per_direction == pytest.approx(450.0)


def test_iteration_pays_two_allreduces_per_layer() -> None:
    cal = default_calibration()
    prof = PUBLIC_PROFILES["vllm"]
    s1 = build_setup(M70, dep("h100-sxm", 1, "fp8"), prof, cal)
    s8 = build_setup(M70, dep("h100-sxm", 8, "fp8"), prof, cal)
    assert s1.n_coll == 0 and s1.coll == ()
    assert s8.n_coll == 2 * 80
    # per token of the iteration, each collective's message is one hidden state (16-bit)
    per_byte = allreduce_algorithms(link_plan(GPUS["h100-sxm"], 8, False), cal, 8)
    assert [p for _, p in s8.coll] == pytest.approx([p * 8192 * 2 for _, p in per_byte])
