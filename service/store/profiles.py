"""Calibration profile repository: named profiles, each version one append-only row.

A new version takes the next number under its name in the same transaction that stores it;
two fits finishing together under one name meet the unique (name, version) constraint and
the later one retries with the next number.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from service.domain.perfmodel.values import Correction
from service.domain.profiles.fit import ErrorCell
from service.domain.profiles.values import CalibrationProfile, Selection
from service.domain.vocabulary import Engine
from service.store.errors import outage_as_unavailable
from service.store.models import CalibrationProfileRow

_RETRIES = 3


class ProfileRepository:
    def __init__(self, engine: AsyncEngine) -> None:
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)

    @outage_as_unavailable
    async def add(self, profile: CalibrationProfile) -> CalibrationProfile:
        """Store ``profile`` as the next version of its name (its ``version`` is ignored);
        answers the stored profile."""
        for attempt in range(_RETRIES):
            try:
                async with self._sessions() as session, session.begin():
                    latest = await session.scalar(
                        select(func.max(CalibrationProfileRow.version)).where(
                            CalibrationProfileRow.name == profile.name
                        )
                    )
                    row = _to_row(profile, int(latest or 0) + 1)
                    session.add(row)
                return _from_row(row)
            except IntegrityError:
                if attempt == _RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    @outage_as_unavailable
    async def get(self, name: str, version: int | None = None) -> CalibrationProfile | None:
        """The profile ``name`` at ``version`` (``None``: its newest)."""
        query = select(CalibrationProfileRow).where(CalibrationProfileRow.name == name)
        if version is not None:
            query = query.where(CalibrationProfileRow.version == version)
        query = query.order_by(CalibrationProfileRow.version.desc()).limit(1)
        async with self._sessions() as session:
            row = await session.scalar(query)
        return None if row is None else _from_row(row)

    @outage_as_unavailable
    async def latest(self) -> list[CalibrationProfile]:
        """The newest version of every profile, by name."""
        newest = (
            select(CalibrationProfileRow.name, func.max(CalibrationProfileRow.version).label("v"))
            .group_by(CalibrationProfileRow.name)
            .subquery()
        )
        query = (
            select(CalibrationProfileRow)
            .join(
                newest,
                (CalibrationProfileRow.name == newest.c.name)
                & (CalibrationProfileRow.version == newest.c.v),
            )
            .order_by(CalibrationProfileRow.name)
        )
        async with self._sessions() as session:
            rows = (await session.scalars(query)).all()
        return [_from_row(r) for r in rows]

    @outage_as_unavailable
    async def names(self) -> list[str]:
        async with self._sessions() as session:
            rows = await session.scalars(
                select(CalibrationProfileRow.name).distinct().order_by(CalibrationProfileRow.name)
            )
            return list(rows)


def _to_row(p: CalibrationProfile, version: int) -> CalibrationProfileRow:
    return CalibrationProfileRow(
        name=p.name,
        version=version,
        engine=p.engine,
        selection={
            "labels": list(p.selection.labels),
            "gpus": list(p.selection.gpus),
            "models": list(p.selection.models),
        },
        corrections=[
            {"family": c.family, "compute": c.compute, "memory": c.memory, "overhead": c.overhead}
            for c in p.corrections
        ],
        report={
            "error_before": p.error_before,
            "error_after": p.error_after,
            "error_held_out": p.error_held_out,
            "cells": [
                {
                    "family": c.family,
                    "metric": c.metric,
                    "n": c.n,
                    "before": c.before,
                    "after": c.after,
                    "held_out": c.held_out,
                }
                for c in p.cells
            ],
            "notes": list(p.notes),
        },
        rows=p.rows,
        files=p.files,
        created_at=p.created_at,
        key_id=p.key_id,
    )


def _from_row(row: CalibrationProfileRow) -> CalibrationProfile:
    label = f"{row.name} v{row.version}"
    report: dict[str, Any] = row.report
    engine: Engine = row.engine  # type: ignore[assignment]
    return CalibrationProfile(
        name=row.name,
        version=row.version,
        engine=engine,
        selection=Selection(
            labels=tuple(row.selection.get("labels", ())),
            gpus=tuple(row.selection.get("gpus", ())),
            models=tuple(row.selection.get("models", ())),
        ),
        corrections=tuple(
            Correction(
                label,
                row.engine,
                c["family"],
                float(c["compute"]),
                float(c["memory"]),
                float(c["overhead"]),
            )
            for c in row.corrections
        ),
        rows=row.rows,
        files=row.files,
        error_before=float(report["error_before"]),
        error_after=float(report["error_after"]),
        error_held_out=None
        if report.get("error_held_out") is None
        else float(report["error_held_out"]),
        cells=tuple(
            ErrorCell(
                c["family"],
                c["metric"],
                int(c["n"]),
                float(c["before"]),
                float(c["after"]),
                None if c["held_out"] is None else float(c["held_out"]),
            )
            for c in report.get("cells", ())
        ),
        notes=tuple(report.get("notes", ())),
        created_at=row.created_at,
        key_id=row.key_id,
    )
