"""Calibration profiles: a team's named, versioned corrections to the reference constants
(``perfmodel.values.Correction`` per GPU family, one engine), with the fit report that says
how well they reproduce the team's rows."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime

from service.domain.errors import InvalidInput, NotFound
from service.domain.perfmodel.values import Correction
from service.domain.profiles.fit import ErrorCell
from service.domain.vocabulary import Engine

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
REFERENCE = "reference"
"""The ``calibration`` value that asks for the reference constants (no profile), overriding a
server default."""
RESERVED = ("jobs", REFERENCE)  # a path segment of /v1/calibrations; the reference
_SPEC = re.compile(r"^(?P<name>[a-z0-9][a-z0-9-]{0,62})(?:@v(?P<version>[1-9][0-9]{0,8}))?$")
MAX_SELECTION = 32


def check_name(name: str, field: str = "name") -> str:
    """A profile name: a lowercase slug (letters, digits, dashes; at most 63)."""
    if not NAME.match(name) or name in RESERVED:
        raise InvalidInput(
            f"calibration profile name {name!r}: a lowercase slug (letters, digits, dashes, "
            "at most 63), e.g. team-search",
            field=field,
        )
    return name


def parse_spec(spec: str, field: str = "calibration") -> tuple[str, int | None]:
    """``name`` (its newest version) or ``name@vN`` (version N), as requests give it."""
    match = _SPEC.match(spec.strip())
    if match is None:
        raise InvalidInput(
            f"calibration {spec!r}: a profile name (team-search), a pinned version "
            f"(team-search@v2), or {REFERENCE!r} for the reference constants",
            field=field,
        )
    version = match.group("version")
    return match.group("name"), int(version) if version else None


@dataclass(frozen=True, slots=True)
class Selection:
    """Which stored measurements a profile is fitted on: files carrying every label, on any
    of ``gpus`` and ``models`` (empty: any)."""

    labels: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    models: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CalibrationProfile:
    """One stored version of a named profile. Errors are median absolute percentage errors
    (fractions) over ``rows`` fitted rows from ``files`` files: with the reference constants
    (``error_before``), with this profile (``error_after``, in sample) and with each file
    held out of the fit (``error_held_out``; ``None`` with one file)."""

    name: str
    version: int
    engine: Engine
    selection: Selection
    corrections: tuple[Correction, ...]
    rows: int
    files: int
    error_before: float
    error_after: float
    error_held_out: float | None
    cells: tuple[ErrorCell, ...]
    notes: tuple[str, ...]
    created_at: datetime
    key_id: str

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def spec(self) -> str:
        """How a request pins this version (``team-search@v2``)."""
        return f"{self.name}@v{self.version}"

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(c.family for c in self.corrections)

    def correction_for(self, engine: str, family: str) -> Correction | None:
        """The multipliers for ``engine`` on a card of ``family`` (``None``: not covered, the
        reference constants apply)."""
        if engine != self.engine:
            return None
        for c in self.corrections:
            if c.family == family:
                return replace(c, label=self.label)
        return None

    def summary(self) -> str:
        """One sentence for ``assumptions``: the profile, its data and its error."""
        held = (
            f", {self.error_held_out * 100:.0f}% with each file held out"
            if self.error_held_out is not None
            else ", no held-out error (one file)"
        )
        return (
            f"Calibration profile {self.label} ({self.engine} on "
            f"{', '.join(self.families)} GPUs): fitted on {self.rows} measurements from "
            f"{self.files} file(s); median error {self.error_after * 100:.0f}% on them "
            f"(reference {self.error_before * 100:.0f}%){held}."
        )


class UnknownProfile(NotFound):
    kind = "calibration profile"


def calibration_words(
    profile: CalibrationProfile, engine: str, families: dict[str, str]
) -> tuple[str, ...]:
    """What ``assumptions`` say about ``profile`` for a request on ``engine`` and cards
    ``families`` (GPU id -> family): its summary when it corrects any of them, and each card
    it does not cover, which keeps the reference constants."""
    if engine != profile.engine:
        return (
            f"Calibration profile {profile.label} corrects {profile.engine}, not {engine}: "
            "this answer uses the reference constants.",
        )
    covered = [g for g, fam in families.items() if profile.correction_for(engine, fam)]
    out = [profile.summary()] if covered else []
    for gpu, fam in sorted(families.items()):
        if gpu not in covered:
            out.append(
                f"Calibration profile {profile.label} has no {engine} measurements on {fam} "
                f"GPUs: {gpu} uses the reference constants."
            )
    return tuple(out)
