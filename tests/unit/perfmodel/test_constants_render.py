"""The generated constants module keeps to the line length: long strings (the reasons a target
was missed) are written as parenthesised implicit concatenations that read back unchanged."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from bench.calibrate import LINE_LENGTH, _literal

REASON = (
    "GPUStack's bursts of 1,000 requests of 128 prompt / 4 output tokens are bound by the "
    '"server" path \\ not by the GPUs: ' + "their timings imply 3-22 ms per request; " * 12
).strip()


@pytest.mark.parametrize("text", ["short", REASON, "x" * 150, "word " * 40])
def test_a_string_literal_reads_back_and_fits_the_line(text: str) -> None:
    source = "REPORT = " + _literal({"notes": [{"reason": text}]})
    tree = ast.parse(source)
    assert ast.literal_eval(tree.body[0].value) == {"notes": [{"reason": text}]}  # type: ignore[attr-defined]
    words_fit = all(len(word) < LINE_LENGTH - 20 for word in text.split(" "))
    if words_fit:
        assert max(len(line) for line in source.splitlines()) <= LINE_LENGTH


QUOTED = (
    'Vultr\'s vLLM 0.16 runs of "Nemotron Nano 30B" in FP8 on 2x B200 (2,048 prompt / 512 '
    'output tokens, 1-1,024 clients): the "stat not stated" rows are read as means ' * 3
)


@pytest.mark.parametrize("text", ["short", "it's", REASON, QUOTED, 'a "quoted" word'])
def test_ruff_format_leaves_the_rendered_module_as_it_is(text: str) -> None:
    # the module is generated, and CI checks it with ``ruff format --check``
    source = "REPORT = " + _literal({"notes": [{"reason": text}]}) + "\n"
    formatted = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", "constants.py", "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    ).stdout
    assert formatted == source
