"""Flat inputs (query parameters, command-line options) defined once per request body.

A table of ``FlatField`` rows names each flat input, the path in the JSON body it fills and how
its text is read (one value, a comma-separated list, repeated ``SHARE:PROMPT:OUTPUT`` shapes,
repeated ``GPU=CARDS`` caps, repeated ``GPU=NUMBER`` amounts). Types, limits and defaults are
not repeated in the table: they are read from the body's wire types (``field_type``), so every
front door accepts the same values. Flat inputs become a body (``body_from_flat``) and go the
body's way from there; errors name body paths, and ``flat_name`` gives the flat input that holds
a path.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec
from msgspec import Meta

from service.domain.errors import InvalidInput

Shape = Literal["value", "names", "mix", "caps", "amounts"]
NAMES_MAX_CHARS = 2000
"""Longest comma-separated list a query parameter takes."""
NO_DEFAULT: Any = msgspec.NODEFAULT
S = TypeVar("S", bound=msgspec.Struct)


@dataclass(frozen=True, slots=True)
class FlatField:
    """One flat input. ``name`` is the query parameter (and, with dashes, the CLI option);
    ``path`` the dotted path it fills in the body; ``help`` its description; ``query`` whether
    the query string offers it (the CLI offers every field); ``required`` whether the query
    string needs it; ``cli_off`` the CLI spelling of false for a boolean (else ``no-<name>``);
    ``cli_aliases`` other spellings of the CLI option."""

    name: str
    path: str
    help: str | None = None
    shape: Shape = "value"
    query: bool = True
    required: bool = False
    cli_off: str | None = None
    cli_aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FieldType:
    """What the body takes at a field's path: the value type (a ``Literal`` kept as is), its
    ``Meta`` limits (``gt``, ``ge``, ``lt``, ``le``, ``min_length``, ``max_length``), its
    default (``NO_DEFAULT`` when required) and whether ``None`` is allowed."""

    base: Any
    limits: Mapping[str, Any]
    default: Any
    nullable: bool


_LIMITS = ("gt", "ge", "lt", "le", "min_length", "max_length")


def _is_struct(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, msgspec.Struct)


def _split(annotation: Any) -> tuple[Any, dict[str, Any], bool]:
    """(value type, Meta limits, None allowed) of a body annotation. Of a union of a value and
    a struct (a model: preset id or custom model) the flat input is the value."""
    nullable = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        nullable = len(members) < len(get_args(annotation))
        values = [a for a in members if not _is_struct(a)]
        annotation = values[0] if values else members[0]
    limits: dict[str, Any] = {}
    if get_origin(annotation) is Annotated:
        base, *extras = get_args(annotation)
        for meta in extras:
            if isinstance(meta, Meta):
                limits.update(
                    {k: getattr(meta, k) for k in _LIMITS if getattr(meta, k) is not None}
                )
        annotation = base
    return annotation, limits, nullable


def field_type(body: type[msgspec.Struct], field: FlatField) -> FieldType:
    """The type, limits and default of ``body`` at ``field.path``."""
    owner = body
    *parents, leaf = field.path.split(".")
    for part in parents:
        owner, _, _ = _split(get_type_hints(owner, include_extras=True)[part])
    annotation = get_type_hints(owner, include_extras=True)[leaf]
    info = {f.name: f for f in msgspec.structs.fields(owner)}[leaf]
    default = info.default
    if info.default_factory is not NO_DEFAULT:
        default = info.default_factory()
    base, limits, nullable = _split(annotation)
    return FieldType(base, limits, default, nullable)


# ---- flat values -> body -----------------------------------------------------------------------


def _names(raw: str) -> list[str] | None:
    return [x.strip() for x in raw.split(",") if x.strip()] or None


def _mix(items: tuple[str, ...] | list[str], field: FlatField) -> list[dict[str, Any]] | None:
    out = []
    for item in items:
        try:
            share, prompt, output = item.split(":")
            out.append(
                {"share": float(share), "prompt_tokens": int(prompt), "output_tokens": int(output)}
            )
        except ValueError:
            raise InvalidInput(
                f"{item!r}: expected SHARE:PROMPT_TOKENS:OUTPUT_TOKENS, e.g. 0.7:512:200",
                field=field.path,
            ) from None
    return out or None


def _caps(items: tuple[str, ...] | list[str], field: FlatField) -> dict[str, int] | None:
    caps = {}
    for item in items:
        gpu, _, cards = item.partition("=")
        if not cards.isdigit():
            raise InvalidInput(f"{item!r}: expected GPU=CARDS, e.g. h100=16", field=field.path)
        caps[gpu] = int(cards)
    return caps or None


def _amounts(items: tuple[str, ...] | list[str], field: FlatField) -> dict[str, float] | None:
    out = {}
    for item in items:
        gpu, _, number = item.partition("=")
        try:
            out[gpu] = float(number)
        except ValueError:
            raise InvalidInput(
                f"{item!r}: expected GPU=NUMBER, e.g. h100=25000", field=field.path
            ) from None
    return out or None


def _body_value(field: FlatField, raw: Any) -> Any:
    if field.shape == "names":
        return _names(str(raw))
    if field.shape == "mix":
        return _mix(raw, field)
    if field.shape == "caps":
        return _caps(raw, field)
    if field.shape == "amounts":
        return _amounts(raw, field)
    return raw


@cache
def _steps(path: str) -> tuple[tuple[str, ...], str]:
    *parents, leaf = path.split(".")
    return tuple(parents), leaf


def body_from_flat(fields: Sequence[FlatField], values: Mapping[str, Any]) -> dict[str, Any]:
    """The body (as plain data) that flat ``values`` (by field name) stand for. A value that is
    ``None`` or empty is left out, so the body's default applies."""
    body: dict[str, Any] = {}
    for field in fields:
        raw = values.get(field.name)
        if raw is None:
            continue
        value = _body_value(field, raw)
        if value is None:
            continue
        parents, leaf = _steps(field.path)
        node = body
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return body


_AT_PATH = re.compile(r"\s*-\s*at `\$\.?(?P<path>[^`]*)`")


def body_from_data(body: type[S], raw: Any) -> S:
    """``raw`` (plain data) as a ``body``; ``InvalidInput`` naming the path at fault."""
    try:
        return msgspec.convert(raw, body)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _AT_PATH.search(text)
        path = match.group("path") if match else None
        raise InvalidInput(_AT_PATH.sub("", text).strip(), field=path or None) from None


# ---- body paths -> flat names -------------------------------------------------------------------


def flat_name(fields: Sequence[FlatField], path: str | None, *, query: bool) -> str | None:
    """The flat input that holds body ``path`` (a query parameter when ``query``, else any
    field): the field at the path or the nearest one above it (``constraints.gpus[2]`` ->
    ``gpus``), or the one field below it (``budget`` -> ``budget_usd_per_hour`` in a query).
    Otherwise ``path`` itself."""
    if path is None:
        return None
    fields = [f for f in fields if f.query or not query]
    by_path = {f.path: f.name for f in fields}
    candidate = path
    while True:
        if candidate in by_path:
            return by_path[candidate]
        cut = max(candidate.rfind("["), candidate.rfind("."))
        if cut <= 0:
            break
        candidate = candidate[:cut]
    below = [f.name for f in fields if f.path.startswith(path + ".")]
    return below[0] if len(below) == 1 else path
