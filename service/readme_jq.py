"""``curl ... | jq 'FILTER'`` as the README's examples write it: the filter is run by jq itself
(libjq, through the ``jq`` package), so a generated example shows what a reader's jq prints.

Only the options ``-c`` (one line per value) and ``-r`` (strings printed raw) are accepted after
the pipe; values print with two-space indentation, keys in the order the service wrote them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jq


class JqError(ValueError):
    """The jq command line or filter is not one the README generator runs."""


@dataclass(frozen=True, slots=True)
class Invocation:
    """``jq [-c] [-r] FILTER`` as written after the pipe in a README command."""

    filter: str
    compact: bool = False
    raw: bool = False

    def run(self, document: str) -> str:
        """What jq prints for the JSON ``document`` (without the final newline)."""
        try:
            outputs: list[Any] = _compile(self.filter).input_text(document).all()
        except ValueError as exc:
            raise JqError(f"jq {self.filter!r}: {exc}") from exc
        return "\n".join(self._show(v) for v in outputs)

    def _show(self, value: Any) -> str:
        if self.raw and isinstance(value, str):
            return value
        if self.compact:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return json.dumps(value, ensure_ascii=False, indent=2)


def _compile(text: str) -> Any:
    try:
        return jq.compile(text)
    except ValueError as exc:
        raise JqError(f"jq filter {text!r} does not compile: {exc}") from exc


def parse_invocation(words: Sequence[str]) -> Invocation:
    """``["jq", "-c", "{a}"]`` -> ``Invocation("{a}", compact=True)``; other options refused."""
    if not words or words[0] != "jq":
        raise JqError(f"only `| jq ...` may follow curl, got {' '.join(words)!r}")
    options = [w for w in words[1:] if w.startswith("-")]
    rest = [w for w in words[1:] if not w.startswith("-")]
    unknown = sorted(set(options) - {"-c", "-r"})
    if unknown or len(rest) != 1:
        raise JqError(f"jq {' '.join(words[1:])!r}: expected [-c] [-r] and one filter")
    _compile(rest[0])  # refuse a filter jq rejects before any request is sent
    return Invocation(rest[0], compact="-c" in options, raw="-r" in options)
