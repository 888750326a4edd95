"""Request bodies are refused before decoding when JSON allows what the service does not: too
deep, a key twice, non-finite numbers, NUL in text, a Content-Type that is not JSON."""

from __future__ import annotations

import json

import pytest
from litestar.exceptions import ClientException, SerializationException

from service.api.json_body import MAX_JSON_DEPTH, checked_json, is_json_media_type
from service.domain.errors import InvalidInput


def nested(depth: int) -> bytes:
    return ("[" * depth + "]" * depth).encode()


def test_nesting_up_to_the_limit_is_accepted_and_one_more_is_refused() -> None:
    assert checked_json(nested(MAX_JSON_DEPTH)) is not None
    with pytest.raises(ClientException) as caught:
        checked_json(nested(MAX_JSON_DEPTH + 1))
    assert caught.value.status_code == 400
    assert caught.value.extra == {"field": "body"}
    assert str(MAX_JSON_DEPTH) in caught.value.detail


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_nesting_past_the_decoder_recursion_limit_is_a_400(depth: int) -> None:
    with pytest.raises(ClientException) as caught:
        checked_json(nested(depth))
    assert caught.value.status_code == 400


def test_many_brackets_side_by_side_are_not_deep() -> None:
    body = json.dumps({"observations": [{"a": [1]} for _ in range(500)]}).encode()
    assert len(checked_json(body)["observations"]) == 500


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"model": "a", "model": "b"}', "model"),
        (b'{"workload": {"qps": 1, "qps" : 2}}', "workload.qps"),
        (b'{"observations": [{"usd": 1}, {"usd": 1,\n "usd": 2}]}', "observations[1].usd"),
    ],
)
def test_a_key_given_twice_is_a_400_naming_it(body: bytes, field: str) -> None:
    with pytest.raises(ClientException) as caught:
        checked_json(body)
    assert caught.value.status_code == 400
    assert caught.value.extra == {"field": field}


def test_key_lookalikes_inside_strings_are_not_duplicates() -> None:
    body = json.dumps({"source": 'a": b', "name": '\\":'}).encode()
    assert checked_json(body) == {"source": 'a": b', "name": '\\":'}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"workload": {"qps": NaN}}', "workload.qps"),
        ('{"workload": {"qps": -Infinity}}', "workload.qps"),
        ('{"mix": [{"share": 1}, {"share": 1e309}]}', "mix[1].share"),
        ("1e999", "body"),
    ],
)
def test_non_finite_numbers_are_a_400_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(ClientException) as caught:
        checked_json(text.encode())
    assert caught.value.status_code == 400
    assert caught.value.extra == {"field": field}


def test_other_malformed_json_stays_a_decoding_error() -> None:
    with pytest.raises(SerializationException):
        checked_json(b'{"a": }')


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"name": "a\x00b"}, "name"),
        ({"aliases": ["ok", "x\x00"]}, "aliases[1]"),
        ({"model": {"hf_config": {"k\x00": 1}}}, "model.hf_config.k\\u0000"),
    ],
)
def test_nul_in_any_string_or_key_is_a_422_naming_it(value: object, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        checked_json(json.dumps(value).encode())
    assert caught.value.field == field


def test_an_escaped_backslash_before_u0000_is_plain_text() -> None:
    body = json.dumps({"source": "C:\\u0000"}).encode()
    assert b"\\\\u0000" in body
    assert checked_json(body) == {"source": "C:\\u0000"}


@pytest.mark.parametrize(
    ("content_type", "accepted"),
    [
        ("application/json", True),
        ("application/json; charset=utf-8", True),
        ("Application/JSON", True),
        ("application/problem+json", True),
        ("text/plain", False),
        ("application/x-www-form-urlencoded", False),
        ("multipart/form-data; boundary=x", False),
    ],
)
def test_json_media_types(content_type: str, accepted: bool) -> None:
    assert is_json_media_type(content_type) is accepted
