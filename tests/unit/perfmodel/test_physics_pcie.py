"""Tensor parallelism over PCIe: the all-reduce is a ring whose time follows message size over
the PCIe bandwidth of the card's generation and lanes, doubles when the cards have no
peer-to-peer (staged through host memory), and so a PCIe card gains less from a second card than
the same card on NVLink. Plans consider PCIe tensor parallelism by default, up to an instance's
card count, with ``allow_pcie_tensor_parallel: false`` as the opt-out."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import Deployment, RequestShape, Slo, estimate
from service.domain.perfmodel.calibration import Calibration, default_calibration
from service.domain.perfmodel.coefficients import allreduce_algorithms, allreduce_seconds
from service.domain.perfmodel.hardware import (
    PCIE_GBPS_PER_DIRECTION,
    PCIE_HOST_STAGING_FACTOR,
    link_plan,
    pcie_gbps_per_direction,
    pcie_peer_to_peer,
)
from service.domain.planner import plan
from tests.unit.perfmodel.gpu_fixtures import GPUS
from tests.unit.perfmodel.physics import perturbed
from tests.unit.planner.test_planner import request, snapshot

CALS = perturbed()
RELAXED = Slo(ttft_ms=3000, tpot_ms=150, e2e_ms=None, percentile=95)
GEFORCE = replace(GPUS["l40s"], name="GeForce twin of the L40S", pcie_peer_to_peer=False)


def ring(gpu_spec, t: int, cal: Calibration):  # type: ignore[no-untyped-def]
    return allreduce_algorithms(link_plan(gpu_spec, t, True), cal, t)


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("t", [2, 4, 8])
def test_pcie_allreduce_time_follows_message_size_over_pcie_bandwidth(
    cal: Calibration, t: int
) -> None:
    """Each extra byte costs 2 (t - 1) / t bytes moved per card at the link's effective rate;
    the fixed part is 2 (t - 1) hops of the PCIe step latency."""
    card = GPUS["l40s"]
    link = link_plan(card, t, True)
    assert link.kind == "pcie" and link.peer_to_peer
    rate = pcie_gbps_per_direction(card.pcie_gen) * 1e9 * cal.pcie_bw_eff
    algos = ring(card, t, cal)
    m1, m2 = 1e6, 5e7
    slope = (allreduce_seconds(algos, m2) - allreduce_seconds(algos, m1)) / (m2 - m1)
    assert slope == pytest.approx(2 * (t - 1) / t / rate, rel=1e-9)
    assert allreduce_seconds(algos, 0.0) == pytest.approx(2 * (t - 1) * cal.pcie_latency_us * 1e-6)


def test_pcie_bandwidth_follows_generation_and_lanes() -> None:
    assert pcie_gbps_per_direction(4) == PCIE_GBPS_PER_DIRECTION[4]
    assert pcie_gbps_per_direction(4, lanes=8) == pytest.approx(PCIE_GBPS_PER_DIRECTION[4] / 2)
    assert pcie_gbps_per_direction(5) == pytest.approx(2 * pcie_gbps_per_direction(4), rel=0.01)
    cal = default_calibration()
    gen4 = ring(GPUS["l40s"], 4, cal)
    gen5 = ring(replace(GPUS["l40s"], pcie_gen=5), 4, cal)
    big = 1e9
    assert allreduce_seconds(gen5, big) == pytest.approx(allreduce_seconds(gen4, big) / 2, rel=0.01)


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_without_peer_to_peer_every_ring_step_goes_through_host_memory(cal: Calibration) -> None:
    assert pcie_peer_to_peer(GPUS["l40s"]) and not pcie_peer_to_peer(GEFORCE)
    direct, staged = ring(GPUS["l40s"], 4, cal), ring(GEFORCE, 4, cal)
    (lat_d, byte_d), (lat_s, byte_s) = direct[0], staged[0]
    assert lat_s == pytest.approx(PCIE_HOST_STAGING_FACTOR * lat_d)
    assert byte_s == pytest.approx(PCIE_HOST_STAGING_FACTOR * byte_d)
    for m in (16384.0, 1e6, 1e8):
        assert allreduce_seconds(staged, m) > allreduce_seconds(direct, m)
    assert "host memory" in link_plan(GEFORCE, 4, True).note


def test_the_catalogs_geforce_cards_have_no_peer_to_peer() -> None:
    by_id = {g.id: g for g in snapshot().gpus}
    assert not pcie_peer_to_peer(by_id["rtx-4090"])
    assert all(pcie_peer_to_peer(by_id[g]) for g in ("l40s", "l4", "a10g", "rtx-6000-ada"))
    geforce = {g.id for g in snapshot().gpus if "geforce" in g.name.lower()}
    assert geforce and {g.id for g in snapshot().gpus if not g.pcie_peer_to_peer} == geforce
    assert all(g.pcie_lanes == 16 for g in snapshot().gpus)


PCIE_CARDS = ("l40s", "l4", "a10g", "rtx-6000-ada", "rtx-4090", "rtx-pro-6000-blackwell", "t4")


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
@pytest.mark.parametrize("card", PCIE_CARDS)
@pytest.mark.parametrize("t", [2, 4, 8])
def test_without_peer_to_peer_the_same_card_is_never_faster(
    cal: Calibration, card: str, t: int
) -> None:
    """The same catalog card with peer-to-peer off and on: every all-reduce size takes at
    least as long without it, and so does the time per output token of a whole replica."""
    spec = {g.id: g for g in snapshot().gpus}[card]
    on, off = replace(spec, pcie_peer_to_peer=True), replace(spec, pcie_peer_to_peer=False)
    for m in (0.0, 4096.0, 1e6, 1e8):
        assert allreduce_seconds(ring(off, t, cal), m) >= allreduce_seconds(ring(on, t, cal), m)
    model = PRESETS["llama-3.1-8b"]

    def tpot(gpu_spec, concurrency: int) -> float:  # type: ignore[no-untyped-def]
        d = Deployment(gpu_spec, t, "bf16", "bf16", "vllm", allow_pcie_tensor_parallel=True)
        return estimate(model, d, RequestShape(512, 128), concurrency=concurrency).tpot_ms

    for concurrency in (1, 32):
        assert tpot(off, concurrency) >= tpot(on, concurrency)


@pytest.mark.parametrize("cal", CALS, ids=range(len(CALS)))
def test_pcie_gen5_x16_tensor_parallel_2_all_reduces_faster_than_gen4_x16(
    cal: Calibration,
) -> None:
    """Two cards over PCIe Gen5 x16 all-reduce faster than over Gen4 x16 at every message size
    with a byte in it (the step latency is the same), and fewer lanes are slower."""
    gen4 = replace(GPUS["l40s"], pcie_gen=4, pcie_lanes=16)
    gen5 = replace(gen4, pcie_gen=5)
    x8 = replace(gen4, pcie_lanes=8)
    for m in (4096.0, 1e6, 1e8):
        assert allreduce_seconds(ring(gen5, 2, cal), m) < allreduce_seconds(ring(gen4, 2, cal), m)
        assert allreduce_seconds(ring(x8, 2, cal), m) > allreduce_seconds(ring(gen4, 2, cal), m)
    assert "PCIe Gen5 x16" in link_plan(gen5, 2, True).note
    assert "PCIe Gen4 x8" in link_plan(x8, 2, True).note


@pytest.mark.parametrize("concurrency", [1, 16])
def test_a_pcie_card_gains_less_from_tensor_parallel_than_on_nvlink(concurrency: int) -> None:
    """The same card, once on NVSwitch and once on PCIe only: going from one card to two cuts
    the time per output token more on NVLink, since the PCIe all-reduces take longer."""
    model = PRESETS["llama-3.1-8b"]
    shape = RequestShape(512, 256)
    nvlink = GPUS["h100-sxm"]
    pcie = replace(nvlink, interconnect="PCIe", interconnect_bandwidth_gbps=0.0, nvlink_domain=1)

    def tpot(gpu_spec, tp: int) -> float:  # type: ignore[no-untyped-def]
        d = Deployment(gpu_spec, tp, "bf16", "bf16", "vllm", allow_pcie_tensor_parallel=True)
        e = estimate(model, d, shape, concurrency=concurrency)
        assert e.fits
        return e.tpot_ms

    gain_nvlink = tpot(nvlink, 1) / tpot(nvlink, 2)
    gain_pcie = tpot(pcie, 1) / tpot(pcie, 2)
    assert gain_pcie < gain_nvlink
    assert tpot(pcie, 2) > tpot(nvlink, 2)


# ---- plans -------------------------------------------------------------------------------------


def test_plans_use_pcie_tensor_parallel_on_multi_card_instances_by_default() -> None:
    """A 70B model in fp8 does not fit one 48 GB L40S; AWS sells L40S four to an instance
    (g6e.12xlarge), so the default plan runs it tensor-parallel over PCIe there."""
    p = plan(
        request(model="llama-3.1-70b", precision="fp8", qps=2, gpus=("l40s",), slo=RELAXED),
        snapshot(),
    )
    assert p.fleet is not None, p.rejected
    for line in p.fleet.lines:
        assert line.tensor_parallel >= 2
        assert line.tensor_parallel <= line.cards // max(line.instances, 1)
    assert any("over PCIe" in a for a in p.assumptions)


def test_allow_pcie_tensor_parallel_false_is_the_opt_out() -> None:
    p = plan(
        request(
            model="llama-3.1-70b",
            precision="fp8",
            qps=2,
            gpus=("l40s",),
            slo=RELAXED,
            allow_pcie_tensor_parallel=False,
        ),
        snapshot(),
    )
    assert p.fleet is None
    (rejected,) = p.rejected
    assert rejected.code == "does_not_fit"
    assert "allow_pcie_tensor_parallel" in rejected.reason
