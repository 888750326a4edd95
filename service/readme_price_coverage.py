"""The README's table of purchase and reserved prices per GPU, from the bundled seed files:
``service/data/prices.csv`` (the observations) and ``service/data/purchase_gaps.csv`` (why a
GPU has no purchase price). ``service.readme_tables`` writes it into the ``price-coverage``
block, so ``make readme`` refreshes it and a test fails when it drifts from the data; the
``seed-catalog`` block (what a fresh catalog holds, and from which files) is written the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from service.domain.catalog import GpuSpec, PricePoint, latest_per_offer
from service.domain.planner.offers import shape_is_stated
from service.store.csv_format import (
    bundled_text,
    parse_gpus_csv,
    parse_prices_csv,
    parse_purchase_gaps_csv,
)
from service.store.skypilot_seed import FIRST_SNAPSHOT, V9_AWS_FILES, V9_FILES, bundled_imports

RESERVED = ("reserved_1y", "reserved_3y")


def purchase_gaps(text: str) -> dict[str, str]:
    """``purchase_gaps.csv`` text as {gpu id: why the catalog has no purchase price}."""
    return {gap.gpu_id: gap.reason for gap in parse_purchase_gaps_csv(text)}


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _money(usd: float) -> str:
    return f"${usd:,.0f}" if usd >= 100 else f"${usd:,.2f}"


def _reserved(points: Sequence[PricePoint], kind: str) -> str:
    """Per provider (cheapest first): its cheapest offer of ``kind`` per GPU-hour, and how many
    offers (instance sizes x regions) it has and the dearest, when more than one; a quote that
    states no instance shape is no offer (plans are not costed at it either)."""
    by_provider: dict[str, list[PricePoint]] = {}
    offered = (p for p in points if p.kind == kind and shape_is_stated(p.instance_type))
    for p in sorted(offered, key=lambda p: (p.usd, p.instance_type)):
        by_provider.setdefault(p.provider, []).append(p)
    cells = []
    for provider, offers in sorted(by_provider.items(), key=lambda kv: (kv[1][0].usd, kv[0])):
        cheapest = offers[0]
        cell = f"{provider} {cheapest.instance_type} {_money(cheapest.usd)}/GPU-h"
        if len(offers) > 1 and offers[-1].usd > cheapest.usd:
            cell += f" (cheapest of {len(offers)} offers, up to {_money(offers[-1].usd)})"
        elif len(offers) > 1:
            cell += f" ({len(offers)} offers at this price)"
        cells.append(cell)
    return ", ".join(cells) or "-"


def price_coverage(
    gpus: Sequence[GpuSpec], prices: Sequence[PricePoint], gaps: Mapping[str, str]
) -> str:
    """One row per GPU in catalog order: the purchase price an ``owned`` plan is costed at (the
    cheapest current purchase offer, with its observation date) and the current reserved
    offers; then, for each GPU without a purchase price, the documented reason."""
    current = latest_per_offer(list(prices))
    lines = [
        "| GPU | owned: USD per card (observed) | reserved 1 year | reserved 3 years |",
        "| --- | ---: | --- | --- |",
    ]
    for gpu in gpus:
        own = [p for p in current if p.gpu_id == gpu.id]
        bought = min((p for p in own if p.kind == "purchase"), key=lambda p: p.usd, default=None)
        card = (
            f"{_money(bought.usd)} ({bought.observed_at:%Y-%m-%d})"
            if bought is not None
            else "none (below)"
        )
        one_year, three_years = (_reserved(own, kind) for kind in RESERVED)
        lines.append(f"| `{gpu.id}` | {card} | {one_year} | {three_years} |")
    lines.append("")
    lines.extend(f"- `{gpu.id}`: {_sentence(gaps[gpu.id])}" for gpu in gpus if gpu.id in gaps)
    return "\n".join(lines) + "\n"


def bundled_price_coverage() -> str:
    """``price_coverage`` of the bundled seed files."""
    return price_coverage(
        parse_gpus_csv(bundled_text("gpus.csv")),
        parse_prices_csv(bundled_text("prices.csv")),
        purchase_gaps(bundled_text("purchase_gaps.csv")),
    )


def _identity(p: PricePoint) -> tuple[object, ...]:
    """What makes two rows the same observation (a seed stores it once)."""
    return (p.gpu_id, p.provider, p.region, p.kind, p.instance_type, p.observed_at)


def seed_catalog_summary() -> str:
    """What a freshly migrated catalog holds, counted from the bundled files in the order the
    migrations store them (an observation already stored counts once)."""
    gpus = parse_gpus_csv(bundled_text("gpus.csv"))
    by_id = {g.id: g for g in gpus}
    seen = {_identity(p) for p in parse_prices_csv(bundled_text("prices.csv"))}
    hand = len(seen)
    added = []
    for files in (FIRST_SNAPSHOT, V9_FILES, V9_AWS_FILES):
        before = len(seen)
        for item in bundled_imports(by_id, files):
            seen |= {_identity(p) for p in item.parsed.points}
        added.append(len(seen) - before)
    snapshot, v9_lambda, v9_aws = added
    return (
        f"The seed catalog holds {len(gpus)} GPUs and {len(seen):,} price observations with "
        "their sources. It lives in\n"
        f"[`service/data/`](service/data/README.md): {hand} observations from dated, named "
        "sources\n(`prices.csv`, migrations `0002`, `0006`, `0009`, `0014`, `0016` and `0017`), "
        "a snapshot of\nthe SkyPilot catalog for AWS, GCP, Azure, Lambda and RunPod (`skypilot/`, "
        f"migration `0005`,\n{snapshot:,} more) and its newer files for Lambda (`0013`, "
        f"{v9_lambda:,} more) and AWS's GPU instances (`0015`,\n{v9_aws:,} more), so a fresh "
        "catalog plans on thousands of real offers.\n"
    )
