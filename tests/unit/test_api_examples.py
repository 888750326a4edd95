"""The OpenAPI examples of estimates and plans are what the service answers to the documented
request examples (regenerated and compared), and a drifted or refused example is reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from service import api_examples


def test_the_answer_examples_are_what_the_service_answers() -> None:
    said: list[str] = []
    assert api_examples.main(["--check"], out=said.append) == 0, "".join(said)


def test_each_answer_example_is_the_answer_to_its_request_example() -> None:
    shown = {a.name: json.loads((api_examples.EXAMPLES_DIR / f"{a.name}.json").read_text())
             for a in api_examples.ANSWERS}  # fmt: skip
    request = json.loads((api_examples.EXAMPLES_DIR / "plan_request.json").read_text())
    assert shown["plan"]["request"]["model"] == request["model"]
    assert shown["plan_flat"]["plan_id"] == shown["plan"]["plan_id"]  # one plan, two forms
    estimate = json.loads((api_examples.EXAMPLES_DIR / "estimate_request.json").read_text())
    assert shown["estimate"]["requests_per_s"] == estimate["qps"]  # the load it was asked at
    assert shown["estimate"]["fits"] is True


def test_check_reports_drift_and_a_rewrite_fixes_it(tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(api_examples.EXAMPLES_DIR, examples)
    stale = json.loads((examples / "estimate.json").read_text())
    stale["ttft_ms"] = 1.0
    (examples / "estimate.json").write_text(api_examples.render(stale))
    said: list[str] = []

    assert api_examples.main(["--check", "--dir", str(examples)], out=said.append) == 1
    assert '-  "ttft_ms": 1.0,' in "".join(said)
    assert json.loads((examples / "estimate.json").read_text())["ttft_ms"] == 1.0  # unchanged

    assert api_examples.main(["--dir", str(examples)], out=said.append) == 0
    assert (examples / "estimate.json").read_text() == (
        api_examples.EXAMPLES_DIR / "estimate.json"
    ).read_text()


def test_a_request_example_the_service_refuses_stops_the_run(tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(api_examples.EXAMPLES_DIR, examples)
    (examples / "estimate_request.json").write_text('{"model": "no-such-model"}')
    assert api_examples.main(["--check", "--dir", str(examples)], out=lambda _: None) == 2
