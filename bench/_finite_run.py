"""A request-rate benchmark of a fixed number of identical requests, iteration by iteration.

A rate benchmark (Triton's ``benchmark_core_model``, ``vllm bench serve --request-rate R``)
sends ``n`` requests at rate ``R`` and reports the output tokens of all of them over the time
from the first send to the last completion. That differs from the engine's steady state at two
ends of the run: the batch fills while requests arrive (``B_max / R`` seconds of a smaller
batch), and after the last arrival it drains (the last requests decode alone). With a few
hundred requests and a batch of a few hundred, both ends are a large part of the run, and the
reported throughput is well below the steady capacity even when the run is saturated.

:func:`finite_rate_run` plays the run out: requests arrive at ``i / R``, are admitted in
arrival order while fewer than ``B_max`` sequences are in the engine, have their prompts carried
in the token budget left by the decoding sequences (in chunks where the engine chunks prefill,
whole otherwise: an engine that does not chunk takes one whole prompt into an iteration whose
budget the decodes leave too small for it, as the steady state's iteration mix does, e.g. vLLM's
V0 scheduler, whose budget without chunked prefill is at least the model length), and then
decode ``L_out - 1`` tokens, one per iteration, each iteration timed by the performance model's
:func:`iteration_time` at the batch's mean context. Requests whose prompts finish in the same
iteration form a cohort that finishes together.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from service.domain.perfmodel.coefficients import Setup
from service.domain.perfmodel.iteration import iteration_time
from service.domain.perfmodel.memory import token_budget


@dataclass(frozen=True, slots=True)
class FiniteRun:
    """What the benchmark reports: output tokens/s and requests/s over the whole run, the run's
    length, and the mean TTFT and end-to-end latency of its requests (seconds)."""

    tokens_per_s: float
    requests_per_s: float
    duration_s: float
    ttft_mean_s: float
    e2e_mean_s: float


def finite_rate_run(s: Setup, b_max: int, l_in: int, l_out: int, n: int, rate: float) -> FiniteRun:
    """Play out ``n`` requests of ``l_in``/``l_out`` tokens sent at ``rate`` req/s to an engine
    that holds at most ``b_max`` sequences (see the module docstring)."""
    if n < 1 or rate <= 0.0 or b_max < 1 or l_in < 1:
        raise ValueError("a run needs a request, a positive rate, a prompt and room for one")
    lo = max(l_out, 2)
    n_dec = lo - 1
    budget = token_budget(s, l_in, lo)
    oh = s.ttft_oh_s
    t = 0.0
    step = 0
    arrived = 0  # requests sent so far
    waiting: deque[float] = deque()  # arrival times, not yet admitted
    filling: deque[float] = deque()  # arrival times, admitted, prompt not finished
    head_left = float(l_in)  # prompt tokens left of the first filling request
    cohorts: deque[tuple[int, int, float]] = deque()  # (last step, requests, sum of arrivals)
    decoding = 0
    ctx_sum = 0.0
    done = 0
    ttft_sum = 0.0
    e2e_sum = 0.0
    while done < n:
        while arrived < n and arrived / rate <= t:
            waiting.append(arrived / rate)
            arrived += 1
        while waiting and decoding + len(filling) < b_max:
            if not filling:
                head_left = float(l_in)
            filling.append(waiting.popleft())
        if not decoding and not filling:
            t = arrived / rate  # idle until the next request
            continue
        room = budget - decoding
        carried = 0.0
        finished = 0  # filling requests whose prompt completes this iteration
        if s.chunked:
            left = head_left
            for _ in filling:
                if carried >= room:
                    head_left = left
                    break
                take = min(left, room - carried)
                carried += take
                if take < left:
                    head_left = left - take
                    break
                finished += 1
                left = float(l_in)
            else:
                head_left = float(l_in)
        else:
            while finished < len(filling) and carried + l_in <= room:
                carried += l_in
                finished += 1
            if not finished and filling:
                carried, finished = float(l_in), 1  # a whole prompt beside the decodes
        t += iteration_time(
            s, float(decoding), carried, ctx_sum / decoding if decoding else 0.0, l_in
        )
        step += 1
        ctx_sum += decoding  # each decoding sequence added a token
        while cohorts and cohorts[0][0] == step:
            _, count, arrivals = cohorts.popleft()
            decoding -= count
            done += count
            e2e_sum += count * (t + oh) - arrivals
            ctx_sum -= count * (l_in + 1 + n_dec)
        if finished:
            arrivals = 0.0
            for _ in range(finished):
                arrivals += filling.popleft()
            ttft_sum += finished * (t + oh) - arrivals
            cohorts.append((step + n_dec, finished, arrivals))
            decoding += finished
            ctx_sum += finished * (l_in + 1)
    duration = t + oh  # the last response leaves with the request handling
    return FiniteRun(
        tokens_per_s=n * l_out / duration,
        requests_per_s=n / duration,
        duration_s=duration,
        ttft_mean_s=ttft_sum / n,
        e2e_mean_s=e2e_sum / n,
    )
