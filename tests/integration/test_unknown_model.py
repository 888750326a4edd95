"""An unknown model answers 404 with suggestions on every route that takes a model, on both
backends: the closest spellings when one is close, else presets of its family or size, else the
popular presets, never an empty list."""

from __future__ import annotations

from typing import Any

import pytest

from service.domain.llm import PRESETS
from service.domain.llm.resolve import POPULAR_PRESETS
from tests.conftest import Client

pytestmark = pytest.mark.integration

SHAPE = "qps=2&prompt_tokens=256&output_tokens=64"


def _requests(name: str) -> dict[str, tuple[str, str, dict[str, Any] | None]]:
    return {
        "model by id": ("GET", f"/v1/models/{name}", None),
        "plan by query": ("GET", f"/v1/plan?model={name}&{SHAPE}", None),
        "estimate by query": (
            "GET",
            f"/v1/estimate?model={name}&gpu=l4&prompt_tokens=256&output_tokens=64",
            None,
        ),
        "plan body": (
            "POST",
            "/v1/plans",
            {"model": name, "workload": {"qps": 2, "prompt_tokens": 256, "output_tokens": 64}},
        ),
        "estimate body": (
            "POST",
            "/v1/estimate",
            {"model": name, "gpu": "l4", "prompt_tokens": 256, "output_tokens": 64},
        ),
    }


ROUTES = list(_requests("x"))
# (name, the suggestions expected: a tuple is exact, a callable checks each id)
NAMES: dict[str, Any] = {
    "nothing close": ("nosuchthingzzz", POPULAR_PRESETS),
    "size only": ("starcoder2-15b", lambda pid: 8 <= PRESETS[pid].params_b <= 30),
    "close spelling": ("lama-3.1-70", lambda pid: pid.startswith("llama")),
}


async def _ask(client: Client, route: str, name: str) -> Any:
    method, url, body = _requests(name)[route]
    if method == "GET":
        return await client.get(url)
    return await client.post(url, json=body)


@pytest.mark.parametrize("kind", list(NAMES), ids=list(NAMES))
@pytest.mark.parametrize("route", ROUTES, ids=ROUTES)
async def test_an_unknown_model_gets_suggestions(client: Client, route: str, kind: str) -> None:
    name, expected = NAMES[kind]
    response = await _ask(client, route, name)
    assert response.status_code == 404, response.text
    problem = response.json()
    assert problem["field"] == "model"
    suggestions = problem["suggestions"]
    assert 0 < len(suggestions) <= 5
    assert all(s in PRESETS for s in suggestions)
    if isinstance(expected, tuple):
        assert tuple(suggestions) == expected
    else:
        assert all(expected(s) for s in suggestions), suggestions
    assert ", ".join(suggestions) in problem["detail"]


async def test_with_nothing_close_the_detail_says_how_to_describe_the_model(
    client: Client,
) -> None:
    response = await _ask(client, "plan body", "nosuchthingzzz")
    detail = response.json()["detail"]
    assert "popular presets" in detail
    assert "params_b" in detail and "hf_config" in detail
