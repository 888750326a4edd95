"""Routing made explicit: a fleet whose lines all serve the whole mix is ``shared``; when request
shapes are split across lines the plan says ``by_shape`` and gives the gateway the length
cut-offs and each line's share of every route."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import linprog

from service.domain.llm import resolve_model
from service.domain.perfmodel import Deployment, RequestShape, Slo, max_qps_under_slo
from service.domain.planner import PlanRequest, WorkloadBucket, plan
from service.domain.planner.assemble import assemble_fleet, fleet_capacity
from service.domain.planner.candidates import build_candidates
from service.domain.solver import FleetSolution, SolveStatus
from tests.unit.planner.test_planner import SPLIT_PROVIDER, request, snapshot, split_snapshot

MIX = (WorkloadBucket("b0", 0.8, 256, 64), WorkloadBucket("b1", 0.2, 8000, 256))
SLO = Slo(ttft_ms=1000, tpot_ms=100, e2e_ms=None, percentile=95)


def split_fleet_qps() -> float:
    """The load at which two H100s for the long prompts plus half an L4's worth of short ones
    is cheapest (the planner test of a strictly cheaper mix): L4s take only short prompts."""
    gpus = {g.id: g for g in snapshot().gpus}
    arch = resolve_model("llama-3.1-8b").arch

    def capacity(gpu: str, b: WorkloadBucket) -> float:
        dep = Deployment(gpus[gpu], 1, "bf16", "bf16", "vllm")
        return max_qps_under_slo(arch, dep, RequestShape(b.prompt_tokens, b.output_tokens), SLO).qps

    h_short, h_long = capacity("h100-sxm", MIX[0]), capacity("h100-sxm", MIX[1])
    l_short = capacity("l4", MIX[0])
    return (2 + 0.5 * l_short / h_short) / (MIX[1].share / h_long + MIX[0].share / h_short)


def split_request() -> PlanRequest:
    return request(
        qps=split_fleet_qps(),
        buckets=MIX,
        slo=SLO,
        gpus=("l4", "h100-sxm"),
        providers=(SPLIT_PROVIDER,),
    )


def test_shapes_split_across_lines_are_routed_by_length() -> None:
    p = plan(split_request(), split_snapshot())
    assert p.fleet is not None and p.routing is not None
    lines = p.fleet.lines
    assert {x.gpu for x in lines} == {"l4", "h100-sxm"}
    r = p.routing
    assert r.mode == "by_shape"
    assert [route.buckets for route in r.routes] == [("b0",), ("b1",)]
    short, long_ = r.routes
    # the cut-off lies half-way between the short (256) and the long (8000) prompt
    assert short.prompt_tokens_max == (256 + 8000) // 2
    assert long_.prompt_tokens_max is None and long_.output_tokens_max is None
    gpu_of = {i: x.gpu for i, x in enumerate(lines)}
    assert {gpu_of[i] for i, _ in long_.line_shares} == {"h100-sxm"}  # L4s cannot take them
    assert "l4" in {gpu_of[i] for i, _ in short.line_shares}
    for route in r.routes:
        assert sum(s for _, s in route.line_shares) == pytest.approx(1.0)
        for i, share in route.line_shares:
            served = sum(q for b, q in lines[i].buckets if b in route.buckets)
            total = sum(q for x in lines for b, q in x.buckets if b in route.buckets)
            assert share == pytest.approx(served / total)
    sentence = next(s for s in p.explanation if s.startswith("Routing"))
    assert f"prompts up to {short.prompt_tokens_max} tokens" in sentence


def test_one_line_serving_the_whole_mix_is_shared() -> None:
    p = plan(request(qps=5, buckets=MIX, slo=SLO, gpus=("h100-sxm",)), snapshot())
    assert p.fleet is not None and p.routing is not None
    assert len(p.fleet.lines) == 1 and dict(p.fleet.lines[0].buckets).keys() == {"b0", "b1"}
    assert p.routing.mode == "shared"
    assert p.routing.routes[0].line_shares == ((0, 1.0),)
    assert any("any line may take any request" in s for s in p.explanation)
    single = plan(request(qps=5, gpus=("h100-sxm",)), snapshot())
    assert single.routing is not None and single.routing.mode == "shared"
    assert single.routing.routes[0].prompt_tokens_max is None


def test_shared_routing_makes_every_line_serve_the_whole_mix_and_prices_it() -> None:
    """The split fleet above, asked with routing "shared": L4s cannot serve the long prompts,
    so no line may be an L4; every line serves both shapes in the mix's proportions, and the
    fleet costs at least what the split one does."""
    split = split_request()
    by_shape = plan(split, split_snapshot())
    shared = plan(replace(split, routing="shared"), split_snapshot())
    assert shared.fleet is not None and by_shape.fleet is not None
    assert shared.routing is not None and shared.routing.mode == "shared"
    assert {x.gpu for x in shared.fleet.lines} == {"h100-sxm"}
    for line in shared.fleet.lines:
        served = dict(line.buckets)
        assert served.keys() == {"b0", "b1"}
        assert served["b1"] / (served["b0"] + served["b1"]) == pytest.approx(MIX[1].share)
    assert shared.fleet.usd_per_hour > by_shape.fleet.usd_per_hour
    assert shared.fleet.qps_capacity is not None
    assert shared.fleet.qps_capacity >= split.qps * (1 - 1e-9)
    assert any("routing: shared, as asked" in s for s in shared.explanation)


def test_fleet_capacity_is_the_assignment_lp_optimum() -> None:
    """A line of L4s (short prompts only) and a line of H100s: the most load of the mix the two
    lines carry is the LP over the assignment, checked against SciPy's ``linprog`` and against
    the closed form of this two-line case."""
    req = request(qps=split_fleet_qps(), buckets=MIX, slo=SLO, gpus=("l4", "h100-sxm"))
    candidates = build_candidates(req, snapshot())
    l4 = next(k for k, c in candidates.items.items() if c.option.gpu_id == "l4")
    h100 = next(k for k, c in candidates.items.items() if c.option.gpu_id == "h100-sxm")
    units = {l4: 3, h100: 2}
    solution = FleetSolution(status=SolveStatus.OPTIMAL, units=tuple(sorted(units.items())))
    got = fleet_capacity(req, candidates, solution)

    caps = {k: [candidates.items[k].model_capacity_qps(s) for s in range(2)] for k in units}
    assert caps[l4][1] == 0.0 and caps[h100][1] > 0.0  # L4s cannot serve the long prompts
    keys = sorted(units)
    shares = [b.share for b in MIX]
    # variables z[s, g] then lam: maximise lam, sum_g z[s, g] = share[s] lam,
    # sum_s z[s, g] / cap[s, g] <= units[g]
    n = 2 * len(keys) + 1
    a_eq = np.zeros((2, n))
    a_ub = np.zeros((len(keys), n))
    bounds: list[tuple[float, float | None]] = []
    for s in range(2):
        a_eq[s, -1] = -shares[s]
        for g, key in enumerate(keys):
            a_eq[s, s * len(keys) + g] = 1.0
            if caps[key][s] > 0:
                a_ub[g, s * len(keys) + g] = 1.0 / caps[key][s]
                bounds.append((0.0, None))
            else:
                bounds.append((0.0, 0.0))
    bounds.append((0.0, None))
    c = np.zeros(n)
    c[-1] = -1.0
    oracle = linprog(c, A_ub=a_ub, b_ub=[units[k] for k in keys], A_eq=a_eq, b_eq=[0, 0],
                     bounds=bounds, method="highs")  # fmt: skip
    assert oracle.status == 0
    assert got == pytest.approx(oracle.x[-1], rel=1e-9)
    # Closed form: the H100s take every long request; what time they have left and the L4s'
    # time serve the short ones, so lam = min over the binding resource.
    long_time = shares[1] / caps[h100][1]
    short_h, short_l = caps[h100][0], caps[l4][0]
    # lam * long_time <= units[h100] and lam * share0 <= (units[h100] - lam long_time) short_h
    # + units[l4] short_l
    lam = min(
        units[h100] / long_time,
        (units[h100] * short_h + units[l4] * short_l) / (shares[0] + long_time * short_h),
    )
    assert got == pytest.approx(lam, rel=1e-9)


def test_a_line_listed_for_a_shape_it_cannot_serve_carries_none_of_it() -> None:
    """A spread fleet's solution may list a line at 0 req/s for a shape the line cannot serve
    (an L4 for the 8k-token prompts); assembling it evaluates the line on what it serves, and
    an idle line on a shape it can serve, instead of failing on a zero rate."""
    r = split_request()
    candidates = build_candidates(r, split_snapshot())
    (l4,) = [k for k, c in candidates.items.items() if c.option.gpu_id == "l4"]
    (h100,) = [k for k, c in candidates.items.items() if c.option.gpu_id == "h100-sxm"]
    assert candidates.items[l4].replica_capacity[1].qps == 0
    solution = FleetSolution(
        status=SolveStatus.OPTIMAL,
        units=tuple(sorted(((l4, 1), (h100, 3)))),
        served_qps=tuple(
            sorted(((MIX[0].key, l4, 2.0), (MIX[1].key, l4, 0.0), (MIX[1].key, h100, 3.0)))
        ),
    )
    fleet = assemble_fleet(r, candidates, solution, with_capacity=False)
    by_gpu = {line.gpu: line for line in fleet.lines}
    assert by_gpu["l4"].ttft_ms > 0 and by_gpu["h100-sxm"].ttft_ms > 0
    idle = FleetSolution(status=SolveStatus.OPTIMAL, units=((l4, 1),), served_qps=())
    (line,) = assemble_fleet(r, candidates, idle, with_capacity=False).lines
    assert line.gpu == "l4" and line.ttft_ms > 0
