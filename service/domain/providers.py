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
