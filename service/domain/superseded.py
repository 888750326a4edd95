"""Which offers are current when two offers describe the same thing.

``latest_per_offer`` (``domain/catalog.py``) keeps the newest observation of each offer, where an
offer is (GPU, provider, region, kind, instance type). Two kinds of offer are different offers to
it, yet describe the same thing, and ``without_superseded`` keeps only the better description:

* a ``global`` offer and the same instance in a named region, at different times: the newer;
* a GPU priced alone, without the VM it must run in (``gpu_only``: GCP's N1 and G2 GPUs and the
  a3-megagpu H100 in catalogs that list no host price), and a whole machine with the same GPUs
  in the same region observed as late or later: the whole machine, whose price is what a team
  pays.

The repository's snapshot, the bundled seed snapshot and the benchmarks apply it to the latest
offers.
"""

from __future__ import annotations

from datetime import datetime

from service.domain.catalog import GLOBAL_REGION, PricePoint

GPU_ONLY_MARKS = ("(GPU only, host VM extra)", "(GPU component only)")
"""What an instance type ends with when its price is the GPUs' alone: the SkyPilot importer
writes the first, ``prices.csv`` the second."""


def gpu_only(point: PricePoint) -> bool:
    """Whether ``point`` prices GPUs without the machine they run in."""
    return point.instance_type.endswith(GPU_ONLY_MARKS)


def without_superseded(latest: tuple[PricePoint, ...]) -> tuple[PricePoint, ...]:
    """Current offers (the newest observation of each) minus those another one describes
    better: :func:`without_older_scope`, then :func:`without_gpu_only_where_whole`. Order is
    kept."""
    return without_gpu_only_where_whole(without_older_scope(latest))


def without_gpu_only_where_whole(latest: tuple[PricePoint, ...]) -> tuple[PricePoint, ...]:
    """Current offers minus the GPU-only ones (:func:`gpu_only`) for which a whole machine of
    the same GPU, provider, region and kind, with as many GPUs, was observed as late or later.

    GCP's G2 machines carry their L4s: ``g2-standard + 1x L4 (GPU only, host VM extra)`` at
    $0.56/h in us-central1 is not a price anyone pays, ``g2-standard-4`` at $0.71/h is. Where
    no whole machine is known the GPU-only offer stays (its instance type says the host is
    extra). Order is kept."""
    whole: dict[tuple[str, str, str, str, int], datetime] = {}
    for p in latest:
        if gpu_only(p):
            continue
        key = (p.gpu_id, p.provider, p.region, p.kind, p.gpus_per_instance)
        held = whole.get(key)
        if held is None or p.observed_at > held:
            whole[key] = p.observed_at
    if not whole:
        return latest
    kept = []
    for p in latest:
        if gpu_only(p):
            seen = whole.get((p.gpu_id, p.provider, p.region, p.kind, p.gpus_per_instance))
            if seen is not None and seen >= p.observed_at:
                continue
        kept.append(p)
    return tuple(kept)


def without_older_scope(latest: tuple[PricePoint, ...]) -> tuple[PricePoint, ...]:
    """Current offers (the newest observation of each) minus those a later observation of the
    same GPU, provider, kind and instance type in the other kind of region replaces.

    A ``global`` observation says the provider charges that price in every region, so an
    observation of the same instance in a named region made before it is out of date, and a
    named-region observation made after a ``global`` one is newer than it. (Lambda priced
    ``gpu_8x_h100_sxm5`` at $23.92 in each region of an older catalog and at $31.92 "in all
    regions" in a newer one: only $31.92 is current.) Order is kept.
    """
    newest_global: dict[tuple[str, str, str, str], datetime] = {}
    newest_regional: dict[tuple[str, str, str, str], datetime] = {}
    for p in latest:
        key = (p.gpu_id, p.provider, p.kind, p.instance_type)
        seen = newest_global if p.region == GLOBAL_REGION else newest_regional
        held = seen.get(key)
        if held is None or p.observed_at > held:
            seen[key] = p.observed_at
    if not newest_global or not newest_regional:
        return latest
    kept = []
    for p in latest:
        key = (p.gpu_id, p.provider, p.kind, p.instance_type)
        other = newest_regional if p.region == GLOBAL_REGION else newest_global
        later = other.get(key)
        if later is None or later <= p.observed_at:
            kept.append(p)
    return tuple(kept)
