"""Prompts beside a decode when the KV pool holds fewer than two sequences.

A prompt is prefilled into KV blocks. With room for two or more sequences the next prompts can
be prefilled while the others decode, and the model charges all prompt work to the decoding
iterations. A pool that holds ``n`` sequences, ``1 <= n < 2``, runs one sequence at a time:
while it decodes, only the free ``n - 1`` of a sequence's blocks can take the next prompt, and
the rest of that prompt is prefilled after the sequence completes, when nothing decodes. What
follows from that, whatever the fitted constants:

* with ``n`` at 1 a request decodes at the pure decode step (no prompt beside it), at every load;
* the prompt work a decode sees grows linearly with the free room and is all of it from ``n = 2``;
* where the prompts run does not change the work per request: the arrival rate a running batch
  sustains, and the TTFT of an unqueued prompt, are the same for every ``n``;
* the array path that capacity searches use (``lockstep``) gives the scalar path's numbers.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from service.domain.llm import PRESETS
from service.domain.perfmodel import Deployment, lockstep
from service.domain.perfmodel.calibration import PUBLIC_PROFILES, Calibration
from service.domain.perfmodel.coefficients import Setup, build_setup
from service.domain.perfmodel.memory import (
    beside_decode_share,
    kv_pool_bytes,
    sequence_kv_bytes,
    tokens_per_sequence,
)
from service.domain.perfmodel.queueing import (
    e2e_q,
    normal_quantile,
    operating_point,
    tpot_q,
    ttft_q,
)
from tests.unit.perfmodel.physics import dep, perturbed

# long prompts and short outputs: the prompt work per decode step is several decode steps
CASES: list[tuple[str, Deployment, int, int]] = [
    ("qwen3-32b", dep("a100-sxm-80gb", 1, "bf16", "vllm"), 32000, 77),
    ("llama-3.1-70b", dep("h100-sxm", 2, "fp8", "sglang"), 24000, 120),
    ("llama-3.1-8b", dep("l40s", 1, "fp8", "trtllm"), 16000, 64),
]
Case = tuple[str, Deployment, int, int]
IDS = [f"{m}-{d.gpu.id}-{d.engine}" for m, d, _, _ in CASES]


def _pool_of(s: Setup, l_in: int, l_out: int, n: float) -> Setup:
    """``s`` on a card whose memory makes the KV pool hold exactly ``n`` sequences."""
    per_seq = sequence_kv_bytes(s, tokens_per_sequence(s, l_in, l_out))
    more = (n * per_seq - kv_pool_bytes(s, l_in, l_out)) / s.kv_fraction
    out = replace(s, capacity_b=s.capacity_b + more)
    assert kv_pool_bytes(out, l_in, l_out) / per_seq == pytest.approx(n, rel=1e-9)
    return out


def _setup(case: Case, cal: Calibration) -> Setup:
    model, d, _, _ = case
    return build_setup(PRESETS[model], d, PUBLIC_PROFILES[d.engine], cal)


def _pools(case: Case, sizes: tuple[float, ...]) -> list[Setup]:
    """The case's deployment under the shipped fit, on cards whose KV pool holds each of
    ``sizes`` sequences of the case's shape."""
    _, _, l_in, l_out = case
    base = _setup(case, perturbed()[0])
    return [_pool_of(base, l_in, l_out, n) for n in sizes]


@pytest.mark.parametrize("cal", perturbed()[:3], ids=range(3))
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_pool_of_one_sequence_decodes_at_the_pure_decode_step(
    case: Case, cal: Calibration
) -> None:
    _, _, l_in, l_out = case
    s = _pool_of(_setup(case, cal), l_in, l_out, 1.0)
    for b in (0.05, 0.5, 1.0):
        op = operating_point(s, b, l_in, l_out)
        if b == 1.0:  # the prompt work is real: charged to the decode it would slow it
            assert op.tau > op.tau0 * 1.05
        assert op.tau_dec == pytest.approx(op.tau0, rel=1e-12)
        # the spread of a Binomial share goes with its square root, so a share left at 1e-16
        # by the pool's float arithmetic shows as 1e-8 of the step: equal to within 1e-6
        for q in (0.5, 0.9, 0.99):
            assert tpot_q(op, q) == pytest.approx(op.tau0, rel=1e-6)
        median = ttft_q(s, op, 0.5) + op.n_dec * op.tau0
        assert e2e_q(s, op, 0.5) == pytest.approx(median, rel=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_prompt_work_beside_a_decode_grows_with_the_free_room(case: Case) -> None:
    sizes = (1.0, 1.2, 1.5, 1.8, 2.0, 2.5, 6.0)
    l_in, l_out = case[2], case[3]
    last = 0.0
    for n, s in zip(sizes, _pools(case, sizes), strict=True):
        share = beside_decode_share(s, l_in, l_out)
        assert share == pytest.approx(min(n - 1.0, 1.0), abs=1e-9)
        op = operating_point(s, 1.0, l_in, l_out)
        assert op.tau_dec == pytest.approx(op.tau0 + share * (op.tau - op.tau0), rel=1e-12)
        assert op.f_dec == pytest.approx(share * op.f, rel=1e-12)
        assert op.tau_dec >= last
        last = op.tau_dec
        if n > 2.0:  # all of it, exactly as before this mechanism
            assert (op.tau_dec, op.f_dec) == (op.tau, op.f)
            assert tpot_q(op, 0.5) == pytest.approx(op.tau, rel=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_where_the_prompts_run_does_not_change_the_work_per_request(case: Case) -> None:
    ops = [operating_point(s, 0.8, case[2], case[3]) for s in _pools(case, (1.0, 1.5, 3.0))]
    for op in ops[1:]:
        assert op.lam == pytest.approx(ops[0].lam, rel=1e-12)
        assert op.tau == pytest.approx(ops[0].tau, rel=1e-12)
        assert op.ttft == pytest.approx(ops[0].ttft, rel=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_array_path_matches_the_scalar_path(case: Case) -> None:
    setups = _pools(case, (1.0, 1.3, 1.7, 2.4))
    l_in, l_out = case[2], case[3]
    ln = lockstep.lanes(setups, [(l_in, l_out)] * len(setups))
    b = np.array([0.4, 1.0, 0.9, 2.0])
    pt = lockstep.points(ln, b)
    for q in (0.5, 0.95):
        ttft, tpot, e2e = lockstep.quantiles(ln, pt, q, normal_quantile(q))
        for k, s in enumerate(setups):
            op = operating_point(s, float(b[k]), l_in, l_out)
            assert pt.tau_dec[k] == pytest.approx(op.tau_dec, rel=1e-12)
            assert ttft[k] == pytest.approx(ttft_q(s, op, q), rel=1e-9)
            assert tpot[k] == pytest.approx(tpot_q(op, q), rel=1e-9)
            assert e2e[k] == pytest.approx(e2e_q(s, op, q), rel=1e-9)
