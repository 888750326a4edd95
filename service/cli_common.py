"""Helpers shared by the ``gpuplan`` commands: run a coroutine, fail with one line."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import NoReturn, TypeVar

import click

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    """Run ``coro`` to completion on a fresh event loop."""

    async def main() -> T:
        return await coro

    return asyncio.run(main())


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``gpuplan: <message>`` on stderr and exit with ``code`` (no traceback)."""
    click.echo(f"gpuplan: {message}", err=True)
    sys.exit(code)


def error_text(exc: BaseException) -> str:
    """One line for an error: a domain error's message and field, else the exception type."""
    from service.domain.errors import DomainError

    if isinstance(exc, DomainError):
        return exc.message + (f" ({exc.field})" if exc.field else "")
    return f"{type(exc).__name__}: {exc}"
