from __future__ import annotations

from service.api.auth import AdminKeys

KEY_A = "a" * 32
KEY_B = "b" * 32


def test_accepts_only_configured_keys() -> None:
    keys = AdminKeys([KEY_A, KEY_B])
    assert keys.accepts(KEY_A) and keys.accepts(KEY_B)
    assert not keys.accepts(KEY_A[:-1])
    assert not keys.accepts(KEY_A + "a")
    assert not keys.accepts("")


def test_no_keys_means_no_writes() -> None:
    keys = AdminKeys([])
    assert not keys.configured
    assert not keys.accepts(KEY_A)


def test_repr_never_shows_keys() -> None:
    assert KEY_A not in repr(AdminKeys([KEY_A]))
    assert "1 keys" in repr(AdminKeys([KEY_A]))
