"""ORM rows. They never leave ``service/store``: repositories convert them to domain values."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

PRICING_KINDS = ("on_demand", "spot", "reserved_1y", "reserved_3y", "purchase")


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


class GpuRow(Base):
    __tablename__ = "gpus"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    vendor: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(128))
    architecture: Mapped[str] = mapped_column(String(128))
    launch_year: Mapped[int] = mapped_column(Integer)
    memory_gb: Mapped[float] = mapped_column(Float)
    memory_type: Mapped[str] = mapped_column(String(32))
    memory_bandwidth_gbps: Mapped[float] = mapped_column(Float)
    fp32_tflops: Mapped[float | None] = mapped_column(Float)
    tf32_tflops: Mapped[float | None] = mapped_column(Float)
    fp16_tflops: Mapped[float | None] = mapped_column(Float)
    fp8_tflops: Mapped[float | None] = mapped_column(Float)
    fp4_tflops: Mapped[float | None] = mapped_column(Float)
    int8_tops: Mapped[float | None] = mapped_column(Float)
    tdp_w: Mapped[float | None] = mapped_column(Float)
    interconnect: Mapped[str] = mapped_column(String(128))
    interconnect_bandwidth_gbps: Mapped[float] = mapped_column(Float)
    nvlink_domain: Mapped[int] = mapped_column(Integer)
    pcie_gen: Mapped[int] = mapped_column(Integer)
    form_factor: Mapped[str] = mapped_column(String(32))
    mig_instances: Mapped[int] = mapped_column(Integer)
    aliases: Mapped[list[str]] = mapped_column(JSON)
    sources: Mapped[list[str]] = mapped_column(JSON)
    revision: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())

    __table_args__ = (
        CheckConstraint("memory_gb > 0", name="memory_positive"),
        CheckConstraint("memory_bandwidth_gbps > 0", name="bandwidth_positive"),
        CheckConstraint("nvlink_domain >= 1", name="nvlink_domain_positive"),
    )


class PricePointRow(Base):
    """One price observation. Append-only (database triggers refuse UPDATE and DELETE)."""

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
            "kind IN ('on_demand', 'spot', 'reserved_1y', 'reserved_3y', 'purchase')",
            name="kind_known",
        ),
        Index("ix_price_points_gpu_observed", "gpu_id", "observed_at", "id"),
    )


class CatalogStateRow(Base):
    """The single row holding the catalog revision (bumped with every GPU or price write)."""

    __tablename__ = "catalog_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())

    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)
