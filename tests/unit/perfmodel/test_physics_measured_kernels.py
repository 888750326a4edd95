"""The model's GPU kernel time against forward passes timed on a real H100 SXM and H200.

``bench/data/gpu_forward_h100.csv`` and ``gpu_forward_h200.csv`` hold decode and prefill steps
of Llama-3.1-8B and Qwen3-32B in BF16 and Llama-3.1-8B/70B in FP8 on one NVIDIA H100 SXM and
one H200 (``bench/gpu_forward.py``: random weights, each step captured in a CUDA graph, cuBLAS
GEMMs and fused attention), and each card's ceilings measured there (a 4 GB read, 8192^3
GEMMs). For the same steps the model's iteration time with its fixed per-step and host costs
removed (its per-layer kernel latency kept) is what it says the kernels take. Engines run the
same or faster kernels than plain PyTorch, so:

* no profile streams weights faster than the card reads memory, or multiplies faster than
  its measured GEMM peak;
* BF16 decode steps (weight and KV streaming) land near the measurement under every engine
  profile: within 1.35x on the H200, within 1.45x on the H100 (below);
* the reference build (TensorRT-LLM) prefills at about the rate the card computes;
* vLLM, which runs these very kernels (cuBLAS, FlashAttention), prefills at most about 10%
  slower than them (its compute multiplier has a floor, ``bench/calibrate.py`` ``FLOORS``).

PyTorch's FP8 path casts every activation and pads decode batches to 16 rows, slower than the
engines' FP8 kernels at a few rows, so FP8 steps bound the model only from below. SGLang's
profile prefills 1.2-1.4x slower than these kernels: held at the floor, its held-out error
rose, so its fitted compute efficiency still stands in for time the model does not place
elsewhere. That is a known gap (README, known weak spots), so no upper bound is asserted for it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from bench.gpu_forward_compare import ENGINES, Step, decode_laws, steps
from service.domain.llm import PRESETS
from service.domain.perfmodel.values import Engine

DATA = Path(__file__).resolve().parents[3] / "bench" / "data"


@dataclass(frozen=True, slots=True)
class Card:
    """One measured card: its file and datasheet figures (bytes/s, dense BF16 FLOP/s)."""

    gpu_id: str
    path: Path
    bandwidth: float
    dense_bf16: float
    decode_high: float
    """Most model kernel time over measured time for a BF16 decode step (see the decode test)."""


CARDS = (
    Card("h100-sxm", DATA / "gpu_forward_h100.csv", 3.35e12, 989e12, 1.45),
    Card("h200-sxm", DATA / "gpu_forward_h200.csv", 4.8e12, 989e12, 1.35),
)
ALL_STEPS = [s for card in CARDS for s in steps(card.path)]


@cache
def _steps(card: Card) -> list[Step]:
    return steps(card.path)


def _ceiling(card: Card, phase: str, precision: str) -> float:
    """A ceiling the CSV records: bytes/s of the read, or FLOP/s of the GEMM."""
    with card.path.open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["phase"] == phase and r["precision"] == precision:
                if phase == "read":
                    return 4e9 / (float(r["ms"]) / 1e3)
                n = int(r["tokens"])
                return 2 * n**3 / (float(r["ms"]) / 1e3)
    raise AssertionError(f"no {precision} {phase} ceiling in {card.path}")


def _ratio(s: Step, engine: Engine) -> float:
    return s.predicted_ms[engine] / s.measured_ms


def _bf16(card: Card, phase: str) -> list[Step]:
    return [s for s in _steps(card) if s.precision == "bf16" and s.phase == phase]


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.gpu_id)
def test_the_measurements_cover_both_phases_and_formats(card: Card) -> None:
    seen = {(s.model, s.precision, s.phase) for s in _steps(card)}
    for phase in ("decode", "prefill"):
        assert ("llama-3.1-8b", "bf16", phase) in seen
        assert ("qwen3-32b", "bf16", phase) in seen
        assert ("llama-3.1-70b", "fp8", phase) in seen
    assert all(s.gpu == card.gpu_id for s in _steps(card))


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.gpu_id)
def test_no_measured_step_beats_the_datasheet(card: Card) -> None:
    # weights are read once per step, prompts cost 2 FLOPs per parameter and token
    for s in _bf16(card, "decode") + _bf16(card, "prefill"):
        weight_bytes = PRESETS[s.model].params_b * 1e9 * 2
        floor_s = weight_bytes / card.bandwidth
        if s.phase == "prefill":
            flops = 2 * PRESETS[s.model].params_b * 1e9 * s.tokens
            floor_s = max(floor_s, flops / card.dense_bf16)
        assert s.measured_ms / 1e3 > floor_s, s


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.gpu_id)
def test_the_measured_ceilings_are_below_the_datasheet(card: Card) -> None:
    assert 0.7 * card.bandwidth < _ceiling(card, "read", "bf16") < card.bandwidth
    assert 0.6 * card.dense_bf16 < _ceiling(card, "gemm", "bf16") < card.dense_bf16
    assert _ceiling(card, "gemm", "bf16") < _ceiling(card, "gemm", "fp8") < 2 * card.dense_bf16


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.gpu_id)
@pytest.mark.parametrize("engine", ENGINES)
def test_no_profile_reads_weights_faster_than_the_card(card: Card, engine: Engine) -> None:
    read = _ceiling(card, "read", "bf16")
    for s in _bf16(card, "decode"):
        weights_s = PRESETS[s.model].params_b * 1e9 * 2 / read
        assert s.predicted_ms[engine] / 1e3 > weights_s, (s.model, s.batch, engine)


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.gpu_id)
@pytest.mark.parametrize("engine", ENGINES)
def test_no_profile_multiplies_faster_than_the_card(card: Card, engine: Engine) -> None:
    for s in _steps(card):
        if s.phase == "prefill" and s.tokens >= 512:
            peak = _ceiling(card, "gemm", s.precision)
            gemm_s = 2 * PRESETS[s.model].params_b * 1e9 * s.tokens / peak
            assert s.predicted_ms[engine] / 1e3 > gemm_s, (s.model, s.precision, s.tokens)


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.gpu_id)
@pytest.mark.parametrize("engine", ENGINES)
def test_bf16_decode_time_matches_the_card(card: Card, engine: Engine) -> None:
    decode = _bf16(card, "decode")
    assert len(decode) >= 9
    # Engines fuse the norms and activations PyTorch runs as separate kernels, and replays
    # of one step differ by a few percent from run to run. On the H100 the model is slower
    # (up to 1.42x at batch 1): one bandwidth efficiency per GPU family stands for about 54 us
    # of kernel latency per layer that does not shrink with bandwidth (README, known weak
    # spots), so it reads the H100's 3.35 TB/s as too slow and the H200's 4.8 as about right.
    for s in decode:
        assert 0.75 <= _ratio(s, engine) <= card.decode_high, (
            s.model,
            s.batch,
            s.context,
            _ratio(s, engine),
        )


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.gpu_id)
@pytest.mark.parametrize("engine", ENGINES)
def test_no_profile_prefills_much_faster_than_the_card(card: Card, engine: Engine) -> None:
    for s in _bf16(card, "prefill"):
        assert _ratio(s, engine) >= 0.75, (s.model, s.tokens, _ratio(s, engine))


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.gpu_id)
def test_the_reference_build_prefills_at_the_rate_the_card_computes(card: Card) -> None:
    # from 512 tokens on, a prefill is compute-bound (128 tokens still stream the weights)
    long = [s for s in _bf16(card, "prefill") if s.tokens >= 512]
    assert len(long) >= 4
    for s in long:
        assert 0.8 <= _ratio(s, "trtllm") <= 1.1, (s.model, s.tokens, _ratio(s, "trtllm"))


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.gpu_id)
def test_vllm_prefills_at_about_the_rate_of_the_kernels_it_runs(card: Card) -> None:
    long = [s for s in _bf16(card, "prefill") if s.tokens >= 512]
    ratios = sorted(_ratio(s, "vllm") for s in long)
    assert ratios[len(ratios) // 2] <= 1.15, ratios
    assert ratios[-1] <= 1.25, ratios


def test_small_batch_decode_is_bytes_over_bandwidth_plus_latency_per_layer() -> None:
    # On two cards of one family with different memory (H100 3.35 TB/s, H200 4.8 TB/s), a
    # decode step of up to 16 sequences takes the bytes it reads over a fixed share of the
    # datasheet bandwidth plus a fixed time per layer; bandwidth alone cannot fit both cards.
    laws = {(law.precision, law.layer_us > 0): law for law in decode_laws(ALL_STEPS)}
    two_term, bandwidth_only = laws[("bf16", True)], laws[("bf16", False)]
    assert two_term.rows >= 12
    assert two_term.worst_error < 0.06 < bandwidth_only.worst_error
    assert 0.8 < two_term.efficiency < 1.0
    assert 30 < two_term.layer_us < 80
    assert bandwidth_only.efficiency < two_term.efficiency
