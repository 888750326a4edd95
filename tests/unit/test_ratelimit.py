from __future__ import annotations

from service.api.ratelimit import WindowLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_sliding_window_per_client() -> None:
    clock = Clock()
    limiter = WindowLimiter(3, clock)
    assert [limiter.admit("a") for _ in range(3)] == [None, None, None]
    assert limiter.admit("a") == 60.0
    assert limiter.admit("b") is None
    clock.now += 30
    assert limiter.admit("a") == 30.0
    clock.now += 30.001
    assert limiter.admit("a") is None
    assert limiter.admit("a") is None
    assert limiter.admit("a") is None
    assert limiter.admit("a") is not None
