"""Property-based fuzzing of every operation against the app's own OpenAPI document.

schemathesis loads the document the running app serves at ``/docs/openapi.json`` (a test below
pins it to the committed ``openapi/openapi.json``) and generates requests for every operation:
schema-valid ones (``GenerationMode.POSITIVE``) and invalid ones (``GenerationMode.NEGATIVE``:
wrong types, out-of-range values, missing or unknown fields, broken JSON). Each response must
be no 5xx, a documented status, a documented content type and a body valid against the
documented schema; invalid requests must be rejected with a documented 4xx problem.

The app runs once for the module on the embedded SQLite backend under a real uvicorn server
(``tests.support.server.live_server``) rather than schemathesis' in-process ASGI transport:
requests then cross the same HTTP stack as in production (uvicorn's parsing, body-size limits,
the lifespan running in the server's own event loop, untouched by the test's loop).

Admin writes (``PUT /v1/gpus/{gpu_id}``, ``POST /v1/prices``) take their credentials in turn
from ``WRITE_AUTH``: the admin key on half of the cases, so that invalid bodies reach
validation; no ``Authorization`` header, another bearer key or an arbitrary header value on the
rest, which must all be refused with 401/403. The write rate limit is out of reach for the
fuzzed app; a second, small app allowing two writes a minute checks that its 429 answers
conform too. In positive mode, by-id reads also draw ids that exist (``existing_ids``), so
their 200 answers are fuzzed too, not only 404s.

Checks (schemathesis built-ins unless noted): ``not_a_server_error``,
``status_code_conformance``, ``content_type_conformance``, ``response_schema_conformance``,
``response_headers_conformance``, ``negative_data_rejection``, ``ignored_auth`` (a 2xx admin
write is re-sent without and with a wrong key; both must be refused), and the narrowed
``decoder_accepts_schema_valid_requests`` (``tests/support/fuzz.py``) in place of
``positive_data_acceptance``, whose docstring says why. Not used: the coverage-phase checks
(``missing_required_header``, ``unsupported_method``) and ``allow_header_conformance``, which
only act on coverage-phase or OPTIONS cases this test does not generate, the stateful
``use_after_free`` / ``ensure_resource_availability`` (no links between operations are
documented), ``object_level_authorization`` (one identity only) and ``max_response_time``
(timing would make the test flaky; the benchmarks own latency). The document declares no
response headers yet, so ``response_headers_conformance`` guards future ones.

Failures are collected rather than raised at the first one, so a run lists every distinct
defect per operation with a reproduction of the exact request; Hypothesis never shrinks, which
keeps the module bounded (~1,300 requests, well under a minute). Generation is derandomised, so
CI sends the same requests each run; the last test prints how many went to each operation, and
how many were answered 5xx, and fails below 1,000.

``make fuzz`` runs the same tests longer (``GPUPLAN_TEST_FUZZ_EXAMPLES=250``,
``GPUPLAN_TEST_FUZZ_MIN_REQUESTS=5000``): at least 5,000 requests, with zero 5xx required.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import pytest_asyncio
import requests
import schemathesis
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import CheckFunction, not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.specs.openapi.schemas import OpenApiSchema

from service.app import create_app
from tests.conftest import ADMIN_KEY, OTHER_KEY, base_settings
from tests.support.databases import SqliteDatabases
from tests.support.fuzz import FuzzLedger, decoder_accepts_schema_valid_requests
from tests.support.server import live_server

pytestmark = pytest.mark.integration

DOCUMENT = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
_SPEC: dict[str, Any] = json.loads(DOCUMENT.read_text())
_METHODS = {"get", "put", "post", "patch", "delete"}

# operationId -> (takes inputs, needs the admin key), in document order.
OPERATIONS: dict[str, tuple[bool, bool]] = {
    op["operationId"]: (
        bool(op.get("parameters") or op.get("requestBody")),
        bool(op.get("security")),
    )
    for item in _SPEC["paths"].values()
    for method, op in item.items()
    if method in _METHODS
}
# An operation without parameters or a body has nothing to make invalid: positive mode only.
FUZZ_CASES = [
    (op_id, mode)
    for op_id, (takes_inputs, _) in OPERATIONS.items()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if takes_inputs or mode is GenerationMode.POSITIVE
]

# Per (operation, mode). Parameterless operations stop once Hypothesis has tried every input
# (one request); the other 22 (operation, mode) pairs send this many: ~1,300 requests in all.
# ``make fuzz`` raises both (see the module docstring).
MAX_EXAMPLES = int(os.environ.get("GPUPLAN_TEST_FUZZ_EXAMPLES", "60"))
MIN_REQUESTS = int(os.environ.get("GPUPLAN_TEST_FUZZ_MIN_REQUESTS", "1000"))
REQUEST_TIMEOUT_S = 30.0

# Credentials for admin writes, in turn (case i gets WRITE_AUTH[i % 6]): the admin key on half
# of them, so that invalid bodies reach validation; no Authorization header, another bearer key
# and an arbitrary header value on the rest, which must all be refused with 401/403.
WRITE_AUTH = ("admin", "none", "admin", "other-key", "admin", "garbage")
READ_AUTH = ("none",)
_HEADER_TEXT = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=64)
GARBAGE_AUTHORIZATION = st.one_of(_HEADER_TEXT, _HEADER_TEXT.map("Bearer {}".format))


def authorization(who: str, garbage: str) -> str | None:
    return {
        "admin": f"Bearer {ADMIN_KEY}",
        "none": None,
        "other-key": f"Bearer {OTHER_KEY}",
        "garbage": garbage,
    }[who]


FUZZ_CHECKS: list[CheckFunction] = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    negative_data_rejection,
    ignored_auth,
    decoder_accepts_schema_valid_requests,
]
# ignored_auth re-sends a 2xx write without a key and with a wrong one; under a limit of two
# writes a minute those probes are themselves answered 429, which that check cannot tell apart.
RATE_LIMITED_CHECKS = [check for check in FUZZ_CHECKS if check is not ignored_auth]

FUZZ_SETTINGS = hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    # Failures are collected, never raised, so there is nothing to shrink or explain.
    phases=(Phase.explicit, Phase.generate),
    # Large generated bodies and filtered draws are the point of fuzzing, not a test smell.
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def fuzz_database_urls(sqlite_databases: SqliteDatabases) -> tuple[str, str]:
    """Two fresh, migrated, seeded SQLite catalogs: the fuzzed app's and the rate-limited one's."""
    return await sqlite_databases.fresh(), await sqlite_databases.fresh()


@pytest.fixture(scope="module")
def fuzz_url(
    fuzz_database_urls: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    settings = base_settings(
        fuzz_database_urls[0],
        tmp_path_factory.mktemp("fuzz"),
        # Throttling would mask every other answer to admin writes; 429 is tested on its own.
        write_rate_limit_per_minute=1_000_000,
    )
    with live_server(create_app(settings)) as url:
        yield url


def load_schema(url: str) -> OpenApiSchema:
    """The document ``url`` serves. Credentials are the test's to choose (see ``WRITE_AUTH``), so
    schemathesis does not generate an Authorization header of its own."""
    schema = schemathesis.openapi.from_url(f"{url}/docs/openapi.json")
    schema.config.generation.update(with_security_parameters=False)
    return schema


@pytest.fixture(scope="module")
def fuzz_schema(fuzz_url: str) -> OpenApiSchema:
    return load_schema(fuzz_url)


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


@pytest.fixture(scope="module")
def ledger() -> FuzzLedger:
    return FuzzLedger()


@pytest.fixture(scope="module")
def existing_ids(fuzz_url: str, http: requests.Session) -> dict[str, list[str]]:
    """Path parameter values that name something, so the 200 answers of by-id reads are fuzzed
    too (random ids only ever meet 404): every GPU and model id in the catalog and an alias of
    each kind, and the id of a plan solved from the document's own request example."""
    gpus = http.get(f"{fuzz_url}/v1/gpus", timeout=REQUEST_TIMEOUT_S).json()["gpus"]
    models = http.get(f"{fuzz_url}/v1/models", timeout=REQUEST_TIMEOUT_S).json()["models"]
    example = _SPEC["paths"]["/v1/plans"]["post"]["requestBody"]["content"]["application/json"]
    plan = http.post(
        f"{fuzz_url}/v1/plans", json=example["schema"]["examples"][0], timeout=REQUEST_TIMEOUT_S
    )
    assert plan.status_code == 200, plan.text
    return {
        "gpu_id": [g["id"] for g in gpus] + ["H100"],
        "model_id": [m["id"] for m in models] + ["Mixtral-8x7B"],
        "plan_id": [plan.json()["plan_id"]],
        "name": [_calibration_profile(fuzz_url, http)],
    }


def _calibration_profile(url: str, http: requests.Session) -> str:
    """A calibration profile fitted from the documented examples (the benchmark file with
    its documented parameters, then the calibration request), so calibration reads and fits
    meet something to read and measurements to fit."""
    op = _SPEC["paths"]["/v1/benchmarks"]["post"]
    query = {
        p["name"]: next(iter(p["examples"].values()))["value"]
        for p in op["parameters"]
        if p.get("examples")
    }
    body = op["requestBody"]["content"]["text/plain"]["examples"]["vllm"]["value"]
    auth = {"Authorization": f"Bearer {ADMIN_KEY}"}
    imported = http.post(
        f"{url}/v1/benchmarks", params=query, data=body.encode(), timeout=REQUEST_TIMEOUT_S,
        headers={**auth, "Content-Type": "text/plain"},
    )  # fmt: skip
    assert imported.status_code in (200, 201), imported.text
    request = _SPEC["paths"]["/v1/calibrations"]["post"]["requestBody"]["content"]
    example = request["application/json"]["schema"]["examples"][0]
    fitted = http.post(
        f"{url}/v1/calibrations", json=example, headers=auth, timeout=REQUEST_TIMEOUT_S
    )
    assert fitted.status_code == 201, fitted.text
    return str(fitted.json()["name"])


def case_strategy(
    operation: APIOperation[Any, Any, Any, Any],
    mode: GenerationMode,
    existing_ids: dict[str, list[str]],
) -> st.SearchStrategy[schemathesis.Case[Any]]:
    """Generated cases; in positive mode, some with a path parameter naming something that
    exists (``putGpu`` excepted: its random slugs create GPUs, which is its 2xx path; and a
    parameter naming no stored thing, such as a chart name, is generated from its enum)."""
    generated = operation.as_strategy(mode)
    file_example = documented_file_example(operation) if mode is GenerationMode.POSITIVE else None
    if file_example is not None:
        return st.one_of(generated, file_example)
    names = re.findall(r"{(\w+)}", operation.path)
    if (
        mode is not GenerationMode.POSITIVE
        or len(names) != 1
        or operation.method == "put"
        or names[0] not in existing_ids
    ):
        return generated
    pinned = [
        operation.as_strategy(mode, path_parameters={names[0]: value})
        for value in existing_ids[names[0]]
    ]
    return st.one_of(generated, st.one_of(pinned))


def documented_file_example(
    operation: APIOperation[Any, Any, Any, Any],
) -> st.SearchStrategy[schemathesis.Case[Any]] | None:
    """For an operation whose body is a raw file (a string schema) that only imports with the
    context its query parameters give: the documented example file sent with every documented
    parameter example, so positive fuzzing reaches the success path too (random text and
    random GPU names never do). A text media type is preferred: a string sent as
    ``application/json`` would be encoded as a JSON string, not sent as the file."""
    raw = operation.definition.raw
    contents = (raw.get("requestBody") or {}).get("content", {})
    for media, content in sorted(contents.items(), key=lambda item: "json" in item[0]):
        examples = content.get("examples") or {}
        if content.get("schema", {}).get("type") != "string" or not examples:
            continue
        query = {
            p["name"]: next(iter(p["examples"].values()))["value"]
            for p in raw.get("parameters", [])
            if p.get("in") == "query" and p.get("examples")
        }
        body = next(iter(examples.values()))["value"]
        return operation.as_strategy(
            GenerationMode.POSITIVE, query=query, body=body, media_type=media
        )
    return None


def send_and_check(
    case: schemathesis.Case[Any],
    *,
    authorization: str | None,
    url: str,
    http: requests.Session,
    checks: list[CheckFunction],
) -> tuple[schemathesis.Response, list[Failure]]:
    """Send one case (with ``authorization`` when given); answer the response and the failures
    of ``checks``."""
    headers = None if authorization is None else {"Authorization": authorization}
    response = case.call(base_url=url, session=http, headers=headers, timeout=REQUEST_TIMEOUT_S)
    try:
        case.validate_response(
            response,
            checks=checks,
            headers=headers,
            # What ignored_auth needs to re-send the case without credentials.
            transport_kwargs={
                "base_url": url,
                "session": http,
                "headers": headers,
                "timeout": REQUEST_TIMEOUT_S,
            },
        )
    except FailureGroup as group:
        return response, list(group.exceptions)
    return response, []


def fuzz_operation(
    operation: APIOperation[Any, Any, Any, Any],
    mode: GenerationMode,
    *,
    cases: st.SearchStrategy[schemathesis.Case[Any]],
    auth: tuple[str, ...],
    settings: hypothesis.settings,
    checks: list[CheckFunction],
    url: str,
    http: requests.Session,
    ledger: FuzzLedger,
    label: str,
) -> Counter[tuple[str, int]]:
    """Send up to ``settings.max_examples`` generated cases, with credentials taken from
    ``auth`` in turn, counting each in ``ledger`` and collecting failures there; answer how many
    got each status, by the credentials sent."""
    operation_id = operation.definition.raw["operationId"]
    by_auth: Counter[tuple[str, int]] = Counter()

    # Drawn only where it is sent: an operation without inputs then exhausts after one case.
    garbage_values = GARBAGE_AUTHORIZATION if "garbage" in auth else st.just("")

    @settings
    @hypothesis.given(case=cases, garbage=garbage_values)
    def fuzz(case: schemathesis.Case[Any], garbage: str) -> None:
        who = auth[by_auth.total() % len(auth)]
        response, failures = send_and_check(
            case, authorization=authorization(who, garbage), url=url, http=http, checks=checks
        )
        ledger.record(operation_id, label, response.status_code)
        ledger.add_failures(operation_id, label, failures, response, who)
        by_auth[who, response.status_code] += 1

    fuzz()
    return by_auth


def test_the_app_serves_the_committed_document(fuzz_url: str, http: requests.Session) -> None:
    served = http.get(f"{fuzz_url}/docs/openapi.json", timeout=REQUEST_TIMEOUT_S).json()
    assert served == _SPEC, "regenerate it: python -m service.openapi_export"


@pytest.mark.parametrize(
    ("operation_id", "mode"),
    FUZZ_CASES,
    ids=[f"{op_id}-{mode.value}" for op_id, mode in FUZZ_CASES],
)
def test_operation_conforms_to_the_document(
    operation_id: str,
    mode: GenerationMode,
    fuzz_url: str,
    fuzz_schema: OpenApiSchema,
    existing_ids: dict[str, list[str]],
    http: requests.Session,
    ledger: FuzzLedger,
) -> None:
    operation = fuzz_schema.find_operation_by_id(operation_id)
    needs_admin = OPERATIONS[operation_id][1]
    by_auth = fuzz_operation(
        operation,
        mode,
        cases=case_strategy(operation, mode, existing_ids),
        auth=WRITE_AUTH if needs_admin else READ_AUTH,
        settings=FUZZ_SETTINGS,
        checks=FUZZ_CHECKS,
        url=fuzz_url,
        http=http,
        ledger=ledger,
        label=mode.value,
    )
    assert ledger.statuses(operation_id, mode.value), "no request was sent"
    problems = auth_problems(by_auth, mode) if needs_admin else []
    if ledger.findings.get((operation_id, mode.value)):
        problems.append(ledger.report(operation_id, mode.value))
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def auth_problems(by_auth: Counter[tuple[str, int]], mode: GenerationMode) -> list[str]:
    """What is wrong with how an admin write answered each kind of credentials."""
    problems = []
    seen = f"(credentials, status): count = {dict(by_auth)}"
    if any(who != "admin" and status not in (401, 403) for who, status in by_auth):
        problems.append(f"a write without the admin key was not refused with 401/403: {seen}")
    if not by_auth["none", 401]:
        problems.append(f"no write without a key was answered 401: {seen}")
    admin = [status for who, status in by_auth if who == "admin"]
    if mode is GenerationMode.POSITIVE and not any(status < 300 for status in admin):
        problems.append(f"no valid write with the admin key succeeded: {seen}")
    if mode is GenerationMode.NEGATIVE and not any(s not in (401, 403) for s in admin):
        problems.append(f"no invalid write with the admin key got past authentication: {seen}")
    return problems


def test_rate_limited_writes_answer_a_documented_429(
    fuzz_database_urls: tuple[str, str],
    tmp_path_factory: pytest.TempPathFactory,
    http: requests.Session,
) -> None:
    """Over the write limit, admin writes get 429 problems that conform to the document."""
    settings = base_settings(
        fuzz_database_urls[1], tmp_path_factory.mktemp("ratelimit"), write_rate_limit_per_minute=2
    )
    ledger = FuzzLedger()
    with live_server(create_app(settings)) as url:
        schema = load_schema(url)
        for operation_id, (_, needs_admin) in OPERATIONS.items():
            if not needs_admin:
                continue
            operation = schema.find_operation_by_id(operation_id)
            by_auth = fuzz_operation(
                operation,
                GenerationMode.POSITIVE,
                cases=operation.as_strategy(GenerationMode.POSITIVE),
                auth=("admin",),
                settings=hypothesis.settings(FUZZ_SETTINGS, max_examples=6),
                checks=RATE_LIMITED_CHECKS,
                url=url,
                http=http,
                ledger=ledger,
                label="limited",
            )
            assert by_auth["admin", 429], f"{operation_id}: no 429 over the limit: {by_auth}"
    reports = [ledger.report(op, mode) for op, mode in ledger.findings]
    assert not reports, "\n\n".join(reports)


def test_enough_requests_across_all_operations(
    ledger: FuzzLedger, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs last: the fuzz tests above sent at least ``MIN_REQUESTS`` requests, some to every
    operation (a table of them is printed), and none was answered 5xx."""
    fuzz_items = [i for i in request.session.items if i.name.startswith("test_operation_conforms")]
    if len(fuzz_items) < len(FUZZ_CASES):
        pytest.skip("counts the whole fuzz run: select every test of this module")
    with capsys.disabled():
        print(f"\nOpenAPI fuzz: requests sent per operation and mode\n{ledger.table()}")
    silent = [f"{op} {m.value}" for op, m in FUZZ_CASES if not ledger.statuses(op, m.value)]
    assert not silent, f"no request was sent for: {silent}"
    assert ledger.total() >= MIN_REQUESTS, ledger.table()
    assert ledger.server_errors() == 0, ledger.table()
