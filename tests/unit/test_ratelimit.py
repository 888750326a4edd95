from __future__ import annotations

import pytest

from service.api.ratelimit import client_address, key_id, parse_networks
from service.cache.ratelimit import WindowLimiter


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


PROXIES = parse_networks(["10.0.0.0/8", "192.0.2.7"])


def test_the_peer_is_the_client_when_no_proxy_is_trusted() -> None:
    assert client_address("203.0.113.5", ["198.51.100.1"], ()) == "203.0.113.5"


def test_forwarded_for_is_ignored_from_an_untrusted_peer() -> None:
    for spoofed in ("198.51.100.1", "198.51.100.2", "10.0.0.1"):
        assert client_address("203.0.113.5", [spoofed], PROXIES) == "203.0.113.5"


def test_forwarded_for_is_honoured_from_a_trusted_proxy() -> None:
    assert client_address("192.0.2.7", ["198.51.100.1"], PROXIES) == "198.51.100.1"
    # Hops the client prepended are ignored: the right-most untrusted address counts.
    assert client_address("10.1.2.3", ["1.1.1.1, 198.51.100.1, 10.9.9.9"], PROXIES) == (
        "198.51.100.1"
    )
    assert client_address("10.1.2.3", ["1.1.1.1", "198.51.100.1"], PROXIES) == "198.51.100.1"


@pytest.mark.parametrize("header", [[], ["not-an-address"], ["10.0.0.9"]])
def test_a_trusted_proxy_without_a_usable_client_counts_as_itself_or_its_last_hop(
    header: list[str],
) -> None:
    assert client_address("10.1.2.3", header, PROXIES) in {"10.1.2.3", "10.0.0.9"}


def test_key_ids_never_hold_the_key() -> None:
    key = "k" * 32
    assert key not in key_id(key) and key_id(key) == key_id(key) != key_id(key + "x")
