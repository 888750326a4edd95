"""Plan renderings: JSON (``PlanOut``), an aligned text table for a terminal, and a flat object
of string values for Terraform's ``external`` data source; and ``PlanRenderer``, which keeps the
bytes of recent renderings (a plan id names one plan forever, so they never go stale)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import msgspec

from service.api.schemas.plan_response import FleetLineOut, PlanOut
from service.domain.planner import SolvedPlan

Format = Literal["json", "text", "flat"]


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def fmt(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return [fmt(headers), *(fmt(row) for row in rows)]


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or value < 0 else f"{value:,.{digits}f}"


def _date(value: datetime | None) -> str:
    return value.date().isoformat() if value else "-"


def _line_cells(line: FleetLineOut) -> list[str]:
    where = f"{line.provider}/{line.region}"
    return [
        line.gpu,
        str(line.tensor_parallel),
        where,
        line.provider_kind,
        line.instance_type,
        _date(line.price_observed_at),
        str(line.replicas),
        str(line.cards),
        _money(line.usd_per_hour),
        _num(line.assigned_qps, 2),
        _num(line.qps_capacity, 2),
        f"{line.utilization * 100:.0f}%",
        _num(line.ttft_ms, 0),
        _num(line.tpot_ms, 1),
    ]


def plan_text(plan: PlanOut, *, stale: bool = False) -> str:
    """The plan as a person reads it in a terminal (``?format=text``)."""
    req = plan.request
    slo = req.slo
    pct = f"p{slo['percentile']:g}"
    limits = ", ".join(
        f"{name} {pct} <= {slo[key]:g} ms"
        for name, key in (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms"), ("E2E", "e2e_ms"))
        if slo.get(key) is not None
    )
    model = req.model if isinstance(req.model, str) else "custom model"
    lines = [
        f"gpuplan plan {plan.plan_id}",
        f"status: {plan.status}   catalog revision: {plan.catalog_revision}   prices as of: "
        f"{_date(plan.prices_as_of)}"
        + (
            f"   oldest price used: {_date(plan.oldest_price_observed_at)}"
            if plan.oldest_price_observed_at
            else ""
        )
        + ("   (catalog may be stale: database unreachable)" if stale else ""),
        f"model: {model} {req.precision} on {req.engine}   load: {req.workload['qps']:g} req/s"
        + (
            f" + {req.constraints['headroom'] * 100:g}% headroom"
            if req.constraints["headroom"]
            else " + model-error headroom"
            if req.constraints["headroom"] is None
            else ""
        )
        + f"   SLO: {limits or 'none'}   pricing: {req.constraints['pricing']}",
        "",
    ]
    headers = [
        "GPU",
        "TP",
        "WHERE",
        "KIND",
        "INSTANCE",
        "OBSERVED",
        "REPLICAS",
        "CARDS",
        "USD/H",
        "LOAD",
        "CAPACITY",
        "UTIL",
        f"TTFT {pct}",
        f"TPOT {pct}",
    ]
    right = {1, 6, 7, 8, 9, 10, 11, 12, 13}
    if plan.fleet:
        lines.append("FLEET (load and capacity in req/s; latencies in ms)")
        rows = [_line_cells(line) for line in plan.fleet]
        rows.append(
            [
                "TOTAL",
                "",
                "",
                "",
                "",
                "",
                str(sum(x.replicas for x in plan.fleet)),
                str(plan.total_cards),
                _money(plan.usd_per_hour),
                _num(sum(x.assigned_qps for x in plan.fleet), 2),
                _num(plan.qps_capacity, 2),
                "",
                "",
                "",
            ]
        )
        lines += _table(headers, rows, right)
        lines.append(
            f"cost: {_money(plan.usd_per_hour)} USD/hour, {_money(plan.usd_per_month)} USD/month, "
            f"{_money(plan.usd_per_million_output_tokens)} USD per million output tokens"
        )
        if plan.savings_vs_best_single_type and plan.savings_vs_best_single_type.usd_per_hour > 0:
            s = plan.savings_vs_best_single_type
            lines.append(
                f"saves {_money(s.usd_per_hour)} USD/hour ({s.percent:.1f}%) "
                f"vs the best single type ({s.versus_gpu})"
            )
    else:
        lines.append("FLEET: none meets the request")
    if plan.max_qps_within_budget is not None:
        lines.append(f"most load within budget: {plan.max_qps_within_budget:g} req/s")
    if plan.alternatives:
        lines += ["", "ALTERNATIVES (cheapest fleet of one GPU type)"]
        rows = [
            [
                a.gpu,
                str(a.total_cards),
                _money(a.usd_per_hour),
                _money(a.usd_per_month),
                ", ".join(
                    f"{x.replicas}x tp{x.tensor_parallel} {x.provider}/{x.instance_type}"
                    for x in a.fleet
                ),
            ]
            for a in plan.alternatives
        ]
        lines += _table(["GPU", "CARDS", "USD/H", "USD/MONTH", "FLEET"], rows, {1, 2, 3})
    if plan.rejected:
        lines += ["", "REJECTED"]
        if any(r.best_tpot_ms is not None for r in plan.rejected):
            lines += _table(
                ["GPU", f"BEST TTFT {pct}", f"BEST TPOT {pct}", "REASON"],
                [
                    [r.gpu, _num(r.best_ttft_ms, 0), _num(r.best_tpot_ms, 1), r.reason]
                    for r in plan.rejected
                ],
                {1, 2},
            )
            lines.append(
                "(best: the lowest latency in ms each GPU reaches on this workload, at the "
                "lightest load that counts)"
            )
        else:
            lines += _table(["GPU", "REASON"], [[r.gpu, r.reason] for r in plan.rejected], set())
    if plan.relaxations:
        lines += ["", "RELAXATIONS (changes that make the request feasible, cheapest first)"]
        rows = [
            [r.kind, _money(r.usd_per_hour), _money(r.usd_per_month), r.summary]
            for r in plan.relaxations
        ]
        lines += _table(["CHANGE", "USD/H", "USD/MONTH", "WHAT"], rows, {1, 2})
    if plan.explanation:
        lines += ["", "WHY"] + [f"- {s}" for s in plan.explanation]
    if plan.assumptions:
        lines += ["", "ASSUMPTIONS"] + [f"- {s}" for s in plan.assumptions]
    return "\n".join(lines) + "\n"


def plan_flat(plan: PlanOut) -> dict[str, str]:
    """Every value a string, no nesting (Terraform ``external`` data source): plan totals plus
    ``<field>_<i>`` for fleet line ``i``."""

    def s(value: object) -> str:
        return "" if value is None else str(value)

    flat = {
        "plan_id": plan.plan_id,
        "status": plan.status,
        "catalog_revision": s(plan.catalog_revision),
        "prices_as_of": s(plan.prices_as_of.isoformat() if plan.prices_as_of else None),
        "oldest_price_observed_at": s(
            plan.oldest_price_observed_at.isoformat() if plan.oldest_price_observed_at else None
        ),
        "usd_per_hour": s(plan.usd_per_hour),
        "usd_per_month": s(plan.usd_per_month),
        "usd_per_million_output_tokens": s(plan.usd_per_million_output_tokens),
        "total_cards": s(plan.total_cards),
        "qps_capacity": s(plan.qps_capacity),
        "max_qps_within_budget": s(plan.max_qps_within_budget),
        "fleet_lines": s(len(plan.fleet)),
    }
    for i, line in enumerate(plan.fleet):
        for field in (
            "gpu",
            "provider",
            "region",
            "instance_type",
            "pricing",
            "tensor_parallel",
            "replicas",
            "instances",
            "cards",
            "usd_per_hour",
            "qps_capacity",
            "assigned_qps",
            "ttft_ms",
            "tpot_ms",
            "utilization",
            "provider_kind",
        ):
            flat[f"{field}_{i}"] = s(getattr(line, field))
        observed = line.price_observed_at
        flat[f"price_observed_at_{i}"] = s(observed.isoformat() if observed else None)
    return flat


_json = msgspec.json.Encoder()


def render_plan(solved: SolvedPlan, fmt: Format, *, stale: bool = False) -> bytes:
    """``solved`` as the bytes of one rendering (``stale`` marks the text table)."""
    out = PlanOut.from_domain(solved)
    if fmt == "json":
        return _json.encode(out)
    if fmt == "text":
        return plan_text(out, stale=stale).encode()
    return _json.encode(plan_flat(out))


class PlanRenderer:
    """Renderings by (plan id, format, stale): a cached plan is rendered once per process, not
    once per request. Bounded LRU of ``max_entries`` renderings."""

    def __init__(self, max_entries: int = 256) -> None:
        self._entries: OrderedDict[tuple[str, Format, bool], bytes] = OrderedDict()
        self._max = max_entries

    def render(self, solved: SolvedPlan, fmt: Format, *, stale: bool = False) -> bytes:
        key = (solved.plan_id, fmt, stale and fmt == "text")
        body = self._entries.get(key)
        if body is not None:
            self._entries.move_to_end(key)
            return body
        body = render_plan(solved, fmt, stale=stale)
        self._entries[key] = body
        if len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return body
