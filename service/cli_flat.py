"""Command-line options made from a table of flat fields (``service.api.schemas.flat``), so a
command accepts what the matching query string and request body accept: the option's type,
choices and default come from the body's wire type at the field's path."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar, get_args, get_origin

import click
import msgspec

from service.api.schemas.flat import NO_DEFAULT, FlatField, field_type, flat_name

F = TypeVar("F", bound=Callable[..., Any])


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _option(body: type[msgspec.Struct], field: FlatField, *, required: bool) -> Callable[[F], F]:
    """The option of one flat field (``--name``, plus ``field.cli_aliases``)."""
    flags = [_flag(field.name), *(_flag(a) for a in field.cli_aliases)]
    if field.shape in ("mix", "caps", "amounts"):
        metavar = {"mix": "SHARE:PROMPT:OUTPUT", "caps": "GPU=CARDS", "amounts": "GPU=NUMBER"}[
            field.shape
        ]
        return click.option(*flags, field.name, multiple=True, metavar=metavar, help=field.help)
    if field.shape == "names":
        return click.option(*flags, field.name, help=field.help)
    spec = field_type(body, field)
    if spec.base is bool:
        off = _flag(field.cli_off or f"no_{field.name}")
        return click.option(
            f"{flags[0]}/{off}",
            field.name,
            default=spec.default,
            show_default=True,
            help=field.help,
        )
    kind: click.ParamType[Any, Any] = click.STRING
    if get_origin(spec.base) is Literal:
        kind = click.Choice([str(v) for v in get_args(spec.base)])
    elif spec.base in (int, float):
        kind = click.INT if spec.base is int else click.FLOAT
    shown = spec.default not in (None, NO_DEFAULT)
    return click.option(
        *flags,
        field.name,
        type=kind,
        default=None,
        required=required and field.required,
        show_default=str(spec.default) if shown else False,
        help=field.help,
    )


def flat_options(
    body: type[msgspec.Struct], fields: Sequence[FlatField], *, required: bool = False
) -> Callable[[F], F]:
    """Every field as an option, in table order; ``required`` makes the fields the query
    string requires required here too. Unset options are ``None`` (the body's default)."""

    def decorate(command: F) -> F:
        for field in reversed(fields):
            command = _option(body, field, required=required)(command)
        return command

    return decorate


def option_for(fields: Sequence[FlatField], path: str | None) -> str:
    """An error's body path as the option that holds it (the path when no option does)."""
    name = flat_name(fields, path, query=False)
    if any(f.name == name for f in fields):
        return _flag(name or "")
    return name or ""
