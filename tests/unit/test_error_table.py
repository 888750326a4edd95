"""Every mapped exception becomes the right problem document; anything else a bare 500."""

from __future__ import annotations

import pytest
from litestar import Litestar, get
from litestar.testing import TestClient

from service.api.errors import EXCEPTION_HANDLERS, PROBLEMS
from service.domain.errors import (
    Conflict,
    DomainError,
    InvalidInput,
    NotFound,
    UnknownGpu,
    UnknownModel,
)
from service.usecases.errors import ServiceUnavailable

EXAMPLES: dict[type[Exception], Exception] = {
    NotFound: NotFound("thing-x", ("thing-y",), field="id"),
    InvalidInput: InvalidInput("prompt_tokens must be positive", field="prompt_tokens"),
    Conflict: Conflict("alias taken", field="aliases[0]"),
    ServiceUnavailable: ServiceUnavailable("the catalog database is unreachable", retry_after_s=7),
    DomainError: DomainError("generic domain failure", field="x"),
}


def app_raising(exc: Exception) -> Litestar:
    @get("/boom")
    async def boom() -> None:
        raise exc

    return Litestar([boom], exception_handlers=EXCEPTION_HANDLERS, debug=False)


def test_every_table_entry_has_an_example() -> None:
    assert set(EXAMPLES) == set(PROBLEMS)


@pytest.mark.parametrize("cls", list(PROBLEMS), ids=lambda c: c.__name__)
def test_table_entry_maps_to_status_and_problem(cls: type[Exception]) -> None:
    kind = PROBLEMS[cls]
    with TestClient(app_raising(EXAMPLES[cls])) as client:
        response = client.get("/boom")
    assert response.status_code == kind.status
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == kind.status and body["type"].endswith(kind.slug)
    assert body["detail"] and body["instance"] == "/boom"
    example = EXAMPLES[cls]
    if isinstance(example, DomainError):
        assert body["field"] == example.field
    if cls is ServiceUnavailable:
        assert response.headers["retry-after"] == "7"


@pytest.mark.parametrize(
    "exc", [UnknownGpu("h1", ("h100-sxm",)), UnknownModel("llama-9", ("llama-3-8b",))]
)
def test_subclasses_use_their_parent_entry_with_suggestions(exc: Exception) -> None:
    with TestClient(app_raising(exc)) as client:
        response = client.get("/boom")
    assert response.status_code == 404
    assert response.json()["suggestions"]


def test_unmapped_errors_are_a_bare_500_without_internals() -> None:
    with TestClient(
        app_raising(RuntimeError("secret internal state at /srv/x.py line 3"))
    ) as client:
        response = client.get("/boom")
    assert response.status_code == 500
    assert "secret" not in response.text and "Traceback" not in response.text
    assert response.json()["type"].endswith("internal")
