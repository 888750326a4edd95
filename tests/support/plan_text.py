"""The plan table of a text answer, after the price-age warning the service puts over it on
days when the plan's prices are older than the limit (``planner.price_age``): that warning
moves with the date, the table does not."""

from __future__ import annotations


def plan_table(text: str) -> str:
    """``text`` without a leading ``WARNING: ...`` paragraph."""
    if text.startswith("WARNING: "):
        warning, _, rest = text.partition("\n\n")
        assert "\n" not in warning, warning
        return rest
    return text
