"""A plan whose helper is broken (a process pool that lost its worker) is still the plan: the
planner's own thread does the helper's share."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import pytest

from service.domain.perfmodel import Slo
from service.domain.planner import WorkloadBucket, plan
from service.usecases.seed_catalog import seed_snapshot
from tests.support.plan_requests import plan_request

T = TypeVar("T")


class Broken(Executor):
    """Every job fails as a process pool's jobs fail once a worker died; or, ``at_submit``,
    the submission itself fails, as a pool's whose helpers keep dying."""

    def __init__(self, *, at_submit: bool = False) -> None:
        self.submitted = 0
        self.at_submit = at_submit

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        self.submitted += 1
        if self.at_submit:
            raise BrokenProcessPool("helper processes keep dying")
        future: Future[T] = Future()
        future.set_exception(BrokenProcessPool("a worker died"))
        return future


@pytest.mark.parametrize("at_submit", [False, True])
def test_a_broken_helper_leaves_the_plan_unchanged(at_submit: bool) -> None:
    request = plan_request(
        qps=12.0,
        buckets=(WorkloadBucket("chat", 1.0, 800, 200),),
        slo=Slo(ttft_ms=1500, tpot_ms=60, e2e_ms=None, percentile=95),
        min_replicas=2,
    )
    snapshot = seed_snapshot()
    broken = Broken(at_submit=at_submit)
    got = plan(request, snapshot, executor=broken)
    assert broken.submitted == 1
    assert got.fleet is not None and got.alternatives
    assert repr(got) == repr(plan(request, snapshot))
