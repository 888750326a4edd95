"""What kind of seller a price's provider is, for a team deciding where it can provision.

- ``hyperscaler``: AWS, GCP, Azure (and Oracle, IBM);
- ``gpu_cloud``: GPU clouds that run their own data centres (Lambda, CoreWeave, Nebius, ...), and
  RunPod's Secure Cloud;
- ``marketplace``: offers set by third-party hosts (Vast.ai, RunPod's Community Cloud);
- ``purchase``: card prices (``street``, or ``request`` for a price the request gives), for
  owned fleets;
- ``other``: a provider this list does not know (a price ingested under a new name).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

ProviderKind = Literal["hyperscaler", "gpu_cloud", "marketplace", "purchase", "other"]
PROVIDER_KINDS: tuple[ProviderKind, ...] = get_args(ProviderKind)

_KINDS: dict[str, ProviderKind] = {
    **dict.fromkeys(("aws", "gcp", "azure", "oci", "ibm"), "hyperscaler"),
    **dict.fromkeys(
        (
            "lambda",
            "coreweave",
            "nebius",
            "cudo",
            "fluidstack",
            "seeweb",
            "digitalocean",
            "paperspace",
            "runpod",
            "scaleway",
            "ovhcloud",
        ),
        "gpu_cloud",
    ),
    "vast": "marketplace",
    "street": "purchase",
    "request": "purchase",
}


def provider_kind(provider: str, instance_type: str = "") -> ProviderKind:
    """The kind of ``provider`` (a RunPod ``*_COMMUNITY`` instance is a marketplace offer)."""
    if provider == "runpod" and instance_type.upper().endswith("_COMMUNITY"):
        return "marketplace"
    return _KINDS.get(provider, "other")


DEFAULT_PROVIDERS: tuple[str, ...] = ("hyperscaler", "gpu_cloud")
"""The providers a request that names none may use (``GPUPLAN_DEFAULT_PROVIDERS``): provider
kinds or provider ids. Hyperscalers and GPU clouds: offers a team can provision under a
contract, not marketplace listings set by third-party hosts."""


def allowed_by_policy(entries: Iterable[str], provider: str, instance_type: str = "") -> bool:
    """Whether a default provider policy (provider kinds or ids) admits an offer.

    A kind admits every offer of that kind. A provider id admits that provider's own offers;
    a marketplace listed through a cloud's name (RunPod's Community Cloud under ``runpod``)
    is a marketplace offer and needs the ``marketplace`` kind, unless the id is itself a
    marketplace (``vast``)."""
    chosen = set(entries)
    kind = provider_kind(provider, instance_type)
    if kind in chosen:
        return True
    if provider in chosen:
        return kind != "marketplace" or provider_kind(provider) == "marketplace"
    return False
