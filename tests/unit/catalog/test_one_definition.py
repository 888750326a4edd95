"""Each catalog concept is defined once: the wire types, the table and the CSV columns are
derived from ``GpuSpec``, and the price kinds from the vocabulary. These tests pin the
derivation, so a field added to the domain reaches every form (CONTRIBUTING.md)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

import msgspec
import pytest
import sqlalchemy as sa
from msgspec import Meta

from service.api.schemas.catalog import GpuOut, GpuSpecIn
from service.api.schemas.common import WireIn, WireOut, with_fields_of
from service.domain.catalog import GpuSpec, price_kind_for
from service.domain.errors import InvalidInput
from service.domain.vocabulary import PRICE_KIND_NAMES, PRICING_CHOICES, one_of
from service.store.csv_format import GPU_COLUMNS, bundled_text, parse_gpus_csv
from service.store.models import GpuRow, PricePointRow
from service.store.rows import gpu_from_row, gpu_to_row_values
from service.usecases.catalog import GpuListing
from tests.support.bodies import MINIMAL_GPU_SPEC

ALL_FIELDS = [f.name for f in dataclasses.fields(GpuSpec)]
STORED = [f.name for f in dataclasses.fields(GpuSpec) if f.init]
SPEC = MINIMAL_GPU_SPEC


def test_every_form_has_the_domain_fields_in_the_domain_order() -> None:
    assert [f.name for f in msgspec.structs.fields(GpuSpecIn)] == [n for n in STORED if n != "id"]
    assert [f.name for f in msgspec.structs.fields(GpuOut)] == [*ALL_FIELDS, "on_demand_prices"]
    assert [c.name for c in GpuRow.__table__.columns] == [*STORED, "revision", "updated_at"]
    assert list(GPU_COLUMNS) == STORED
    assert "has_nvlink" in ALL_FIELDS and "has_nvlink" not in STORED  # derived, shown only


def test_optional_fields_are_nullable_columns_and_required_ones_are_not() -> None:
    columns = GpuRow.__table__.columns
    assert columns["fp8_tflops"].nullable and columns["tdp_w"].nullable
    assert not columns["memory_gb"].nullable and not columns["aliases"].nullable
    vendor, name = columns["vendor"].type, columns["name"].type
    assert isinstance(vendor, sa.String) and isinstance(name, sa.String)
    assert vendor.length == 64 and name.length == 128


def test_the_domain_limits_are_what_the_request_body_enforces() -> None:
    ok = msgspec.convert(SPEC, GpuSpecIn)
    assert ok.to_domain("x").interconnect == "PCIe"  # the domain's default
    for field, bad in (("memory_gb", 0), ("vendor", "v" * 65), ("launch_year", 1900)):
        with pytest.raises(msgspec.ValidationError, match=f"\\$.{field}"):
            msgspec.convert({**SPEC, field: bad}, GpuSpecIn)
    with pytest.raises(msgspec.ValidationError, match="unknown field `has_nvlink`"):
        msgspec.convert({**SPEC, "has_nvlink": True}, GpuSpecIn)


def test_the_domain_limits_are_what_the_csv_parser_enforces() -> None:
    header = ",".join(GPU_COLUMNS)
    good = dict.fromkeys(GPU_COLUMNS, "") | {k: str(v) for k, v in SPEC.items()} | {"id": "x"}
    line = ",".join(good[c] for c in GPU_COLUMNS)
    assert parse_gpus_csv(f"{header}\n{line}\n")[0].nvlink_domain == 1  # empty cell: default
    bad = ",".join((good | {"memory_gb": "0"})[c] for c in GPU_COLUMNS)
    with pytest.raises(InvalidInput) as caught:
        parse_gpus_csv(f"{header}\n{bad}\n")
    assert caught.value.field == "memory_gb" and "line 2" in caught.value.message


def test_a_spec_survives_the_row_and_the_response() -> None:
    for gpu in parse_gpus_csv(bundled_text("gpus.csv")):
        values = gpu_to_row_values(gpu, revision=1, updated_at=datetime.now(UTC))
        assert gpu_from_row(GpuRow(**values)) == gpu
        shown = msgspec.to_builtins(GpuOut.from_listing(GpuListing(gpu, {})))
        assert {k: shown[k] for k in ALL_FIELDS} == msgspec.to_builtins(dataclasses.asdict(gpu))


def test_with_fields_of_derives_a_new_field_with_its_limits_and_default() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Thing:
        id: str
        size_gb: Annotated[float, Meta(gt=0, description="Size, GB.")]
        colour: Annotated[str, Meta(max_length=8)] | None = None

    @with_fields_of(Thing, omit=("id",))
    class ThingIn(WireIn, kw_only=True):
        """A thing."""

    @with_fields_of(Thing, output=True)
    class ThingOut(WireOut, kw_only=True):
        extra: int

    schema = msgspec.json.schema(ThingIn)["$defs"]["ThingIn"]
    assert schema["required"] == ["size_gb"]
    assert schema["properties"]["size_gb"]["exclusiveMinimum"] == 0
    assert ThingIn.__doc__ == "A thing."
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"size_gb": 1, "colour": "far too long"}, ThingIn)
    out = msgspec.json.schema(ThingOut)["$defs"]["ThingOut"]
    assert out["required"] == ["id", "size_gb", "colour", "extra"]
    assert "exclusiveMinimum" not in out["properties"]["size_gb"]


def test_price_kinds_are_the_vocabulary_everywhere() -> None:
    table = PricePointRow.__table__
    assert isinstance(table, sa.Table)
    checks = {str(c.sqltext) for c in table.constraints if isinstance(c, sa.CheckConstraint)}
    assert f"kind IN ({', '.join(repr(k) for k in PRICE_KIND_NAMES)})" in checks
    assert {price_kind_for(choice) for choice in PRICING_CHOICES} == set(PRICE_KIND_NAMES)
    assert price_kind_for("owned") == "purchase"
    assert one_of(PRICE_KIND_NAMES, "spot", "price kind") == "spot"
    with pytest.raises(ValueError, match="unknown price kind 'hourly'"):
        one_of(PRICE_KIND_NAMES, "hourly", "price kind")


def _max_lengths(struct: type[msgspec.Struct]) -> dict[str, int | None]:
    """Each string property's ``maxLength`` in the JSON schema msgspec derives for ``struct``."""
    schema = msgspec.json.schema(struct)
    props = schema["$defs"][struct.__name__]["properties"]
    return {
        name: prop.get("maxLength") or _pattern_length(prop.get("pattern", ""))
        for name, prop in props.items()
        if prop.get("type") == "string" and "format" not in prop
    }


def _pattern_length(pattern: str) -> int | None:
    """The longest string a slug pattern ``^[...][...]{0,n}$`` matches (``n + 1``)."""
    found = re.fullmatch(r"\^\[[^\]]+\]\[[^\]]+\]\{0,(\d+)\}\$", pattern)
    return int(found.group(1)) + 1 if found else None


def _column_lengths(table: sa.FromClause) -> dict[str, int | None]:
    return {
        c.name: getattr(c.type, "length", None)
        for c in table.columns
        if isinstance(c.type, sa.String | sa.Text)
    }


def test_price_observation_lengths_fit_the_columns_exactly() -> None:
    """A string the body accepts fits its column (Postgres would refuse it, SQLite store it)
    and a text column holds any string the body accepts."""
    from service.api.schemas.catalog import PriceObservationIn

    body = _max_lengths(PriceObservationIn)
    columns = _column_lengths(PricePointRow.__table__)
    wire_to_column = {"gpu": "gpu_id"}
    for name, limit in body.items():
        column = columns[wire_to_column.get(name, name)]
        assert limit is not None, name
        assert column is None or column == limit, (name, limit, column)


def test_gpu_spec_lengths_fit_the_columns_exactly() -> None:
    body = _max_lengths(GpuSpecIn)
    columns = _column_lengths(GpuRow.__table__)
    for name, limit in body.items():
        if name in columns:
            assert columns[name] is None or columns[name] == limit, (name, limit, columns[name])


def test_price_csv_rows_get_the_limits_of_the_request_body() -> None:
    from service.store.csv_format import parse_prices_csv

    header = "gpu_id,provider,region,kind,usd,instance_type,gpus_per_instance,observed_at,source\n"
    for cells, column in [
        ("l4,p,r,spot,-1,i,1,2026-01-01,s", "usd"),
        ("l4,p,r,spot,1e8,i,1,2026-01-01,s", "usd"),
        ("l4,p,r,spot,1,i,2000,2026-01-01,s", "gpus_per_instance"),
        ("l4,p," + "r" * 65 + ",spot,1,i,1,2026-01-01,s", "region"),
        ("l4,p,r,spot,1," + "i" * 129 + ",1,2026-01-01,s", "instance_type"),
        ("l4,p,r,spot,1,i,1,2026-01-01," + "s" * 2001, "source"),
        ("l4,P Q,r,spot,1,i,1,2026-01-01,s", "provider"),
    ]:
        with pytest.raises(InvalidInput) as caught:
            parse_prices_csv(header + cells + "\n")
        assert caught.value.field == column, cells
        assert caught.value.message.startswith(f"prices.csv line 2: {column}: ")
