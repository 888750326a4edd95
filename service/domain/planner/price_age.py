"""How old a plan's prices are today: the one thing about a plan that moves with the clock.

A plan is one answer for its request and catalog revision (its id names both), so its own
explanation measures price ages against the catalog's prices-as-of date, never the clock
(``explain.stale_price_sentences``): a line costed at a price much older than the rest of the
catalog is flagged there. A catalog nobody refreshes ages as a whole, though, and that shows
only against today's date. The service states it beside the plan (response headers, a warning
over the text rendering, standard error for the command line), outside what the plan id names.

Pure: today's date is an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from service.domain.planner.identity import SolvedPlan


@dataclass(frozen=True, slots=True)
class PriceAge:
    """``days``: whole UTC calendar days from ``oldest`` (the oldest price the fleet is costed
    at) to today. ``max_age_days``: the service's limit (``None``: no limit)."""

    days: int
    oldest: datetime
    max_age_days: int | None

    @property
    def stale(self) -> bool:
        return self.max_age_days is not None and self.days > self.max_age_days

    def warning(self) -> str | None:
        """The sentence a person should read before buying, when the prices are stale."""
        if not self.stale:
            return None
        return (
            f"WARNING: this fleet is costed at prices observed up to {self.days} days ago "
            f"(oldest {_utc_date(self.oldest).isoformat()}; limit {self.max_age_days} days): "
            "import a current catalog (gpuplan catalog import) before buying."
        )


def price_age(solved: SolvedPlan, now: datetime) -> PriceAge | None:
    """The age on ``now``'s UTC date of the oldest price ``solved``'s fleet is costed at, with
    its request's limit; ``None`` without a fleet or a dated price, and for a plan pinned to a
    past moment (``as_of``: its prices are meant to be that old; its explanation measures
    them against that moment)."""
    if solved.request.as_of is not None:
        return None
    fleet = solved.plan.fleet
    oldest = fleet.oldest_price_observed_at if fleet is not None else None
    if oldest is None:
        return None
    days = (_utc_date(now) - _utc_date(oldest)).days
    return PriceAge(max(days, 0), oldest, solved.request.policy.price_max_age_days)


def _utc_date(moment: datetime) -> date:
    """The UTC calendar date of ``moment`` (a naive moment is taken as UTC already)."""
    return moment.astimezone(UTC).date() if moment.tzinfo is not None else moment.date()
