"""Bookkeeping for the OpenAPI fuzz test (``tests/integration/test_fuzz_openapi.py``).

``FuzzLedger`` counts every generated request by operation, generation mode and status, and
collects check failures as distinct findings, each with a reproduction of the exact request
sent (method, URL, headers, body), so one run reports every defect it met instead of
stopping at the first.

``decoder_accepts_schema_valid_requests`` is the narrowed form of schemathesis'
``positive_data_acceptance`` check used there (see its docstring).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from schemathesis import Case, CheckContext, Response
from schemathesis.core.failures import Failure

_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_SCHEMA_AT = re.compile(r"Schema at \S+")
_QUIET_HEADERS = {
    "user-agent",
    "accept-encoding",
    "accept",
    "connection",
    "content-length",
    "x-schemathesis-testcaseid",
}
_MAX_FINDINGS_PER_TEST = 25
_BODY_CHARS = 700


@dataclass
class Finding:
    """One distinct failure: what failed, how often, and the first request that showed it."""

    title: str
    message: str
    status: int
    reproduction: str
    count: int = 0


@dataclass
class FuzzLedger:
    """Requests sent per (operation id, mode) and status; findings per (operation id, mode)."""

    sent: dict[tuple[str, str], Counter[int]] = field(default_factory=dict)
    findings: dict[tuple[str, str], dict[tuple[str, int, str], Finding]] = field(
        default_factory=dict
    )

    def record(self, operation_id: str, mode: str, status: int) -> None:
        self.sent.setdefault((operation_id, mode), Counter())[status] += 1

    def total(self, *, operation_id: str | None = None) -> int:
        return sum(
            sum(statuses.values())
            for (op, _), statuses in self.sent.items()
            if operation_id is None or op == operation_id
        )

    def server_errors(self) -> int:
        """Requests answered 5xx, over every operation and mode."""
        return sum(n for statuses in self.sent.values() for s, n in statuses.items() if s >= 500)

    def statuses(self, operation_id: str, mode: str | None = None) -> Counter[int]:
        merged: Counter[int] = Counter()
        for (op, m), statuses in self.sent.items():
            if op == operation_id and (mode is None or m == mode):
                merged.update(statuses)
        return merged

    def add_failures(
        self,
        operation_id: str,
        mode: str,
        failures: list[Failure],
        response: Response,
        auth: str,
    ) -> None:
        """Record the failures of one response; several of one kind (a body that violates its
        schema in eight places) make one finding."""
        if not failures:
            return
        by_title: dict[str, list[Failure]] = {}
        for failure in failures:
            by_title.setdefault(failure.title, []).append(failure)
        found = self.findings.setdefault((operation_id, mode), {})
        for title, group in by_title.items():
            message = group[0].message.strip()
            if len(group) > 1:
                message += f"\n(and {len(group) - 1} more like it in this response)"
            # Where the body broke its schema, else the message with its varying numbers
            # (generated values, request ids) masked, names the defect.
            where = _SCHEMA_AT.search(message)
            what = where.group(0) if where else _NUMBER.sub("N", message)[:300]
            key = (title, response.status_code, what)
            finding = found.get(key)
            if finding is None:
                if len(found) >= _MAX_FINDINGS_PER_TEST:
                    continue
                finding = found[key] = Finding(
                    title=title,
                    message=message,
                    status=response.status_code,
                    reproduction=reproduction(response, auth),
                )
            finding.count += 1

    def report(self, operation_id: str, mode: str) -> str:
        found = self.findings.get((operation_id, mode), {})
        lines = [f"{len(found)} distinct failure(s) for {operation_id} ({mode}):"]
        for n, finding in enumerate(found.values(), 1):
            lines.append(f"\n[{n}] {finding.title} (status {finding.status}, {finding.count}x)")
            lines.extend("    " + line for line in finding.message.splitlines())
            lines.append("  reproduction:")
            lines.extend("    " + line for line in finding.reproduction.splitlines())
        return "\n".join(lines)

    def table(self) -> str:
        rows = [f"{'operation':<18} {'mode':<9} {'sent':>5}  statuses"]
        for (op, mode), statuses in sorted(self.sent.items()):
            by_status = ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items()))
            rows.append(f"{op:<18} {mode:<9} {sum(statuses.values()):>5}  {by_status}")
        rows.append(f"{'total':<28} {self.total():>5}")
        rows.append(f"{'answered 5xx':<28} {self.server_errors():>5}")
        return "\n".join(rows)


def reproduction(response: Response, auth: str) -> str:
    """The request exactly as sent: method and URL, the non-default headers, the body."""
    request = response.request
    lines = [f"{request.method} {request.url}"]
    for name, raw in request.headers.items():
        if name.lower() in _QUIET_HEADERS:
            continue
        value = raw.decode("latin-1") if isinstance(raw, bytes) else raw
        if name.lower() == "authorization" and auth == "admin":
            value = "Bearer <ADMIN_KEY>"
        lines.append(f"{name}: {value}")
    lines.append(f"(auth: {auth})")
    body = request.body
    if isinstance(body, bytes | str) and body:
        text = body.decode("utf-8", "backslashreplace") if isinstance(body, bytes) else body
        if len(text) > _BODY_CHARS:
            text = text[:_BODY_CHARS] + f"... ({len(text)} chars)"
        lines.append(text)
    answer = response.text_lossy()
    if answer:
        answer = answer if len(answer) <= _BODY_CHARS else answer[:_BODY_CHARS] + "..."
        lines.append(f"-> {response.status_code}: {answer}")
    return "\n".join(lines)


def _problem(response: Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except (ValueError, json.JSONDecodeError):
        return None
    return body if isinstance(body, dict) else None


def decoder_accepts_schema_valid_requests(
    ctx: CheckContext, response: Response, case: Case[Any]
) -> bool | None:
    """A schema-valid (positive) request must get past the request decoder.

    schemathesis' ``positive_data_acceptance`` fails every positive case answered 4xx other
    than 401/403/404/409/429. gpuplan documents 422 for values that are inconsistent with each
    other or with the catalog ("a custom model needs params_b", "observed_at must be after
    2000"), which JSON Schema cannot express, so that check cannot pass against a correct
    service. This narrower check keeps what it is for: the OpenAPI document is generated from
    the same msgspec types that decode requests, so a schema-valid request rejected while
    decoding (400 malformed body, or 422 whose problem lists decoder ``errors``) means the
    document omits a constraint the service enforces. Domain-level 422s (no ``errors`` list)
    pass.
    """
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    status = response.status_code
    if status not in (400, 422):
        return None
    problem = _problem(response) or {}
    if status == 422 and not problem.get("errors"):
        return None
    detail = problem.get("detail", response.text_lossy()[:200])
    raise AssertionError(
        f"A request valid against the OpenAPI document was rejected while decoding: "
        f"{status} {detail!r} (field {problem.get('field')!r}). The document omits a "
        "constraint the service enforces, or the service rejects a documented value."
    )
