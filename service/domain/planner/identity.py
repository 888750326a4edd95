"""A plan's identity: the canonical request's deterministic encoding and the plan id.

``plan_id = sha256("gpuplan-plan|v{PLAN_ID_VERSION}|r{revision}|{policy key}|" + canonical
bytes)``, first 32 hex digits; the policy key spells the service's planning policy
(``PlanPolicy.key``: default providers, price age limit), which changes answers too. The
canonical bytes are the JSON of :func:`canonical_document` with keys sorted (msgspec, so
floats, datetimes and Unicode are spelt one way). The catalog revision is in the
id, so any catalog write gives every request a new plan id. Change ``PLAN_ID_VERSION`` only
when the canonical bytes of some request must change, or when the same bytes now ask for
something else: it re-keys every plan. (6: ``min_replicas`` counts per fleet line, where it
counted the whole fleet.)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import msgspec

from service.domain.planner.request import PlanRequest, Spread
from service.domain.planner.result import Plan

PLAN_ID_VERSION = 6

_sorted_json = msgspec.json.Encoder(order="sorted")


def canonical_document(request: PlanRequest) -> dict[str, Any]:
    """The canonical request as a JSON-ready mapping: what a plan's ``request`` field shows
    (keys in reading order) and, with keys sorted, what the plan id hashes. Units: ``qps``
    requests/s, ``*_ms`` milliseconds, ``usd_per_hour`` US dollars per hour."""
    c = request.constraints
    slo = request.slo
    budget = request.budget_usd_per_hour
    owned = c.owned
    return {
        "model": dict(request.model_spec)
        if request.model_spec is not None
        else request.model.arch.id,
        "precision": request.precision,
        "kv_cache_precision": request.kv_precision,
        "engine": request.engine,
        "engine_version": request.engine_version or None,
        "workload": {
            "qps": request.qps,
            "mix": [
                {
                    "share": b.share,
                    "prompt_tokens": b.prompt_tokens,
                    "output_tokens": b.output_tokens,
                }
                for b in request.buckets
            ],
        },
        "slo": {
            "ttft_ms": slo.ttft_ms,
            "tpot_ms": slo.tpot_ms,
            "e2e_ms": slo.e2e_ms,
            "percentile": slo.percentile,
        },
        "budget": {"usd_per_hour": budget} if budget is not None else None,
        "constraints": {
            "gpus": list(c.gpus) if c.gpus is not None else None,
            "exclude_gpus": list(c.exclude_gpus),
            "providers": list(c.providers) if c.providers else None,
            "regions": list(c.regions) if c.regions else None,
            "pricing": c.pricing,
            "max_cards": dict(c.max_cards),
            "allow_mix": c.allow_mix,
            "headroom": c.headroom,
            "min_replicas": c.min_replicas,
            "tensor_parallel": list(c.tensor_parallel),
            "allow_pcie_tensor_parallel": c.allow_pcie_tensor_parallel,
            "mixing": {
                "max_gpu_types": c.mixing.max_gpu_types,
                "min_mix_savings_percent": c.mixing.min_mix_savings_percent,
                "allow_mixed_vendors": c.mixing.allow_mixed_vendors,
            },
            "allow_marketplaces": c.allow_marketplaces,
            # Only when asked, so requests without it keep their canonical bytes.
            **(
                {
                    "spread": {
                        "min_providers": c.spread.min_providers,
                        "min_regions": c.spread.min_regions,
                    }
                }
                if c.spread != Spread()
                else {}
            ),
            "owned": {
                "amortization_months": owned.amortization_months,
                "usd_per_kwh": owned.usd_per_kwh,
                "pue": owned.pue,
                # Only when given, so requests without them keep their plan ids.
                **({"card_usd": dict(owned.card_usd)} if owned.card_usd else {}),
                **(
                    {"usd_per_kwh_by_gpu": dict(owned.usd_per_kwh_by_gpu)}
                    if owned.usd_per_kwh_by_gpu
                    else {}
                ),
            }
            if c.pricing == "owned"
            else None,
        },
        "as_of": request.as_of,
        # Only when a profile is used, so requests without one keep their plan ids.
        **({"calibration": request.calibration.spec} if request.calibration else {}),
        # Only when shared, so requests routed by shape (the default) keep their plan ids.
        **({"routing": request.routing} if request.routing != "by_shape" else {}),
    }


def canonical_bytes(request: PlanRequest) -> bytes:
    """The deterministic encoding of the canonical request (JSON, keys sorted)."""
    return _sorted_json.encode(canonical_document(request))


def plan_id(request: PlanRequest, revision: int) -> str:
    """The id of the plan for ``request`` at catalog ``revision`` (32 hex digits)."""
    digest = hashlib.sha256(
        f"gpuplan-plan|v{PLAN_ID_VERSION}|r{revision}|{request.policy.key()}|".encode()
        + canonical_bytes(request)
    )
    return digest.hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class SolvedPlan:
    """A plan with its identity: what the plan cache holds and a plan lookup returns."""

    plan_id: str
    revision: int
    request: PlanRequest
    plan: Plan
