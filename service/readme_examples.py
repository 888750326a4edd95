"""Regenerate the example outputs in ``README.md`` from the running service.

``python -m service.readme_examples`` (or ``make readme``) starts gpuplan in-process on the
embedded default (a temporary SQLite data directory, seeded catalog, in-process plan cache), runs
every marked example in README order against that one fresh service, and rewrites each marked
block with the real output. ``--check`` changes nothing and exits 1 with a unified diff when the
README differs (a test runs it, like the OpenAPI check of ``service.openapi_export``).

A generated block is a fenced block between two HTML comments::

    <!-- example:NAME -->
    ```json
    ...written by this module...
    ```
    <!-- /example -->

For every name but ``startup`` the request is read from the README itself: the last command
starting with ``curl`` in the nearest ```` ```sh ```` block above the marker, so the command a
reader copies is the request sent. ``curl`` options understood: ``-s``, ``-X``, ``-H``, ``-d``,
``--data-binary @FILE`` (a file of the repository, e.g. a benchmark fixture)
(``$GPUPLAN_ADMIN_KEYS`` stands for the admin key the service was started with). A trailing
``| jq [-c] [-r] 'FILTER'`` is run by jq itself (``service.readme_jq``), so the block shows what
jq prints. A request answered with a 4xx or 5xx stops the run. Plan answers are byte-identical
for an identical request at the same catalog revision, so the output is deterministic.

Tables between ``<!-- table:NAME -->`` and ``<!-- /table -->`` are rendered from committed data
by ``service.readme_tables`` (the performance model's held-out accuracy, the seed prices, and
the benchmark figures of ``bench/RESULTS.md``).

``startup`` shows what ``make run`` prints first: the CLI's banner for the default data directory
of a user ``you`` and the app's ``startup`` log line, whose ``ts`` is shown as ``"..."``.

Trimmed blocks (``TEXT_TRIMS``): in ``plan-text`` the ALTERNATIVES, REJECTED and ASSUMPTIONS
sections keep their first rows, long rows there are cut, and ``...`` marks what was left out.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock
from urllib.parse import urlsplit

from service import readme_bench, readme_jq, readme_tables
from service.native_stdout import divert_native_stdout

README = Path(__file__).resolve().parents[1] / "README.md"
ADMIN_KEY = "readme-example-admin-key-0123456789"
HOST, PORT = "127.0.0.1", "8000"  # what `make run` serves on
SHOWN_HOME = "/home/you"
SHOWN_DATA_DIR = f"{SHOWN_HOME}/.local/share/gpuplan"
# Price writes record when they were ingested; a fixed clock keeps the run reproducible.
FIXED_NOW = datetime(2026, 11, 2, tzinfo=UTC)

_BLOCK = re.compile(
    r"(?P<open><!-- example:(?P<name>[a-z0-9-]+) -->\n)"
    r"```(?P<lang>[a-z]*)\n.*?```\n"
    r"(?P<close><!-- /example -->)",
    re.DOTALL,
)
_SH_FENCE = re.compile(r"^```sh\n(?P<body>.*?)^```$", re.DOTALL | re.MULTILINE)
_SECTION = re.compile(r"^[A-Z][A-Z ]+[A-Z](?: \(.*\))?$")


class ExampleError(RuntimeError):
    """A marked example cannot be run or rendered (the message says which and why)."""


@dataclass(frozen=True, slots=True)
class SectionTrim:
    """Keep the first ``lines`` lines of a section (column header included); cut each kept
    line at ``width`` characters (0: never)."""

    lines: int
    width: int = 0


TEXT_TRIMS: dict[str, dict[str, SectionTrim]] = {
    "plan-text": {
        "ALTERNATIVES": SectionTrim(4),
        "REJECTED": SectionTrim(4, width=120),
        "ASSUMPTIONS": SectionTrim(2, width=120),
    },
}


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request taken from a README ``curl`` command, and its ``jq`` stage if any."""

    method: str
    target: str  # path and query string
    headers: tuple[tuple[str, str], ...]
    body: str | None
    jq: readme_jq.Invocation | None


@dataclass(frozen=True, slots=True)
class Example:
    name: str
    lang: str
    start: int  # offset of the fenced block (just after the opening marker)
    end: int  # offset of the closing marker
    command: str | None  # the curl command above it (None for ``startup``)


# --- reading the README ------------------------------------------------------------------


def _command_above(text: str, limit: int, floor: int, name: str) -> str:
    fences = list(_SH_FENCE.finditer(text, floor, limit))
    if not fences:
        raise ExampleError(f"example {name}: no ```sh block with its command above the marker")
    lines = fences[-1].group("body").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("curl ")]
    if not starts:
        raise ExampleError(f"example {name}: the ```sh block above has no curl command")
    return "\n".join(lines[starts[-1] :])


def find_examples(text: str) -> list[Example]:
    """Every marked block, in README order, with the command each one shows the output of."""
    found: list[Example] = []
    floor = 0
    for m in _BLOCK.finditer(text):
        name = m.group("name")
        command = None if name == "startup" else _command_above(text, m.start(), floor, name)
        found.append(Example(name, m.group("lang"), m.end("open"), m.start("close"), command))
        floor = m.end()
    names = [e.name for e in found]
    if len(set(names)) != len(names):
        raise ExampleError(f"example names must be unique, got {', '.join(names)}")
    opened = text.count("<!-- example:")
    if opened != len(found):
        raise ExampleError(
            f"{opened} example markers but {len(found)} well-formed blocks: each marker must be "
            "followed by one fenced block and <!-- /example -->"
        )
    return found


def parse_curl(command: str) -> Request:
    """The request a README ``curl`` command sends (only the options the README uses)."""
    words = shlex.split(command.replace("\\\n", " "), comments=True)
    jq = None
    if "|" in words:
        at = words.index("|")
        words, jq = words[:at], readme_jq.parse_invocation(words[at + 1 :])
    method, url, headers, body = "GET", None, [], None
    it = iter(words[1:])
    for word in it:
        if word == "-s":
            continue
        if word in {"-X", "-H", "-d", "--data-binary"}:
            value = next(it, None)
            if value is None:
                raise ExampleError(f"curl {word} without a value in: {command}")
            if word == "-X":
                method = value
            elif word == "-H":
                name, _, content = value.partition(":")
                content = content.strip().replace("$GPUPLAN_ADMIN_KEYS", ADMIN_KEY)
                headers.append((name.strip(), content))
            else:
                body = _file_body(value, command) if word == "--data-binary" else value
                method = "POST" if method == "GET" else method
        elif word.startswith("-"):
            raise ExampleError(f"curl option {word} is not understood here: {command}")
        else:
            url = word
    if url is None:
        raise ExampleError(f"curl without a URL: {command}")
    parts = urlsplit(url if "://" in url else f"http://{url}")
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    if "$" in target or any("$" in v for _, v in headers) or (body and "$" in body):
        raise ExampleError(f"unknown shell variable in: {command}")
    return Request(method, target, tuple(headers), body, jq)


def _file_body(value: str, command: str) -> str:
    """``--data-binary @path``: the file's text (``path`` relative to the repository root)."""
    if not value.startswith("@"):
        raise ExampleError(f"--data-binary takes @file here: {command}")
    path = README.parent / value[1:]
    if not path.is_file():
        raise ExampleError(f"--data-binary: no file {value[1:]} in the repository: {command}")
    return path.read_text()


# --- rendering -------------------------------------------------------------------------------


def trim_sections(text: str, trims: dict[str, SectionTrim]) -> str:
    """``text`` with the named sections (a heading in capitals after a blank line, up to the
    next blank line) cut to their first lines; a ``...`` line marks rows left out and a
    trailing `` ...`` a cut line."""
    out: list[str] = []
    trim: SectionTrim | None = None
    kept = 0
    for line in text.splitlines():
        if (not out or not out[-1]) and _SECTION.match(line):
            trim, kept = trims.get(line.split(" (")[0]), 0
            out.append(line)
            continue
        if not line:
            trim = None
        if trim is None:
            out.append(line)
            continue
        kept += 1
        if kept <= trim.lines:
            cut = trim.width and len(line) > trim.width
            out.append(line[: trim.width].rstrip() + " ..." if cut else line)
        elif kept == trim.lines + 1:
            out.append("...")
    return "\n".join(out).rstrip("\n")


def _render(example: Example, request: Request, status: int, body: str) -> str:
    if status >= 400:
        raise ExampleError(f"example {example.name}: {request.target} answered {status}: {body}")
    if request.jq is not None:
        return request.jq.run(body)
    trims = TEXT_TRIMS.get(example.name)
    return trim_sections(body, trims) if trims else body.rstrip("\n")


# --- running the service ---------------------------------------------------------------------


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _captured(logger_name: str) -> Iterator[_Records]:
    logger = logging.getLogger(logger_name)
    handler, level = _Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _banner() -> str:
    """The first line ``gpuplan serve`` prints (uvicorn itself is not started), for a user
    ``you`` with no ``GPUPLAN_*`` variables set."""
    from click.testing import CliRunner

    from service.cli import main as cli

    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("GPUPLAN_")}
    env |= {"HOME": SHOWN_HOME, "XDG_DATA_HOME": None}
    with (
        mock.patch("uvicorn.run"),
        mock.patch("service.observability.logging.configure_logging"),
    ):
        result = CliRunner().invoke(cli, ["serve", "--host", HOST, "--port", PORT], env=env)
    if result.exit_code != 0:
        raise ExampleError(f"gpuplan serve stopped with {result.exit_code}: {result.output}")
    return result.stderr.strip()


def _startup_line(records: list[logging.LogRecord], data_dir: str) -> str:
    from service.observability.logging import JsonFormatter

    started = [r for r in records if getattr(r, "event", None) == "startup"]
    if len(started) != 1:
        raise ExampleError(f"expected one startup log record, got {len(started)}")
    line = JsonFormatter().format(started[0]).replace(data_dir, SHOWN_DATA_DIR)
    return re.sub(r'^\{"ts":"[^"]*"', '{"ts":"..."', line)


def generate(text: str) -> str:
    """``text`` (the README) with every marked block rewritten from the running service."""
    from litestar.testing import TestClient

    from service.app import create_app
    from service.settings import load_settings

    examples = find_examples(text)
    requests = {e.name: parse_curl(e.command) for e in examples if e.command is not None}
    outputs: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="gpuplan-readme-") as data_dir:
        settings = load_settings(
            {"HOME": data_dir, "GPUPLAN_DATA_DIR": data_dir, "GPUPLAN_ADMIN_KEYS": ADMIN_KEY}
        )
        app = create_app(settings, clock=lambda: FIXED_NOW)
        with _captured("gpuplan.app") as log, TestClient(app) as client:
            for example in examples:
                if example.command is None:
                    outputs[example.name] = _banner() + "\n" + _startup_line(log.records, data_dir)
                    continue
                req = requests[example.name]
                answer = client.request(
                    req.method, req.target, headers=dict(req.headers), content=req.body
                )
                outputs[example.name] = _render(example, req, answer.status_code, answer.text)
    return readme_tables.rewrite(_rewrite(text, examples, outputs))


def _rewrite(text: str, examples: list[Example], outputs: dict[str, str]) -> str:
    pieces, at = [], 0
    for example in examples:
        pieces += [text[at : example.start], f"```{example.lang}\n{outputs[example.name]}\n```\n"]
        at = example.end
    pieces.append(text[at:])
    return "".join(pieces)


def diff(current: str, generated: str, name: str = "README.md") -> str:
    """Unified diff from the committed README to the generated one ('' when identical)."""
    lines = difflib.unified_diff(
        current.splitlines(keepends=True),
        generated.splitlines(keepends=True),
        fromfile=f"{name} (on disk)",
        tofile=f"{name} (generated)",
    )
    return "".join(lines)


def main(argv: list[str] | None = None, *, out: Callable[[str], object] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail with a diff if out of date")
    parser.add_argument("--readme", type=Path, default=README, help="the file to rewrite")
    args = parser.parse_args(argv)
    current = args.readme.read_text()
    try:
        generated = generate(current)
    except (ExampleError, readme_jq.JqError, readme_bench.BenchResultsError) as exc:
        print(f"readme examples: {exc}", file=sys.stderr)
        return 2
    if args.check:
        changes = diff(current, generated, args.readme.name)
        if changes:
            out(changes)
            print("README examples are out of date; run `make readme`", file=sys.stderr)
            return 1
        return 0
    if generated != current:
        args.readme.write_text(generated)
        out(f"rewrote the examples in {args.readme.name}")
    else:
        out(f"{args.readme.name} examples are up to date")
    return 0


if __name__ == "__main__":
    divert_native_stdout()  # HiGHS' stray printf stays off the terminal (service.native_stdout)
    raise SystemExit(main())
