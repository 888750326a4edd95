"""The estimate's flat inputs: query string and CLI options make the same query as the body,
with the body's limits and defaults."""

from __future__ import annotations

import msgspec
import pytest

from service.api.schemas.estimate import ESTIMATE_FIELDS, EstimateIn, estimate_from_flat
from service.api.schemas.flat import field_type
from service.domain.errors import InvalidInput


def test_flat_values_make_the_same_query_as_the_body() -> None:
    body = {"model": "llama-2-70b", "gpu": "a100", "prompt_tokens": 1024, "output_tokens": 256}
    flat = {**body, "tensor_parallel": None, "qps": 2.0, "allow_pcie_tensor_parallel": True}
    assert (
        estimate_from_flat(flat).to_query()
        == msgspec.convert({**body, "qps": 2}, EstimateIn).to_query()
    )


def test_limits_and_defaults_come_from_the_body() -> None:
    by_name = {f.name: field_type(EstimateIn, f) for f in ESTIMATE_FIELDS}
    assert by_name["tensor_parallel"].limits == {"ge": 1, "le": 72}
    assert by_name["tensor_parallel"].nullable and by_name["tensor_parallel"].default is None
    assert by_name["engine"].default == "vllm"
    assert by_name["allow_pcie_tensor_parallel"].default is True
    assert by_name["model"].base is str and by_name["model"].limits == {
        "min_length": 1,
        "max_length": 200,
    }


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"prompt_tokens": 0}, "prompt_tokens"), ({"tensor_parallel": 80}, "tensor_parallel")],
)
def test_invalid_values_name_their_field(changes: dict[str, int], field: str) -> None:
    base = {"model": "llama-2-70b", "gpu": "a100", "prompt_tokens": 1, "output_tokens": 1}
    with pytest.raises(InvalidInput) as caught:
        estimate_from_flat({**base, **changes})
    assert caught.value.field == field
