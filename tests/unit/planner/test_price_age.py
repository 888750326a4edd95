"""How old a plan's prices are today: counted in UTC calendar days from the oldest price its
fleet is costed at, stale only beyond the limit, and never for a plan pinned to a past moment
(its prices are meant to be that old)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from functools import cache

from service.domain.catalog import CatalogSnapshot
from service.domain.planner import PlanPolicy, SolvedPlan, price_age
from service.usecases.seed_catalog import seed_snapshot
from tests.support.plan_requests import plan_request, solved_plan


@cache
def snapshot() -> CatalogSnapshot:
    return seed_snapshot()


def solved(*, max_age_days: int | None = 180, as_of: datetime | None = None) -> SolvedPlan:
    request = plan_request(
        gpus=("l4", "l40s", "h100-sxm"),
        policy=replace(PlanPolicy(), price_max_age_days=max_age_days),
    )
    return solved_plan(replace(request, as_of=as_of), snapshot())


def oldest(result: SolvedPlan) -> datetime:
    fleet = result.plan.fleet
    assert fleet is not None and fleet.oldest_price_observed_at is not None
    return fleet.oldest_price_observed_at


def test_the_age_counts_calendar_days_from_the_oldest_price_in_the_fleet() -> None:
    result = solved()
    first = oldest(result)
    same_day = datetime.combine(first.date(), datetime.max.time(), tzinfo=UTC)
    age = price_age(result, same_day)
    assert age is not None and age.days == 0 and age.oldest == first and not age.stale
    later = price_age(result, first + timedelta(days=30, hours=1))
    assert later is not None and later.days == 30
    # A moment given in another zone is counted on its UTC date.
    east = timezone(timedelta(hours=10))
    late_evening = datetime.combine(first.date() + timedelta(days=31), datetime.min.time(), east)
    shifted = price_age(result, late_evening)
    assert shifted is not None and shifted.days == 30


def test_stale_only_beyond_the_limit_with_a_warning_naming_age_limit_and_remedy() -> None:
    result = solved(max_age_days=180)
    first = oldest(result)
    at_limit = price_age(result, first + timedelta(days=180))
    assert at_limit is not None and not at_limit.stale and at_limit.warning() is None
    beyond = price_age(result, first + timedelta(days=181))
    assert beyond is not None and beyond.stale
    warning = beyond.warning()
    assert warning is not None
    assert "181 days ago" in warning and first.date().isoformat() in warning
    assert "limit 180 days" in warning and "gpuplan catalog import" in warning


def test_no_limit_never_warns() -> None:
    result = solved(max_age_days=None)
    age = price_age(result, oldest(result) + timedelta(days=3650))
    assert age is not None and age.days == 3650 and not age.stale and age.warning() is None


def test_a_plan_pinned_to_a_past_moment_has_no_age_against_today() -> None:
    pinned = solved(as_of=oldest(solved()) + timedelta(days=1))
    assert pinned.plan.fleet is not None
    assert price_age(pinned, datetime(2040, 1, 1, tzinfo=UTC)) is None


def test_a_plan_without_a_fleet_has_no_age() -> None:
    result = solved()
    empty = replace(result, plan=replace(result.plan, fleet=None))
    assert price_age(empty, datetime(2040, 1, 1, tzinfo=UTC)) is None
