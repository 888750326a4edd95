"""Canonicalisation: a ``PlanDraft`` (what a caller gave) -> the canonical ``PlanRequest``.

Rules, so that equivalent requests share one plan id:

- the model resolves to its preset id (aliases, case and org prefixes ignored); a custom model
  keeps the fields given;
- a single ``prompt_tokens``/``output_tokens`` pair is a one-shape mix of share 1; mix entries
  of one shape are merged, sorted by (prompt, output) tokens and their shares divided by their
  sum (which must be 1 within ``SHARE_TOLERANCE``);
- a monthly budget becomes USD per hour (730 hours a month);
- GPU names resolve to catalog ids, then are sorted and de-duplicated; two ``max_cards`` caps
  on one GPU keep the smaller; provider ids are lowercased, regions stripped; empty provider
  or region lists mean "any";
- ``as_of`` moves to UTC (within ``domain.moments``' window);
- what the request leaves out of ``headroom`` and the mixing policy takes the server's
  ``PlanDefaults`` (so the plan id names the values used); ``allow_mix=false`` is
  ``max_gpu_types=1``.

Errors are ``InvalidInput`` / ``NotFound`` naming the field by its path in the POST body
(``workload.mix``, ``constraints.gpus[2]``); other front doors translate paths to their own
names. Pure: the catalog snapshot is a parameter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from service.domain.catalog import CatalogSnapshot
from service.domain.errors import InvalidInput
from service.domain.llm import ResolvedModel, planned_precision, resolve_model
from service.domain.moments import to_utc
from service.domain.perfmodel import Slo, resolved_engine_version
from service.domain.planner.draft import (
    BudgetDraft,
    ConstraintsDraft,
    MixingDraft,
    MixShare,
    PlanDraft,
    WorkloadDraft,
)
from service.domain.planner.request import (
    HOURS_PER_MONTH,
    MixingPolicy,
    OwnedCost,
    PlanConstraints,
    PlanDefaults,
    PlanRequest,
    WorkloadBucket,
)
from service.domain.profiles.values import CalibrationProfile

SHARE_TOLERANCE = 1e-6
"""How far the mix shares may sum from 1 (they are then divided by their sum)."""
MIN_SHAPE_QPS = 1e-6
"""The smallest load one request shape may carry (``qps`` x its share), about one request in
11.6 days: below it the load is zero to the planner, and the solver's demand rows (scaled by
1 / load) lose their precision."""


def canonical_request(
    draft: PlanDraft,
    snapshot: CatalogSnapshot,
    *,
    time_limit_s: float = 2.0,
    defaults: PlanDefaults | None = None,
    calibration: CalibrationProfile | None = None,
) -> PlanRequest:
    """The canonical request for ``draft`` against the GPUs of ``snapshot``.

    ``time_limit_s`` (seconds per MILP solve) is carried along for the planner; it is not
    part of the request's identity. ``defaults``: the server's defaults for what the draft
    leaves out (``None``: the built-in ones). ``calibration``: the profile the draft's
    ``calibration`` (or the server default) resolved to. Raises ``InvalidInput`` or
    ``NotFound`` naming the field.
    """
    model, precision = planned_precision(resolve_requested_model(draft.model), draft.precision)
    return PlanRequest(
        model=model,
        precision=precision,
        kv_precision=draft.kv_cache_precision,
        engine=draft.engine,
        engine_version=resolved_engine_version(draft.engine, draft.engine_version),
        qps=float(draft.workload.qps),
        buckets=_buckets(draft.workload, model),
        slo=_slo(draft.slo),
        budget_usd_per_hour=_budget_usd_per_hour(draft.budget),
        constraints=_constraints(draft.constraints, snapshot, defaults or PlanDefaults()),
        as_of=to_utc(draft.as_of, "as_of") if draft.as_of is not None else None,
        time_limit_s=time_limit_s,
        model_spec=None if isinstance(draft.model, str) else draft.model,
        policy=(defaults or PlanDefaults()).policy,
        calibration=calibration,
        routing=draft.routing,
    )


def normalize_provider(name: str) -> str:
    """Provider ids are lowercase slugs (``aws``, ``lambda``, ``vast``)."""
    return name.strip().lower()


def resolve_requested_model(spec: str | Mapping[str, Any]) -> ResolvedModel:
    """The model a request names: ``resolve_model`` with every field it names put under
    ``model`` (it names some relative to the model object, e.g. ``params_b``)."""
    try:
        return resolve_model(spec)
    except InvalidInput as exc:
        where = exc.field or ""
        if where != "model" and not where.startswith("model."):
            raise InvalidInput(exc.message, field=f"model.{where}" if where else "model") from exc
        raise


def _shapes(w: WorkloadDraft) -> list[tuple[int, int, float]]:
    """(prompt tokens, output tokens, share) per distinct shape, sorted, shares summing to 1."""
    if w.mix is None:
        if w.prompt_tokens is None or w.output_tokens is None:
            missing = "prompt_tokens" if w.prompt_tokens is None else "output_tokens"
            raise InvalidInput(
                f"{missing} is required (or give a mix of request shapes)",
                field=f"workload.{missing}",
            )
        return [(w.prompt_tokens, w.output_tokens, 1.0)]
    if w.prompt_tokens is not None or w.output_tokens is not None:
        raise InvalidInput(
            "give either mix or prompt_tokens/output_tokens, not both", field="workload.mix"
        )
    return _merged(w.mix)


def _merged(mix: tuple[MixShare, ...]) -> list[tuple[int, int, float]]:
    total = math.fsum(float(b.share) for b in mix)
    if abs(total - 1.0) > SHARE_TOLERANCE:
        raise InvalidInput(f"mix shares sum to {total:.6g}, not 1", field="workload.mix")
    merged: dict[tuple[int, int], float] = {}
    for p, o, s in sorted((b.prompt_tokens, b.output_tokens, float(b.share)) for b in mix):
        merged[(p, o)] = merged.get((p, o), 0.0) + s
    return [(p, o, s / total) for (p, o), s in sorted(merged.items())]


def _buckets(w: WorkloadDraft, model: ResolvedModel) -> tuple[WorkloadBucket, ...]:
    shapes = _shapes(w)
    max_context = model.arch.max_context
    for i, (p, o, s) in enumerate(shapes):
        if float(w.qps) * s < MIN_SHAPE_QPS * (1 - SHARE_TOLERANCE):
            raise InvalidInput(
                f"the {p} prompt / {o} output token shape carries {float(w.qps) * s:.3g} req/s "
                f"(qps x share), below {MIN_SHAPE_QPS:g} req/s: drop it or raise its share",
                field="workload.qps" if w.mix is None else "workload.mix",
            )
        if p + o > max_context:
            raise InvalidInput(
                f"{p} prompt + {o} output tokens exceed {model.arch.id}'s context of {max_context}",
                field="workload.prompt_tokens" if w.mix is None else f"workload.mix[{i}]",
            )
    return tuple(
        WorkloadBucket(key=f"b{i}", share=s, prompt_tokens=p, output_tokens=o)
        for i, (p, o, s) in enumerate(shapes)
    )


def _slo(slo: Slo) -> Slo:
    def ms(value: float | None) -> float | None:
        return None if value is None else float(value)

    return Slo(
        ttft_ms=ms(slo.ttft_ms),
        tpot_ms=ms(slo.tpot_ms),
        e2e_ms=ms(slo.e2e_ms),
        percentile=float(slo.percentile),
    )


def _budget_usd_per_hour(budget: BudgetDraft | None) -> float | None:
    if budget is None:
        return None
    hour, month = budget.usd_per_hour, budget.usd_per_month
    if hour is not None and month is None:
        return float(hour)
    if month is not None and hour is None:
        return float(month) / HOURS_PER_MONTH
    raise InvalidInput("give exactly one of usd_per_hour or usd_per_month", field="budget")


def _gpu_ids(snapshot: CatalogSnapshot, names: tuple[str, ...], field: str) -> tuple[str, ...]:
    return tuple(
        sorted(
            {snapshot.resolve_gpu(n, field_name=f"{field}[{i}]").id for i, n in enumerate(names)}
        )
    )


def _max_cards(snapshot: CatalogSnapshot, caps: tuple[tuple[str, int], ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, cards in sorted(caps):
        gpu = snapshot.resolve_gpu(name, field_name=f"constraints.max_cards.{name}").id
        out[gpu] = min(cards, out.get(gpu, cards))
    return out


def _per_gpu(
    snapshot: CatalogSnapshot, values: tuple[tuple[str, float], ...], field: str
) -> tuple[tuple[str, float], ...]:
    """Per-GPU amounts by resolved id; two names of one GPU must agree."""
    out: dict[str, float] = {}
    for name, value in values:
        gpu = snapshot.resolve_gpu(name, field_name=f"{field}.{name}").id
        if gpu in out and out[gpu] != float(value):
            raise InvalidInput(
                f"{name} and another name of {gpu} are given different values",
                field=f"{field}.{name}",
            )
        out[gpu] = float(value)
    return tuple(sorted(out.items()))


def _mixing(m: MixingDraft, default: MixingPolicy, allow_mix: bool) -> MixingPolicy:
    types = m.max_gpu_types if m.max_gpu_types is not None else default.max_gpu_types
    return MixingPolicy(
        max_gpu_types=1 if not allow_mix else types,
        min_mix_savings_percent=float(
            m.min_mix_savings_percent
            if m.min_mix_savings_percent is not None
            else default.min_mix_savings_percent
        ),
        allow_mixed_vendors=(
            m.allow_mixed_vendors
            if m.allow_mixed_vendors is not None
            else default.allow_mixed_vendors
        ),
    )


def _constraints(
    c: ConstraintsDraft, snapshot: CatalogSnapshot, defaults: PlanDefaults
) -> PlanConstraints:
    gpus = _gpu_ids(snapshot, c.gpus, "constraints.gpus") if c.gpus is not None else None
    providers = tuple(sorted({normalize_provider(p) for p in c.providers})) if c.providers else None
    regions = tuple(sorted({r.strip() for r in c.regions})) if c.regions else None
    owned = OwnedCost(
        amortization_months=float(c.owned.amortization_months),
        usd_per_kwh=float(c.owned.usd_per_kwh),
        pue=float(c.owned.pue),
        card_usd=_per_gpu(snapshot, c.owned.card_usd, "constraints.owned.card_usd"),
        usd_per_kwh_by_gpu=_per_gpu(
            snapshot, c.owned.usd_per_kwh_by_gpu, "constraints.owned.usd_per_kwh_by_gpu"
        ),
    )
    if c.pricing != "owned":
        for name, given in (
            ("card_usd", owned.card_usd),
            ("usd_per_kwh_by_gpu", owned.usd_per_kwh_by_gpu),
        ):
            if given:
                raise InvalidInput(
                    f"{name} prices owned cards; it needs pricing=owned (pricing is {c.pricing})",
                    field=f"constraints.owned.{name}",
                )
    mixing = _mixing(c.mixing, defaults.mixing, c.allow_mix)
    headroom = c.headroom if c.headroom is not None else defaults.headroom
    return PlanConstraints(
        gpus=gpus,
        exclude_gpus=_gpu_ids(snapshot, c.exclude_gpus, "constraints.exclude_gpus"),
        providers=providers,
        regions=regions,
        pricing=c.pricing,
        max_cards=tuple(sorted(_max_cards(snapshot, c.max_cards).items())),
        allow_mix=c.allow_mix and mixing.max_gpu_types != 1,
        headroom=float(headroom) if headroom is not None else None,
        min_replicas=c.min_replicas,
        tensor_parallel=tuple(sorted(set(c.tensor_parallel))),
        allow_pcie_tensor_parallel=c.allow_pcie_tensor_parallel,
        owned=owned,
        mixing=mixing,
        allow_marketplaces=c.allow_marketplaces,
        spread=c.spread,
    )
