"""Domain errors. They carry no HTTP knowledge: ``service/api/errors.py`` maps each class to a
status code and an RFC 9457 problem document.

Every error has a human ``message`` and, where one input is at fault, the ``field`` that holds it
(a dotted path such as ``workload.mix[2].share``).
"""

from __future__ import annotations


class DomainError(Exception):
    """Base class of every error the domain raises on purpose."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class NotFound(DomainError):
    """A named thing does not exist. ``suggestions`` holds the closest known ids (``label``
    says how they were chosen) and ``remedy`` what else the caller can do."""

    kind = "thing"

    def __init__(
        self,
        name: str,
        suggestions: tuple[str, ...] = (),
        *,
        field: str | None = None,
        label: str = "closest",
        remedy: str | None = None,
    ) -> None:
        hint = f"; {label}: {', '.join(suggestions)}" if suggestions else ""
        tail = f"; {remedy}" if remedy else ""
        super().__init__(f"unknown {self.kind} {name!r}{hint}{tail}", field=field)
        self.name = name
        self.suggestions = suggestions


class UnknownGpu(NotFound):
    kind = "GPU"


class UnknownModel(NotFound):
    kind = "model"


class InvalidInput(DomainError):
    """An input value is well-typed but impossible (zero tokens, shares not summing to 1...)."""


class Conflict(DomainError):
    """A write would break an invariant of the catalog (an alias already owned by another GPU)."""
