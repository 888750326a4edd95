"""Regenerate the OpenAPI examples that are answers of the performance model and the planner.

``python -m service.api_examples`` (run by ``make openapi`` before the document is exported)
starts gpuplan in-process on the embedded default (a temporary SQLite data directory, the seeded
catalog), sends each documented request example (``service/api/examples/<request>.json``) to its
operation and writes the answer as the response example ``service/api/examples/<name>.json``.
An estimate or a plan changes whenever the calibration, the model presets or the catalog do, so
these examples are regenerated rather than edited: ``--check`` changes nothing and exits 1 with a
unified diff when a committed example differs from the service's answer (a test runs it, like
the README's ``service.readme_examples --check``).

The other examples (request bodies, problem answers, catalog writes) are written by hand; the
GPU examples are built from the seed catalog when the document is built
(``service.api.openapi_docs``).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from service.native_stdout import divert_native_stdout
from service.readme_examples import FIXED_NOW

EXAMPLES_DIR = Path(__file__).resolve().parent / "api" / "examples"


@dataclass(frozen=True, slots=True)
class Answer:
    """The response example ``name``: what ``method target`` answers to the request example
    ``request``."""

    name: str
    method: str
    target: str
    request: str


ANSWERS: tuple[Answer, ...] = (
    Answer("estimate", "POST", "/v1/estimate", "estimate_request"),
    Answer("plan", "POST", "/v1/plans", "plan_request"),
    Answer("plan_flat", "POST", "/v1/plans?format=flat", "plan_request"),
)


class AnswerError(RuntimeError):
    """The service refused a documented request example (the message says which and why)."""


def render(body: object) -> str:
    """An example file's text: the answer's JSON, two-space indented, one trailing newline."""
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def generate(examples_dir: Path = EXAMPLES_DIR) -> dict[str, str]:
    """``name -> file text`` of every example in :data:`ANSWERS`, from a freshly seeded
    service (the same clock as the README's examples, so price ages are reproducible)."""
    from litestar.testing import TestClient

    from service.app import create_app
    from service.settings import load_settings

    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="gpuplan-api-examples-") as data_dir:
        settings = load_settings({"HOME": data_dir, "GPUPLAN_DATA_DIR": data_dir})
        app = create_app(settings, clock=lambda: FIXED_NOW)
        with TestClient(app) as client:
            for answer in ANSWERS:
                body = (examples_dir / f"{answer.request}.json").read_text()
                reply = client.request(
                    answer.method,
                    answer.target,
                    content=body,
                    headers={"Content-Type": "application/json"},
                )
                if reply.status_code != 200:
                    raise AnswerError(
                        f"{answer.method} {answer.target} with {answer.request}.json answered "
                        f"{reply.status_code}: {reply.text[:300]}"
                    )
                out[answer.name] = render(reply.json())
    return out


def diff(current: str, generated: str, name: str) -> str:
    """Unified diff from the committed example to the generated one ('' when identical)."""
    return "".join(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            generated.splitlines(keepends=True),
            fromfile=f"{name} (on disk)",
            tofile=f"{name} (generated)",
        )
    )


def main(argv: list[str] | None = None, *, out: Callable[[str], object] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail with a diff if out of date")
    parser.add_argument(
        "--dir", type=Path, default=EXAMPLES_DIR, help="the examples directory to rewrite"
    )
    args = parser.parse_args(argv)
    try:
        generated = generate(args.dir)
    except AnswerError as exc:
        print(f"api examples: {exc}", file=sys.stderr)
        return 2
    stale = []
    for name, text in generated.items():
        path = args.dir / f"{name}.json"
        current = path.read_text() if path.exists() else ""
        if current == text:
            continue
        stale.append(name)
        if args.check:
            out(diff(current, text, path.name))
        else:
            path.write_text(text)
            out(f"rewrote {path.name}")
    if args.check and stale:
        print("OpenAPI answer examples are out of date; run `make openapi`", file=sys.stderr)
        return 1
    if not stale:
        out("OpenAPI answer examples are up to date")
    return 0


if __name__ == "__main__":
    divert_native_stdout()  # HiGHS' stray printf stays off the terminal (service.native_stdout)
    raise SystemExit(main())
