"""The prompt queue: a backlogged engine fills its token budget, so a prompt costs its share of
a full iteration, and latencies never fall as the load rises.

Waiting prompts are admitted in iterations of ``room = budget - B`` prompt tokens. While a queue
stands, those iterations are full and each lasts as long as an iteration carrying ``room``
prompt tokens beside the ``B`` decoding sequences, so one prompt of ``L_in`` tokens keeps the
queue's server busy for ``L_in / room`` of that iteration. Two consequences that follow from
the mechanism, not from fitted numbers:

* the service time is at least the prompt's own prefill work beside the batch (the full
  iteration's time per prompt token, times ``L_in``), never a share of an iteration that
  carries only this prompt (which would claim ``room`` prompt tokens cost what ``L_in`` do);
* it is continuous where chunked prefill starts splitting the prompt (``room`` falls below
  ``L_in``), so TTFT at a percentile does not drop when the running batch grows past that
  point, and a capacity search has one crossing to find.
"""

from __future__ import annotations

import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import Deployment
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, Calibration
from service.domain.perfmodel.capacity import engine_setup
from service.domain.perfmodel.coefficients import build_setup
from service.domain.perfmodel.iteration import iteration_mix, iteration_time, mean_context
from service.domain.perfmodel.memory import token_budget
from service.domain.perfmodel.queueing import operating_point, ttft_q
from service.domain.perfmodel.serving import batch_caps
from tests.unit.perfmodel.physics import dep, perturbed

CASES: list[tuple[str, Deployment]] = [
    ("llama-3.1-70b", dep("a100-sxm-80gb", 4, "fp8", "vllm")),
    ("llama-3.1-70b", dep("h100-sxm", 2, "fp8", "sglang")),
    ("llama-3.1-8b", dep("l40s", 1, "fp8", "vllm")),
    ("llama-3.1-8b", dep("h100-sxm", 1, "fp8", "trtllm")),
    ("mixtral-8x7b", dep("h200-sxm", 2, "fp8", "vllm")),
]
IDS = [f"{m}-{d.gpu.id}-tp{d.tensor_parallel}-{d.engine}" for m, d in CASES]
PROMPTS = (700, 2023, 3100, 6000)


def _batches(b_max: float, n: int = 400) -> list[float]:
    """``n`` running batches from 1 to ``b_max``, evenly spaced."""
    return [1.0 + (b_max - 1.0) * k / (n - 1) for k in range(n)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("l_in", PROMPTS)
def test_ttft_never_falls_as_the_batch_grows(case: tuple[str, Deployment], l_in: int) -> None:
    model, d = case
    s = engine_setup(PRESETS[model], d)
    l_out = 696
    b_max = float(batch_caps(s, l_in, l_out).b_max)
    if b_max <= 1.0:
        pytest.skip("the card holds one sequence at most")
    for q in (0.5, 0.95, 0.99):
        last = 0.0
        for b in _batches(b_max):
            t = ttft_q(s, operating_point(s, b, l_in, l_out), q)
            assert t >= last * (1 - 1e-9), (q, b, t, last)
            last = t


@pytest.mark.parametrize("cal", perturbed()[:3], ids=range(3))
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_prompt_costs_its_share_of_a_full_iteration(
    case: tuple[str, Deployment], cal: Calibration
) -> None:
    """Service time = (time of an iteration carrying ``room`` prompt tokens) x L_in / room,
    whatever the fitted constants; so it is at least the prompt's marginal prefill work."""
    model, d = case
    s = build_setup(PRESETS[model], d, PUBLIC_PROFILES[d.engine], cal)
    for l_in in PROMPTS:
        l_out = 300
        b_max = float(batch_caps(s, l_in, l_out).b_max)
        for b in (1.0, 0.5 * b_max, 0.9 * b_max):
            mix = iteration_mix(s, b, l_in, l_out)
            room = max(token_budget(s, l_in, l_out) - b, 1.0)
            if not s.chunked:
                room = max(room, float(l_in))
            c = mean_context(l_in, l_out)
            full = iteration_time(s, b, room, c, l_in)
            assert mix.service == pytest.approx(full * l_in / room, rel=1e-12)
            # at least the prompt's own tokens' worth of the full iteration's extra time
            marginal = (full - iteration_time(s, b, 0.0, c, l_in)) * l_in / room
            assert mix.service >= marginal


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_service_is_continuous_where_chunking_starts(case: tuple[str, Deployment]) -> None:
    """Just below and just above the batch where ``room`` reaches ``L_in``, the service time
    differs by a hair, not by the factor the chunk count steps by."""
    model, d = case
    s = engine_setup(PRESETS[model], d)
    if not s.chunked:
        pytest.skip("the engine admits whole prompts")
    l_out = 696
    # a prompt 8 tokens shorter than the budget: chunking starts at a running batch of 8
    l_in = int(token_budget(s, 2023, l_out)) - 8
    edge = token_budget(s, l_in, l_out) - l_in  # room == l_in here
    assert 1.0 < edge < float(batch_caps(s, l_in, l_out).b_max) - 1.0
    below = iteration_mix(s, edge - 1e-6, l_in, l_out).service
    above = iteration_mix(s, edge + 1e-6, l_in, l_out).service
    assert above == pytest.approx(below, rel=1e-4)
