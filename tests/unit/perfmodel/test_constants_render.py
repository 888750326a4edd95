"""The generated constants module keeps to the line length: long strings (the reasons a target
was missed) are written as parenthesised implicit concatenations that read back unchanged."""

from __future__ import annotations

import ast

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
