"""Words: rejection reasons, plain-sentence explanations of the binding limits, and the
assumptions a plan rests on."""

from datetime import datetime

from service.domain.perfmodel import (
    RequestShape,
    Slo,
    estimate,
)
from service.domain.perfmodel.hardware import accuracy_family
from service.domain.perfmodel.headroom import ModelHeadroom
from service.domain.planner.candidates import Candidates
from service.domain.planner.offers import places_searched
from service.domain.planner.request import HOURS_PER_MONTH, PlanRequest
from service.domain.planner.result import Alternative, Fleet, FleetLine, Rejection, Savings
from service.domain.profiles.values import calibration_words
from service.domain.solver import (
    FleetProblem,
    FleetSolution,
    ReasonCode,
    SolveStatus,
    relaxation_savings,
)
from service.domain.superseded import GPU_ONLY_MARKS


def single_type_rejection(
    gpu: str, sol: FleetSolution, request: PlanRequest, candidates: Candidates
) -> Rejection:
    for reason in sol.reasons:
        if reason.code is ReasonCode.GPU_CANNOT_SERVE:
            names = ", ".join(_bucket_words(request, b) for b in reason.buckets)
            detail = _capacity_reason(candidates, gpu, reason.buckets, request)
            return Rejection(gpu, "cannot_serve_bucket", f"cannot serve {names}{detail}")
        if reason.code is ReasonCode.MAX_CARDS:
            cap = dict(request.constraints.max_cards).get(gpu)
            short = f"{reason.shortfall:.0f} more cards" if reason.shortfall else "more cards"
            return Rejection(
                gpu, "over_availability_cap", f"needs {short} than max_cards={cap} allows"
            )
    text = "; ".join(r.message or r.label for r in sol.reasons) or "no feasible fleet"
    return Rejection(gpu, str(sol.reasons[0].code) if sol.reasons else "infeasible", text)


def _capacity_reason(
    candidates: Candidates, gpu: str, bucket_keys: tuple[str, ...], request: PlanRequest
) -> str:
    index = {b.key: i for i, b in enumerate(request.buckets)}
    for cand in candidates.items.values():
        if cand.option.gpu_id != gpu:
            continue
        for key in bucket_keys:
            cap = cand.replica_capacity[index[key]]
            if cap.reason:
                return f": {cap.reason}"
    return ""


def _bucket_words(request: PlanRequest, key: str) -> str:
    for b in request.buckets:
        if b.key == key:
            return f"bucket {key} ({b.prompt_tokens} in / {b.output_tokens} out)"
    return f"bucket {key}"


# ---- words --------------------------------------------------------------------------------


def _money(usd: float) -> str:
    return f"${usd:,.2f}"


def _line_words(line: FleetLine) -> str:
    where = f"{line.provider} {line.region} {line.instance_type}".strip()
    tp = f" (tensor_parallel={line.tensor_parallel})" if line.tensor_parallel > 1 else ""
    return f"{line.replicas} x {line.gpu}{tp} on {where}"


def explain(
    request: PlanRequest,
    candidates: Candidates,
    solution: FleetSolution,
    fleet: Fleet | None,
    alternatives: tuple[Alternative, ...],
    savings: Savings | None,
    budget_qps: float | None,
    problem: FleetProblem,
    relaxed: dict[str, float] | None = None,
) -> tuple[str, ...]:
    """The plan's sentences. ``relaxed``: the what-if costs of :func:`priced_constraints`
    already solved (``solver.relaxed_costs``); solved here when ``None``."""
    c = request.constraints
    slo = request.slo
    limits = [
        f"{name} p{slo.percentile:g} <= {value:g} ms"
        for name, value in (("TTFT", slo.ttft_ms), ("TPOT", slo.tpot_ms), ("E2E", slo.e2e_ms))
        if value is not None
    ]
    sentences: list[str] = []
    if fleet is None:
        sentences.append(
            "No fleet meets the demand: "
            + "; ".join(r.message or r.label for r in solution.reasons)
            + "."
        )
        return tuple(sentences)
    load = f"{request.qps:g} req/s"
    if c.headroom:
        load += f" plus {c.headroom * 100:g}% headroom"
    elif c.headroom is None:
        load += " plus headroom for the model's error (see assumptions)"
    sentences.append(
        f"Cheapest fleet for {load} within {', '.join(limits) or 'no latency limit'}: "
        + "; ".join(_line_words(line) for line in fleet.lines)
        + f", {_money(fleet.usd_per_hour)}/hour ({_money(fleet.usd_per_month)}/month)."
    )
    index = {b.key: i for i, b in enumerate(request.buckets)}
    # A replica's capacity is its deployment's (GPU, tensor parallel), whichever offer sells it.
    told: set[tuple[str, int, str]] = set()
    for line in fleet.lines:
        for bucket_key, _ in line.buckets:
            said = (line.gpu, line.tensor_parallel, bucket_key)
            if said in told:
                continue
            told.add(said)
            for cand in candidates.items.values():
                if (
                    cand.option.gpu_id == line.gpu
                    and cand.deployment.tensor_parallel == line.tensor_parallel
                    and cand.offer.provider == line.provider
                    and cand.offer.instance_type == line.instance_type
                ):
                    cap = cand.replica_capacity[index[bucket_key]]
                    tp = (
                        f" tensor_parallel={line.tensor_parallel}"
                        if line.tensor_parallel > 1
                        else ""
                    )
                    sentences.append(
                        f"Each {line.gpu}{tp} replica carries at most {cap.qps:.3g} req/s of "
                        f"{_bucket_words(request, bucket_key)}; the binding limit is "
                        f"{_limit_words(cap.limited_by, slo)}."
                    )
                    break
    sentences.extend(_constraint_costs(request, problem, solution, relaxed))
    if solution.status is SolveStatus.OVER_BUDGET and request.budget_usd_per_hour is not None:
        sentences.append(
            f"The cheapest fleet costs {_money(fleet.usd_per_hour)}/hour, over the budget of "
            f"{_money(request.budget_usd_per_hour)}/hour; a fleet within budget carries at most "
            f"{(budget_qps or 0):.3g} req/s of this request mix."
        )
    elif budget_qps is not None and request.budget_usd_per_hour is not None:
        sentences.append(
            f"Within the budget of {_money(request.budget_usd_per_hour)}/hour the load could grow "
            f"to {budget_qps:.3g} req/s of this mix."
        )
    if solution.status is SolveStatus.TIME_LIMIT:
        sentences.append(
            f"The solver stopped at its {request.time_limit_s:g} s time limit; this is the best "
            f"fleet found (within {solution.mip_gap * 100:.2g}% of optimal)."
        )
    return tuple(sentences)


def priced_constraints(request: PlanRequest) -> tuple[str, ...]:
    """The constraints a plan prices by re-solving without each (``solver.whatif`` labels):
    every availability cap, the per-line replica floor and the spread, only where the request
    sets them."""
    c = request.constraints
    labels = tuple(f"max_cards:{gpu}" for gpu, _ in c.max_cards)
    if c.min_replicas > 1:
        labels += ("min_replicas",)
    if c.spread.asked:
        labels += ("spread",)
    return labels


def _constraint_costs(
    request: PlanRequest,
    problem: FleetProblem,
    solution: FleetSolution,
    relaxed: dict[str, float] | None,
) -> list[str]:
    """What each of :func:`priced_constraints` costs, priced by re-solving without it (one
    MILP each, unless ``relaxed`` has them); constraints that cost nothing are not mentioned.
    Caps are priced even when not tight (a cap can push the fleet off a GPU entirely)."""
    c = request.constraints
    labels = priced_constraints(request)
    if not labels or not solution.has_fleet:
        return []
    out = []
    for label, saved in relaxation_savings(problem, solution, labels, relaxed):
        if saved <= 0.005:
            continue
        kind, _, subject = label.partition(":")
        if kind == "max_cards":
            cap = dict(c.max_cards)[subject]
            out.append(
                f"The availability cap of {cap} {subject} cards adds {_money(saved)}/hour: "
                "without it the fleet would use more of them."
            )
        elif kind == "min_replicas":
            out.append(
                f"min_replicas={c.min_replicas} (on every line) adds {_money(saved)}/hour over "
                "what the load alone needs."
            )
        elif kind == "spread":
            out.append(
                f"Spread (min_providers={c.spread.min_providers}, "
                f"min_regions={c.spread.min_regions}) adds {_money(saved)}/hour: the fleet "
                "carries the whole load after losing any one of them."
            )
    return out


def _limit_words(limited_by: str, slo: Slo) -> str:
    words = {
        "ttft": f"TTFT p{slo.percentile:g} <= {slo.ttft_ms} ms",
        "tpot": f"TPOT p{slo.percentile:g} <= {slo.tpot_ms} ms",
        "e2e": f"end-to-end p{slo.percentile:g} <= {slo.e2e_ms} ms",
        "kv_capacity": "KV-cache memory",
        "engine_batch_cap": "the engine's batch limit",
        "token_budget": "the engine's per-step token budget",
    }
    return words.get(limited_by, limited_by.replace("_", " "))


def no_candidates_sentence(request: PlanRequest, candidates: Candidates) -> str:
    if not candidates.considered:
        return "No GPU is allowed by the request's gpus/exclude_gpus constraints."
    rejected = candidates.rejected
    if rejected and all(r.code == "no_price" for r in rejected.values()):
        pricing = request.constraints.pricing
        return (
            f"No allowed GPU has a usable {pricing} price, so nothing was sized against the SLO: "
            + "; ".join(rejected[g].reason for g in sorted(rejected))
            + "."
        )
    return (
        f"None of the {len(candidates.considered)} allowed GPUs can serve this model and SLO "
        "with the allowed prices; see rejected for the reason per GPU."
    )


def _model_headroom_words(candidates: Candidates, solution: FleetSolution | None) -> list[str]:
    """The default headroom on each GPU family in the fleet (every candidate's without one)."""
    keys = [k for k, _ in solution.units] if solution is not None else sorted(candidates.items)
    margins: dict[str, ModelHeadroom] = {}
    for key in keys:
        margin = candidates.items[key].headroom
        if margin is not None:
            margins.setdefault(margin.family, margin)
    return [
        f"Headroom (default: the performance model's validation error): each card is planned "
        f"for (1 + e) x its load, e = {m.basis}."
        for _, m in sorted(margins.items())
    ]


def assumptions(
    request: PlanRequest, candidates: Candidates, solution: FleetSolution | None
) -> tuple[str, ...]:
    """General planning assumptions plus the performance model's, for each deployment in the
    chosen fleet (or the first candidate when there is no fleet)."""
    c = request.constraints
    out: list[str] = list(request.model.assumptions)
    out.append(
        f"Latency limits hold at p{request.slo.percentile:g} under Poisson arrivals; capacities "
        "come from the calibrated performance model (the one estimates use)."
    )
    if c.headroom:
        out.append(f"Capacity is planned for {1 + c.headroom:g} x the target load (headroom).")
    elif c.headroom is None:
        out.extend(_model_headroom_words(candidates, solution))
    out.append(
        "A replica's cards sit in one instance and instances are billed whole; a month is "
        f"{HOURS_PER_MONTH:g} hours."
    )
    if c.pricing == "owned":
        o = c.owned
        out.append(
            f"Owned cards: purchase price amortised over {o.amortization_months:g} months plus "
            f"power at TDP x PUE {o.pue:g} x {o.usd_per_kwh:g} USD/kWh."
        )
    out.append(provider_policy_sentence(request))
    if c.spread.min_regions >= 2:
        out.append(
            "Spread over regions: each line's region must be known, so prices that name no "
            "region (a provider's one price for all its regions) are left out; for each GPU and "
            f"instance size the {places_searched(c.spread)} cheapest regions offering it are "
            "searched (a fleet spread over more regions can cost less)."
        )
    age = request.policy.price_max_age_days
    if age is not None:
        out.append(
            f"Prices observed more than {age} days before the plan's prices-as-of moment are "
            "flagged in the explanation (GPUPLAN_PRICE_MAX_AGE_DAYS)."
        )
    keys = [k for k, _ in solution.units] if solution is not None else sorted(candidates.items)[:1]
    shape = RequestShape(request.buckets[0].prompt_tokens, request.buckets[0].output_tokens)
    deployments = dict.fromkeys(candidates.items[k].deployment for k in keys)
    for dep in deployments:
        for text in estimate(request.model.arch, dep, shape).assumptions:
            tag = f"{dep.gpu.id} tensor_parallel={dep.tensor_parallel}: "
            out.append(text if len(deployments) == 1 else tag + text)
    if request.calibration is not None:
        families = {dep.gpu.id: accuracy_family(dep.gpu) for dep in deployments}
        out.extend(calibration_words(request.calibration, request.engine, families))
    return tuple(dict.fromkeys(out))


def provider_policy_sentence(request: PlanRequest) -> str:
    """Which provider policy chose the offers the plan could use."""
    c = request.constraints
    if c.pricing == "owned":
        return "Providers: owned cards are priced from purchase prices; no provider policy applies."
    if c.providers is not None:
        return f"Providers: as requested ({', '.join(c.providers)})."
    entries = ", ".join(request.policy.default_providers)
    marketplaces = (
        "marketplace offers added (allow_marketplaces)"
        if c.allow_marketplaces
        else "marketplace offers (Vast.ai, RunPod Community) left out: name their provider or "
        "set allow_marketplaces to use them"
    )
    return (
        f"Providers: the service's default policy ({entries}; GPUPLAN_DEFAULT_PROVIDERS); "
        f"{marketplaces}."
    )


def host_not_priced_sentences(fleet: Fleet | None) -> tuple[str, ...]:
    """A sentence per fleet line costed at its GPUs' price alone (an offer whose instance type
    says the host VM is extra, ``superseded.gpu_only``): its cost leaves out the VM the GPUs
    run in, so the plan's cost is a lower bound there."""
    if fleet is None:
        return ()
    return tuple(
        f"Host VM not priced: {_line_words(line)} is costed at its GPUs' price alone; the VM "
        "they run in is billed on top, so this line's cost is a lower bound."
        for line in fleet.lines
        if line.instance_type.endswith(GPU_ONLY_MARKS)
    )


def stale_price_sentences(
    fleet: Fleet | None, prices_as_of: datetime | None, max_age_days: int | None
) -> tuple[str, ...]:
    """A sentence per fleet line whose price was observed more than ``max_age_days`` before
    ``prices_as_of`` (the plan's ``as_of``, else the catalog's newest observation), and one for
    the plan. Measured against the catalog, not the wall clock, so a plan stays one answer."""
    if fleet is None or prices_as_of is None or max_age_days is None:
        return ()
    stale: list[tuple[FleetLine, int]] = []
    for line in fleet.lines:
        if line.price_observed_at is None:
            continue
        days = (prices_as_of - line.price_observed_at).days
        if days > max_age_days:
            stale.append((line, days))
    if not stale:
        return ()
    asof = prices_as_of.date().isoformat()
    out = [
        f"Stale price: {_line_words(line)} is costed at a price observed "
        f"{line.price_observed_at.date().isoformat() if line.price_observed_at else '?'}, "
        f"{days} days before the prices-as-of date {asof} (limit {max_age_days} days)."
        for line, days in stale
    ]
    out.append(
        f"{len(stale)} of {len(fleet.lines)} fleet line{'s' if len(fleet.lines) > 1 else ''} "
        f"rel{'y' if len(stale) > 1 else 'ies'} on prices older than {max_age_days} days; "
        "refresh them (gpuplan catalog import) before buying."
    )
    return tuple(out)
