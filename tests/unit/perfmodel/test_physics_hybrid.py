"""Hybrid state-space models (Mamba-2 + attention + MoE), from the model's structure alone.

Nemotron 3 Nano 30B-A3B has 52 residual blocks: 23 Mamba-2 mixers, 23 MoE blocks and 6
attention layers. What follows from that, with no fitted number involved:

* only the 6 attention layers hold a KV cache, and only they read it in decode: the growth of
  an iteration's time with context comes from them alone;
* a Mamba-2 layer holds a fixed state per sequence (heads x head_dim x state, fp32 here, plus
  the convolution's last inputs), whatever the context, split across tensor-parallel ranks
  with the heads; it bounds the batch a card holds at short contexts;
* each iteration reads and writes that state once per running sequence, so a decoding
  sequence costs at least twice its state over the card's datasheet bandwidth;
* tensor parallelism all-reduces after every residual block: 52 per iteration, not 2 x 23.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.domain.llm import PRESETS, param_counts
from service.domain.perfmodel import Deployment
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, default_calibration
from service.domain.perfmodel.coefficients import Setup, build_setup, ssd_flops_per_token
from service.domain.perfmodel.iteration import iteration_time
from service.domain.perfmodel.memory import kv_pool_bytes, memory_batch_cap, sequence_kv_bytes
from tests.unit.perfmodel.gpu_fixtures import GPUS

NANO = PRESETS["nemotron-3-nano-30b-a3b"]
# Mamba-2 state of one sequence in one layer: 64 heads x 64 channels x 128 states in fp32, and
# the last 3 inputs of the 4096 x-channels and 2 x 8 x 128 B/C channels in 16-bit
STATE_PER_LAYER = 64 * 64 * 128 * 4 + (4096 + 2 * 8 * 128) * 3 * 2


def _setup(tp: int, gpu: str = "b200") -> Setup:
    dep = Deployment(GPUS[gpu], tp, "fp8", "fp8", "vllm")
    return build_setup(NANO, dep, PUBLIC_PROFILES["vllm"], default_calibration())


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_state_per_sequence_is_the_mamba_layers_state_split_across_ranks(tp: int) -> None:
    s = _setup(tp)
    assert s.state_seq_b == pytest.approx(23 * STATE_PER_LAYER / tp, rel=1e-12)
    # it does not grow with the sequence: only the 6 attention layers' KV does
    grown = sequence_kv_bytes(s, 32_768.0) - sequence_kv_bytes(s, 0.0)
    kv_heads_per_rank = 2 / min(tp, 2)
    assert grown == pytest.approx(32_768 * 6 * 2 * kv_heads_per_rank * 128 * 1.0, rel=1e-12)


def test_a_decoding_sequence_costs_at_least_its_state_over_the_datasheet_bandwidth() -> None:
    # the GPU's share of a sequence: the host's per-sequence work (which vLLM 0.11 runs between
    # steps) is set aside, test_physics_host_overlap pins it
    s = replace(_setup(2), cpu_seq_s=0.0)
    bandwidth = GPUS["b200"].memory_bandwidth_gbps * 1e9
    context = 16.0  # short: the attention KV is negligible beside the state
    per_sequence = iteration_time(s, 257.0, 0.0, context, 2048.0) - iteration_time(
        s, 256.0, 0.0, context, 2048.0
    )
    assert per_sequence >= 2.0 * s.state_seq_b / bandwidth
    # and without the state I/O the same sequence would cost less than half as much
    stateless = replace(s, state_seq_s=0.0)
    without = iteration_time(stateless, 257.0, 0.0, context, 2048.0) - iteration_time(
        stateless, 256.0, 0.0, context, 2048.0
    )
    assert without < 0.5 * per_sequence


def test_the_state_bounds_the_batch_at_short_contexts() -> None:
    s = _setup(2)
    pool = kv_pool_bytes(s, 128, 128)
    cap = memory_batch_cap(s, 128, 128)
    assert cap <= pool / s.state_seq_b
    # the state is most of what a short sequence holds
    assert s.state_seq_b > 0.9 * sequence_kv_bytes(s, 192.0)


def test_context_growth_of_decode_comes_from_the_attention_layers_alone() -> None:
    """Doubling the context of 64 decoding sequences adds the time of 6 layers' KV reads, a
    fraction of what the same attention on all 29 mixer layers would add."""
    s = _setup(2)
    short, long_ = 4096.0, 8192.0
    growth = iteration_time(s, 64.0, 0.0, long_, long_) - iteration_time(s, 64.0, 0.0, short, short)
    all_attention = replace(NANO, attention_layers=29, ssm_layers=0)
    t = build_setup(
        all_attention,
        Deployment(GPUS["b200"], 2, "fp8", "fp8", "vllm"),
        PUBLIC_PROFILES["vllm"],
        default_calibration(),
    )
    growth_all = iteration_time(t, 64.0, 0.0, long_, long_) - iteration_time(
        t, 64.0, 0.0, short, short
    )
    assert growth > 0.0
    assert growth == pytest.approx(growth_all * 6 / 29, rel=1e-9)


def test_tensor_parallel_all_reduces_after_every_residual_block() -> None:
    assert _setup(2).n_coll == 52
    llama = PRESETS["llama-3.1-70b"]
    dep = Deployment(GPUS["h100-sxm"], 4, "fp8", "fp8", "vllm")
    s = build_setup(llama, dep, PUBLIC_PROFILES["vllm"], default_calibration())
    assert s.n_coll == 2 * llama.n_layers


def test_mamba_mixers_are_weights_but_the_scan_is_small_beside_them() -> None:
    pc = param_counts(NANO)
    # in_proj 2688 x (2 x 4096 + 2 x 8 x 128 + 64), out_proj 4096 x 2688, conv, A/D/dt
    per_layer = 2688 * 10_304 + 4096 * 2688 + (4096 + 2048) * 4 + 3 * 64
    assert pc.ssm == 23 * per_layer
    # the chunked scan's FLOPs per token are a few percent of the projections' 2 FLOPs/weight
    assert 0.0 < ssd_flops_per_token(NANO) < 0.05 * 2.0 * (pc.active - pc.embedding)


def test_tensor_parallel_must_split_the_mamba_heads() -> None:
    dep = Deployment(GPUS["h100-sxm"], 8, "fp8", "fp8", "vllm")
    odd = replace(NANO, ssm_heads=60, ssm_groups=6, n_heads=32)
    s = build_setup(odd, dep, PUBLIC_PROFILES["vllm"], default_calibration())
    assert "Mamba-2 heads" in s.reject


def test_a_single_group_of_b_and_c_is_held_by_every_rank() -> None:
    """With one group (Mamba-2's default), B and C cannot be split: each rank keeps their
    whole convolution state, so TP 2 holds more than half of TP 1's state."""
    one_group = replace(NANO, ssm_groups=1)
    cal, prof = default_calibration(), PUBLIC_PROFILES["vllm"]

    def state(tp: int) -> float:
        dep = Deployment(GPUS["b200"], tp, "fp8", "fp8", "vllm")
        return build_setup(one_group, dep, prof, cal).state_seq_b

    bc_conv = 23 * 2 * 128 * 3 * 2  # 2 x 128 channels, 3 taps, 16-bit, 23 layers
    assert state(2) == pytest.approx(state(1) / 2 + bc_conv / 2, rel=1e-12)
