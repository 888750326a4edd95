"""README example outputs: generated from the running service (embedded default, in-process, no
network) and checked for drift, like the OpenAPI files."""

from __future__ import annotations

from pathlib import Path

import pytest

from service import readme_examples
from service.readme_examples import (
    ADMIN_KEY,
    ExampleError,
    SectionTrim,
    diff,
    find_examples,
    generate,
    main,
    parse_curl,
    trim_sections,
)
from service.readme_jq import Invocation, JqError, parse_invocation

CATALOG_EXAMPLE = """\
# Try it

```sh
make run
curl -s localhost:8000/v1/catalog | jq -c '{catalog_revision}'
```
<!-- example:catalog -->
```json
{"catalog_revision":0}
```
<!-- /example -->
"""


def test_readme_examples_are_what_the_service_answers() -> None:
    current = readme_examples.README.read_text()
    names = [e.name for e in find_examples(current)]
    assert names == [
        "startup",
        "plan-text",
        "plan-json",
        "plan-relaxations",
        "curve-load",
        "curve-per-gpu",
        "estimate",
        "prices-ingest",
        "benchmark-import",
        "benchmark-import-2",
        "benchmark-import-3",
        "calibration-fit",
        "calibration-report",
        "reference-estimate",
        "calibrated-estimate",
    ]
    changes = diff(current, generate(current))
    assert changes == "", f"README examples drifted; run `make readme`:\n{changes}"


def test_a_file_body_is_read_from_the_repository() -> None:
    name = "tests/fixtures/benchmarks/vllm-a100-qwen3-14b-in2000-out100.json"
    request = parse_curl(f"curl -s -X POST localhost:8000/v1/benchmarks --data-binary @{name}")
    assert request.method == "POST" and request.body is not None
    assert request.body == (readme_examples.README.parent / name).read_text()
    with pytest.raises(ExampleError):
        parse_curl("curl -s localhost:8000/v1/benchmarks --data-binary @no/such/file.json")


def test_check_reports_drift_with_a_diff_and_regeneration_is_idempotent(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(CATALOG_EXAMPLE)
    printed: list[str] = []

    assert main(["--check", "--readme", str(readme)], out=printed.append) == 1
    assert '-{"catalog_revision":0}' in printed[0]
    assert readme.read_text() == CATALOG_EXAMPLE  # --check writes nothing

    assert main(["--readme", str(readme)], out=printed.append) == 0
    rewritten = readme.read_text()
    assert rewritten.count("<!-- example:catalog -->") == 1
    # The seeded catalog's revision: 1, plus one per migration that fills a new GPU spec field.
    [answer] = [line for line in rewritten.splitlines() if line.startswith('{"catalog_revision":')]
    revision = int(answer.removeprefix('{"catalog_revision":').removesuffix("}"))
    assert revision >= 1
    assert rewritten.replace(answer, "") == CATALOG_EXAMPLE.replace('{"catalog_revision":0}', "")
    assert main(["--check", "--readme", str(readme)], out=printed.append) == 0


def test_an_example_the_service_refuses_stops_the_run() -> None:
    text = CATALOG_EXAMPLE.replace("/v1/catalog", "/v1/gpus/h100x")
    with pytest.raises(ExampleError, match="answered 404"):
        generate(text)


def test_a_marker_without_a_command_or_a_closing_comment_is_refused() -> None:
    with pytest.raises(ExampleError, match="no ```sh block"):
        find_examples("<!-- example:orphan -->\n```\nx\n```\n<!-- /example -->\n")
    with pytest.raises(ExampleError, match="well-formed"):
        find_examples(CATALOG_EXAMPLE.replace("<!-- /example -->", ""))


def test_the_curl_command_is_parsed_as_the_shell_would_send_it() -> None:
    request = parse_curl(
        "curl -s -X POST localhost:8000/v1/prices \\\n"
        '  -H "Authorization: Bearer $GPUPLAN_ADMIN_KEYS" \\\n'
        "  -H 'Content-Type: application/json' \\\n"
        """  -d '{"observations": []}'   # a comment"""
    )
    assert request.method == "POST"
    assert request.target == "/v1/prices"
    assert request.headers == (
        ("Authorization", f"Bearer {ADMIN_KEY}"),
        ("Content-Type", "application/json"),
    )
    assert request.body == '{"observations": []}'
    assert request.jq is None

    piped = parse_curl("curl -s 'localhost:8000/v1/gpus?min_memory_gb=100' | jq -r '.gpus[].id'")
    assert (piped.method, piped.target) == ("GET", "/v1/gpus?min_memory_gb=100")
    assert piped.jq == Invocation(".gpus[].id", raw=True)
    assert parse_curl("curl -s localhost:8000/v1/estimate -d '{}'").method == "POST"

    with pytest.raises(ExampleError, match="--retry"):
        parse_curl("curl --retry 3 localhost:8000/healthz")
    with pytest.raises(ExampleError, match="shell variable"):
        parse_curl('curl -s "localhost:8000/v1/gpus/$GPU"')


def test_jq_runs_the_filter_and_refuses_what_it_cannot_run() -> None:
    doc = '{"a": 1, "fleet": [{"gpu": "h100", "n": 2.5, "x": {"p50": 3}}, {"gpu": "l4", "n": 1}]}'
    projected = Invocation("{a, fleet: [.fleet[] | {gpu, p: .x.p50}]}", compact=True).run(doc)
    assert projected == '{"a":1,"fleet":[{"gpu":"h100","p":3},{"gpu":"l4","p":null}]}'
    assert Invocation(".fleet[].gpu", raw=True).run(doc) == "h100\nl4"
    assert Invocation(".fleet[] | select(.n > 1) | .n").run(doc) == "2.5"
    assert Invocation("{n: .fleet}").run('{"fleet": []}') == '{\n  "n": []\n}'
    for broken in ("{a | fleet", ".fleet[", "nosuchfunction(1)"):
        with pytest.raises(JqError):
            parse_invocation(["jq", broken])
    with pytest.raises(JqError, match=r"\[-c\] \[-r\]"):
        parse_invocation(["jq", "-S", "."])
    with pytest.raises(JqError):
        Invocation(".a[]").run(doc)


def test_trimmed_sections_keep_their_first_rows_and_mark_the_rest() -> None:
    text = "\n".join(
        [
            "gpuplan plan abc",
            "",
            "REJECTED",
            "GPU  REASON",
            "a10  " + "x" * 30,
            "l4   short",
            "t4   short",
            "",
            "WHY",
            "- one",
            "- two",
            "",
        ]
    )
    trimmed = trim_sections(text, {"REJECTED": SectionTrim(3, width=20)})
    assert trimmed.splitlines() == [
        "gpuplan plan abc",
        "",
        "REJECTED",
        "GPU  REASON",
        "a10  " + "x" * 15 + " ...",
        "l4   short",
        "...",
        "",
        "WHY",
        "- one",
        "- two",
    ]
