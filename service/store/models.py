"""ORM rows. They never leave ``service/store``: repositories convert them to domain values.

The ``gpus`` columns are built from the ``GpuSpec`` fields (``service/domain/catalog.py``); the
migration test checks that the migrations create exactly this schema."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from msgspec import Meta
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator, TypeEngine

from service.domain.catalog import GpuSpec
from service.domain.vocabulary import PRICE_KIND_NAMES

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC timestamps on every backend (SQLite stores no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: catalog timestamps must carry a zone")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected datetime, got {type(value).__name__}")
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
BigIntId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def spec_column(name: str, hint: Any) -> Column[Any]:
    """The column of one ``GpuSpec`` field: its type from the annotation (``str`` with a
    ``max_length`` -> ``VARCHAR(n)``, ``bool``, ``int``, ``float``, ``tuple[str, ...]`` ->
    JSON), NULL allowed exactly when the field is optional. A type without a mapping is an
    error naming the field, at import, so a new kind of field cannot reach the database
    unmapped."""
    base, nullable = hint, False
    if get_origin(base) in (Union, UnionType):
        members = [a for a in get_args(base) if a is not type(None)]
        nullable = len(members) < len(get_args(base))
        if len(members) != 1:
            raise TypeError(f"GpuSpec.{name}: no column type for {hint!r}")
        base = members[0]
    max_length = None
    if get_origin(base) is Annotated:
        base, *extras = get_args(base)
        max_length = next((m.max_length for m in extras if isinstance(m, Meta)), None)
    column_type: TypeEngine[Any]
    if base is str:
        column_type = String(max_length) if max_length else Text()
    elif base is bool:
        column_type = Boolean()
    elif base is int:
        column_type = Integer()
    elif base is float:
        column_type = Float()
    elif get_origin(base) is tuple:
        column_type = JSON()
    else:
        raise TypeError(f"GpuSpec.{name}: no column type for {hint!r}; map it in store/models.py")
    if name == "id":
        return Column(name, column_type, primary_key=True)
    return Column(name, column_type, nullable=nullable)


def stored_spec_fields() -> tuple[str, ...]:
    """The ``GpuSpec`` fields a row stores: every field the constructor takes (``init=False``
    fields, like ``has_nvlink``, are derived from the others)."""
    return tuple(f.name for f in fields(GpuSpec) if f.init)


def _gpus_table() -> Table:
    hints = get_type_hints(GpuSpec, include_extras=True)
    return Table(
        "gpus",
        Base.metadata,
        *(spec_column(name, hints[name]) for name in stored_spec_fields()),
        Column("revision", BigInteger(), nullable=False),
        Column("updated_at", UtcDateTime(), nullable=False),
        CheckConstraint("memory_gb > 0", name="memory_positive"),
        CheckConstraint("memory_bandwidth_gbps > 0", name="bandwidth_positive"),
        CheckConstraint("nvlink_domain >= 1", name="nvlink_domain_positive"),
    )


class GpuRow(Base):
    """One GPU: a column per stored ``GpuSpec`` field (see ``spec_column``), plus the revision
    that last wrote it. Rows are converted to and from ``GpuSpec`` in ``store/rows.py``; the
    annotations below only type the attributes the repository reads by name."""

    __table__ = _gpus_table()

    id: Mapped[str]
    aliases: Mapped[list[str]]
    revision: Mapped[int]
    updated_at: Mapped[datetime]


class PricePointRow(Base):
    """One price observation. Append-only (database triggers refuse UPDATE, DELETE and,
    on Postgres, TRUNCATE)."""

    __tablename__ = "price_points"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    gpu_id: Mapped[str] = mapped_column(String(64), ForeignKey("gpus.id"))
    provider: Mapped[str] = mapped_column(String(64))
    region: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    usd: Mapped[float] = mapped_column(Float)
    instance_type: Mapped[str] = mapped_column(String(128))
    gpus_per_instance: Mapped[int] = mapped_column(Integer)
    observed_at: Mapped[datetime] = mapped_column(UtcDateTime())
    source: Mapped[str] = mapped_column(Text)
    ingested_at: Mapped[datetime] = mapped_column(UtcDateTime())
    revision: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        UniqueConstraint(
            "gpu_id",
            "provider",
            "region",
            "kind",
            "instance_type",
            "observed_at",
            name="uq_price_points_observation",
        ),
        CheckConstraint("usd > 0", name="usd_positive"),
        CheckConstraint("gpus_per_instance >= 1", name="gpus_per_instance_positive"),
        CheckConstraint(
            f"kind IN ({', '.join(repr(kind) for kind in PRICE_KIND_NAMES)})", name="kind_known"
        ),
        Index("ix_price_points_gpu_observed", "gpu_id", "observed_at", "id"),
    )


class PriceGapRow(Base):
    """Why the catalog holds no price of one kind for one GPU (``domain.catalog.PriceGap``),
    seeded from ``service/data/purchase_gaps.csv``; ``revision`` is the catalog write that
    stored it."""

    __tablename__ = "price_gaps"

    gpu_id: Mapped[str] = mapped_column(String(64), ForeignKey("gpus.id"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    reason: Mapped[str] = mapped_column(Text)
    revision: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        CheckConstraint(
            f"kind IN ({', '.join(repr(kind) for kind in PRICE_KIND_NAMES)})", name="kind_known"
        ),
    )


class CatalogStateRow(Base):
    """The single row holding the catalog revision (bumped with every GPU or price write)."""

    __tablename__ = "catalog_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())

    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)


class PriceImportRow(Base):
    """One import of a provider's price catalog file (``gpuplan catalog import --format``,
    ``POST /v1/prices/import``): the file's content hash and the ``observed_at`` its rows were
    given. A later import of the same content without a date reuses that ``observed_at``, so
    it inserts nothing; an import with a new date appends history."""

    __tablename__ = "price_imports"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    format: Mapped[str] = mapped_column(String(16))
    provider: Mapped[str] = mapped_column(String(64))
    content_sha256: Mapped[str] = mapped_column(String(64))
    observed_at: Mapped[datetime] = mapped_column(UtcDateTime())
    imported_at: Mapped[datetime] = mapped_column(UtcDateTime())
    rows: Mapped[int] = mapped_column(Integer)
    observations: Mapped[int] = mapped_column(Integer)
    inserted: Mapped[int] = mapped_column(Integer)
    revision: Mapped[int] = mapped_column(BigInteger)
    source: Mapped[str] = mapped_column(Text)

    __table_args__ = (
        Index("ix_price_imports_content", "format", "provider", "content_sha256", "observed_at"),
    )


class BenchmarkImportRow(Base):
    """One imported benchmark result file (``POST /v1/benchmarks``, ``gpuplan benchmarks
    import``). Append-only; ``content_sha256`` is unique, so a file is imported once."""

    __tablename__ = "benchmark_imports"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    content_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    format: Mapped[str] = mapped_column(String(16))
    filename: Mapped[str | None] = mapped_column(String(255), nullable=True)
    labels: Mapped[list[str]] = mapped_column(JSON)
    key_id: Mapped[str] = mapped_column(String(32))
    imported_at: Mapped[datetime] = mapped_column(UtcDateTime())
    runs: Mapped[int] = mapped_column(Integer)
    measurements: Mapped[int] = mapped_column(Integer)
    context: Mapped[dict[str, Any]] = mapped_column(JSON)


class BenchmarkMeasurementRow(Base):
    """One measured number of an imported file (``domain.benchmarks.Measurement``)."""

    __tablename__ = "benchmark_measurements"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    import_id: Mapped[int] = mapped_column(BigIntId, ForeignKey("benchmark_imports.id"))
    run: Mapped[int] = mapped_column(Integer)
    gpu: Mapped[str] = mapped_column(String(64))
    cards: Mapped[int] = mapped_column(Integer)
    tensor_parallel: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(128))
    precision: Mapped[str] = mapped_column(String(8))
    kv_precision: Mapped[str] = mapped_column(String(8))
    engine: Mapped[str] = mapped_column(String(16))
    engine_version: Mapped[str] = mapped_column(String(32))
    prompt_tokens: Mapped[float] = mapped_column(Float)
    output_tokens: Mapped[float] = mapped_column(Float)
    load: Mapped[str] = mapped_column(String(16))
    load_value: Mapped[float] = mapped_column(Float)
    metric: Mapped[str] = mapped_column(String(32))
    stat: Mapped[str] = mapped_column(String(8))
    value: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        CheckConstraint("value > 0", name="value_positive"),
        Index("ix_benchmark_measurements_import", "import_id"),
        Index("ix_benchmark_measurements_engine_gpu", "engine", "gpu"),
    )


class CalibrationProfileRow(Base):
    """One version of a named calibration profile (``POST /v1/calibrations``). Append-only:
    a new fit under the same name is a new version."""

    __tablename__ = "calibration_profiles"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(64))
    version: Mapped[int] = mapped_column(Integer)
    engine: Mapped[str] = mapped_column(String(16))
    selection: Mapped[dict[str, Any]] = mapped_column(JSON)
    corrections: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    report: Mapped[dict[str, Any]] = mapped_column(JSON)
    rows: Mapped[int] = mapped_column(Integer)
    files: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    key_id: Mapped[str] = mapped_column(String(32))

    __table_args__ = (
        UniqueConstraint("name", "version", name="uq_calibration_profiles_name_version"),
    )
