"""The subset of jq that the README's examples pipe answers through, so that a generated example
shows what ``curl ... | jq 'FILTER'`` prints (``service.readme_examples``).

Understood: ``.``, field paths (``.a.b``), iteration (``.a[]``, ``.[]``), pipes (``|``), array
construction (``[f]``), object construction (``{a, b: f, c: {d: .x}}``), and the options ``-c``
(one line per value) and ``-r`` (strings printed raw). Anything else is refused with the reason,
never guessed at. Values print as jq 1.7 prints them: two-space indentation, keys in order,
numbers as the service wrote them (jq 1.6 would print ``40.0`` as ``40``).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>[.\[\]{},:|]))")


class JqError(ValueError):
    """The filter or the command line uses jq beyond this subset."""


# A parsed filter is a tree of tuples:
#   ("path", (step, ...))       step: a field name, or None for []
#   ("pipe", left, right)
#   ("array", inner)
#   ("object", ((key, value), ...))
Node = tuple[Any, ...]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        at = 0
        while at < len(text.rstrip()):
            m = _TOKEN.match(text, at)
            if m is None:
                raise JqError(f"jq filter {text!r}: unsupported syntax at {text[at:]!r}")
            self.tokens.append(m.group("name") or m.group("punct"))
            at = m.end()
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise JqError(f"jq filter {self.text!r}: expected {expected or 'more'}, got {token}")
        self.at += 1
        return token

    def pipe(self) -> Node:
        node = self.term()
        while self.peek() == "|":
            self.take("|")
            node = ("pipe", node, self.term())
        return node

    def term(self) -> Node:
        head = self.peek()
        if head == ".":
            return self.path()
        if head == "[":
            self.take("[")
            inner = self.pipe()
            self.take("]")
            return ("array", inner)
        if head == "{":
            return self.object()
        raise JqError(f"jq filter {self.text!r}: unsupported term at {head!r}")

    def path(self) -> Node:
        steps: list[str | None] = []
        self.take(".")
        if self.peek() not in {None, "[", "|", ",", "}", "]", "."}:
            steps.append(self.name())
        while self.peek() in {".", "["}:
            if self.take() == ".":
                steps.append(self.name())
            else:
                self.take("]")
                steps.append(None)
        return ("path", tuple(steps))

    def name(self) -> str:
        token = self.take()
        if not token[0].isalpha() and token[0] != "_":
            raise JqError(f"jq filter {self.text!r}: expected a field name, got {token!r}")
        return token

    def object(self) -> Node:
        self.take("{")
        entries: list[tuple[str, Node]] = []
        while True:
            key = self.name()
            if self.peek() == ":":
                self.take(":")
                entries.append((key, self.term()))
            else:
                entries.append((key, ("path", (key,))))
            separator = self.take()
            if separator == "}":
                return ("object", tuple(entries))
            if separator != ",":
                raise JqError(f"jq filter {self.text!r}: expected , or }} got {separator!r}")


def parse(text: str) -> Node:
    parser = _Parser(text)
    node = parser.pipe()
    if parser.peek() is not None:
        raise JqError(f"jq filter {text!r}: unsupported syntax at {parser.peek()!r}")
    return node


def evaluate(node: Node, value: Any) -> list[Any]:
    """Every output of ``node`` on ``value``, in jq's order."""
    kind = node[0]
    if kind == "path":
        outputs = [value]
        for step in node[1]:
            outputs = [y for x in outputs for y in _step(x, step)]
        return outputs
    if kind == "pipe":
        return [y for x in evaluate(node[1], value) for y in evaluate(node[2], x)]
    if kind == "array":
        return [evaluate(node[1], value)]
    keys = [key for key, _ in node[1]]
    choices = [evaluate(sub, value) for _, sub in node[1]]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*choices)]


def _step(value: Any, step: str | None) -> list[Any]:
    if step is None:
        if isinstance(value, list):
            return list(value)
        if isinstance(value, dict):
            return list(value.values())
        raise JqError(f"cannot iterate over {type(value).__name__}")
    if value is None:
        return [None]
    if not isinstance(value, dict):
        raise JqError(f"cannot index {type(value).__name__} with {step!r}")
    return [value.get(step)]


@dataclass(frozen=True, slots=True)
class Invocation:
    """``jq [-c] [-r] FILTER`` as written after the pipe in a README command."""

    filter: str
    compact: bool = False
    raw: bool = False

    def run(self, document: str) -> str:
        """What jq prints for the JSON ``document`` (without the final newline)."""
        outputs = evaluate(parse(self.filter), json.loads(document))
        return "\n".join(self._show(v) for v in outputs)

    def _show(self, value: Any) -> str:
        if self.raw and isinstance(value, str):
            return value
        if self.compact:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return json.dumps(value, ensure_ascii=False, indent=2)


def parse_invocation(words: Sequence[str]) -> Invocation:
    """``["jq", "-c", "{a}"]`` -> ``Invocation("{a}", compact=True)``; other options refused."""
    if not words or words[0] != "jq":
        raise JqError(f"only `| jq ...` may follow curl, got {' '.join(words)!r}")
    options, rest = (
        [w for w in words[1:] if w.startswith("-")],
        [w for w in words[1:] if not w.startswith("-")],
    )
    unknown = sorted(set(options) - {"-c", "-r"})
    if unknown or len(rest) != 1:
        raise JqError(f"jq {' '.join(words[1:])!r}: expected [-c] [-r] and one filter")
    parse(rest[0])  # refuse an unsupported filter before any request is sent
    return Invocation(rest[0], compact="-c" in options, raw="-r" in options)
