"""Routing a gateway needs for a fleet: whether any line may take any request (``shared``) or
requests must be sent by their length (``by_shape``), with the cut-offs and each line's share.

Request shapes are sorted by (prompt, output) tokens; consecutive shapes served by the same set
of lines form one route. Between two routes the cut-off is on prompt tokens when their prompts
differ (half-way between the longest prompt of one and the shortest of the next), else on output
tokens (``max_tokens`` as the client asks for it). Within a route each line takes the share of
the route's load the solver assigned it. Pure.
"""

from __future__ import annotations

import math

from service.domain.planner.request import PlanRequest
from service.domain.planner.result import Fleet, Route, Routing
from service.domain.vocabulary import RoutingMode

_EPS = 1e-9


def routing(request: PlanRequest, fleet: Fleet) -> Routing:
    """The routing of ``fleet`` (its lines indexed as in ``fleet.lines``)."""
    shapes = sorted(request.buckets, key=lambda b: (b.prompt_tokens, b.output_tokens, b.key))
    served = [dict(line.buckets) for line in fleet.lines]
    lines_of = {
        b.key: tuple(i for i, s in enumerate(served) if s.get(b.key, 0.0) > _EPS) for b in shapes
    }
    groups: list[list[int]] = []
    for i, b in enumerate(shapes):
        if groups and lines_of[shapes[groups[-1][-1]].key] == lines_of[b.key]:
            groups[-1].append(i)
        else:
            groups.append([i])
    every_line = tuple(range(len(fleet.lines)))
    mode: RoutingMode = (
        "shared" if all(lines_of[b.key] == every_line for b in shapes) else "by_shape"
    )
    routes = []
    for g, members in enumerate(groups):
        keys = tuple(shapes[i].key for i in members)
        prompt_max: float | None = None
        output_max: float | None = None
        if g + 1 < len(groups):
            last, first_next = shapes[members[-1]], shapes[groups[g + 1][0]]
            if last.prompt_tokens != first_next.prompt_tokens:
                prompt_max = math.floor((last.prompt_tokens + first_next.prompt_tokens) / 2)
            else:
                output_max = math.floor((last.output_tokens + first_next.output_tokens) / 2)
        total = math.fsum(served[i].get(k, 0.0) for i in range(len(served)) for k in keys)
        shares = tuple(
            (i, math.fsum(served[i].get(k, 0.0) for k in keys) / total if total > 0 else 0.0)
            for i in lines_of[keys[0]]
        )
        routes.append(
            Route(
                buckets=keys,
                prompt_tokens_max=int(prompt_max) if prompt_max is not None else None,
                output_tokens_max=int(output_max) if output_max is not None else None,
                line_shares=shares,
            )
        )
    return Routing(mode=mode, routes=tuple(routes))


def routing_sentence(r: Routing, fleet: Fleet, asked: RoutingMode = "by_shape") -> str:
    """The explanation's sentence on how traffic reaches the lines (``asked``: the request's
    routing option)."""
    if r.mode == "shared":
        why = (
            " (routing: shared, as asked; each line is sized for the whole mix)"
            if asked == "shared"
            else ""
        )
        return (
            "Routing: every line serves the whole request mix, so any line may take any "
            f"request{why}."
        )
    parts = []
    for route in r.routes:
        if route.prompt_tokens_max is not None:
            cond = f"prompts up to {route.prompt_tokens_max} tokens"
        elif route.output_tokens_max is not None:
            cond = f"outputs up to {route.output_tokens_max} tokens"
        else:
            cond = "the rest"
        to = ", ".join(
            f"{fleet.lines[i].gpu} on {fleet.lines[i].provider} ({share * 100:.0f}%)"
            for i, share in route.line_shares
        )
        parts.append(f"{cond} -> {to}")
    return (
        "Routing: request shapes are split across lines, so the gateway routes by length: "
        + "; ".join(parts)
        + "."
    )
