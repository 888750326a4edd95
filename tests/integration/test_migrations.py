"""Migrations are code and are tested: empty database -> head, no drift, invariants enforced."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, TextClause, bindparam, func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from service.store.csv_format import (
    bundled_text,
    parse_gpus_csv,
    parse_prices_csv,
    parse_purchase_gaps_csv,
)
from service.store.database import create_engine
from service.store.migrate import alembic_config, current_revision, head_revision, upgrade
from service.store.migrations.backfill import (
    append_bundled_prices,
    drop_priced_gaps,
    fill_gpu_column,
    store_bundled_gaps,
)
from service.store.models import Base
from service.store.skypilot_seed import FIRST_SNAPSHOT, V9_AWS_FILES, V9_FILES, bundled_imports
from tests.support.seed import hand_entered_count, seeded_gpu_count, seeded_price_count

pytestmark = pytest.mark.integration


async def revision_and_prices(engine: AsyncEngine) -> tuple[int, int]:
    """The catalog revision and the number of stored price observations."""
    async with engine.connect() as connection:
        revision = await connection.scalar(text("SELECT revision FROM catalog_state"))
        count = await connection.scalar(text("SELECT count(*) FROM price_points"))
    return int(revision), int(count)


async def import_step(
    engine: AsyncEngine, start: str, step: str, source_like: str
) -> tuple[tuple[int, int], tuple[int, int], list[tuple[str, int, int]]]:
    """Upgrade to ``start``, then to ``step``: the (revision, prices) before and after, and the
    imports recorded for the sources ``LIKE source_like`` (provider, inserted, revision)."""
    await upgrade(engine, start)
    before = await revision_and_prices(engine)
    await upgrade(engine, step)
    after = await revision_and_prices(engine)
    async with engine.connect() as connection:
        recorded = await connection.execute(
            text("SELECT provider, inserted, revision FROM price_imports WHERE source LIKE :s"),
            {"s": source_like},
        )
        return before, after, [(str(a), int(b), int(c)) for a, b, c in recorded.all()]


def _drift(connection: Connection) -> list[object]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def test_upgrade_empty_database_to_head_without_drift(empty_database_url: str) -> None:
    engine = create_engine(empty_database_url)
    try:
        assert await current_revision(engine) is None
        await upgrade(engine)
        assert await current_revision(engine) == head_revision()
        async with engine.connect() as connection:
            assert await connection.run_sync(_drift) == []
            revision = await connection.scalar(text("SELECT revision FROM catalog_state"))
            newest_gpu = await connection.scalar(text("SELECT max(revision) FROM gpus"))
            price_revisions = (
                await connection.execute(text("SELECT DISTINCT revision FROM price_points"))
            ).all()
            gpus = await connection.scalar(text("SELECT count(*) FROM gpus"))
            prices = await connection.scalar(text("SELECT count(*) FROM price_points"))
            v9_revisions = (
                await connection.execute(
                    text(
                        "SELECT revision FROM price_imports WHERE source LIKE '%/catalogs/v9/%' "
                        "ORDER BY revision"
                    )
                )
            ).scalars()
            lambda_v9, aws_v9 = list(v9_revisions)
        assert (gpus, prices) == (seeded_gpu_count(), seeded_price_count())
        assert prices > 3000  # the SkyPilot snapshot (0005) on top of prices.csv (0002)
        # The seed is revision 1, the SkyPilot snapshot one more catalog write, the v9 Lambda
        # file (0013) a later one and the v9 AWS file (0015) a later one still; a migration
        # that fills a new spec field (backfill.fill_gpu_column) is one more catalog write each.
        assert 2 < lambda_v9 < aws_v9
        assert sorted(r for (r,) in price_revisions) == [1, 2, lambda_v9, aws_v9]
        assert 1 <= newest_gpu <= revision and revision >= 2
        await upgrade(engine)  # a second run is a no-op
        assert await current_revision(engine) == head_revision()
    finally:
        await engine.dispose()


async def test_price_points_are_append_only(empty_database_url: str) -> None:
    engine = create_engine(empty_database_url)
    try:
        await upgrade(engine)
        statements = ["UPDATE price_points SET usd = 1", "DELETE FROM price_points"]
        if engine.dialect.name == "postgresql":
            # TRUNCATE fires no row triggers: a statement-level trigger refuses it (0003).
            statements.append("TRUNCATE price_points")
            statements.append("TRUNCATE price_points CASCADE")
        for statement in statements:
            with pytest.raises(Exception, match="append-only"):
                async with engine.begin() as connection:
                    await connection.execute(text(statement))
        async with engine.connect() as connection:
            count = await connection.scalar(text("SELECT count(*) FROM price_points"))
            assert count == seeded_price_count()
    finally:
        await engine.dispose()


HISTORY = ("benchmark_imports", "benchmark_measurements", "calibration_profiles")
"""The append-only tables of 0007 and 0008, which refuse TRUNCATE since 0012."""


def _one_row_each(connection: Connection) -> None:
    tables = Base.metadata.tables
    now = datetime(2026, 12, 1, tzinfo=UTC)
    import_id = connection.execute(
        insert(tables["benchmark_imports"]).returning(tables["benchmark_imports"].c.id),
        {"content_sha256": "0" * 64, "format": "vllm", "filename": None, "labels": [],
         "key_id": "k", "imported_at": now, "runs": 1, "measurements": 1, "context": {}},
    ).scalar_one()  # fmt: skip
    connection.execute(
        insert(tables["benchmark_measurements"]),
        {"import_id": import_id, "run": 0, "gpu": "l4", "cards": 1, "tensor_parallel": 1,
         "model": "m", "precision": "bf16", "kv_precision": "bf16", "engine": "vllm",
         "engine_version": "0.11.0", "prompt_tokens": 100.0, "output_tokens": 10.0,
         "load": "concurrency", "load_value": 1.0, "metric": "ttft_ms", "stat": "p50",
         "value": 1.0},
    )  # fmt: skip
    connection.execute(
        insert(tables["calibration_profiles"]),
        {"name": "p", "version": 1, "engine": "vllm", "selection": {}, "corrections": [],
         "report": {}, "rows": 1, "files": 1, "created_at": now, "key_id": "k"},
    )  # fmt: skip


def _refusals(table: str, postgres: bool) -> list[str]:
    statements = ["UPDATE {table} SET id = id", "DELETE FROM {table}"]
    if postgres:
        # TRUNCATE fires no row triggers: a statement-level trigger refuses it (0012). A plain
        # TRUNCATE of benchmark_imports is refused by the foreign key before any trigger.
        if table != "benchmark_imports":
            statements.append("TRUNCATE {table}")
        statements.append("TRUNCATE {table} CASCADE")
    return [statement.format(table=table) for statement in statements]


async def test_benchmark_and_calibration_history_is_append_only(empty_database_url: str) -> None:
    """Like price_points: row triggers refuse UPDATE and DELETE, and on Postgres each table's
    own statement trigger refuses TRUNCATE (CASCADE fires the named table's first)."""
    engine = create_engine(empty_database_url)
    postgres = engine.dialect.name == "postgresql"
    try:
        await upgrade(engine)
        async with engine.begin() as connection:
            await connection.run_sync(_one_row_each)
        for table in HISTORY:
            for statement in _refusals(table, postgres):
                with pytest.raises(Exception, match=f"{table} is append-only"):
                    async with engine.begin() as connection:
                        await connection.execute(text(statement))
        async with engine.connect() as connection:
            counts = [
                await connection.scalar(select(func.count()).select_from(Base.metadata.tables[t]))
                for t in HISTORY
            ]
        assert counts == [1, 1, 1]
    finally:
        await engine.dispose()


def _downgrade(connection: Connection, target: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.downgrade(config, target)


async def test_the_truncate_triggers_of_0012_come_and_go_with_it(empty_database_url: str) -> None:
    """Downgrading 0012 drops exactly its TRUNCATE triggers (price_points' of 0003 and the row
    triggers stay); upgrading again restores them. On SQLite 0012 changes nothing."""
    engine = create_engine(empty_database_url)
    postgres = engine.dialect.name == "postgresql"
    of_0003 = {"price_points_no_truncate"} if postgres else set()
    of_0012 = {f"{t}_no_truncate" for t in HISTORY} if postgres else set()

    async def truncate_triggers() -> set[str]:
        if not postgres:
            return set()
        async with engine.connect() as connection:
            names = await connection.scalars(
                text("SELECT tgname FROM pg_trigger WHERE tgname LIKE '%no_truncate'")
            )
            return set(names)

    try:
        await upgrade(engine)
        assert await truncate_triggers() == of_0003 | of_0012
        async with engine.begin() as connection:
            await connection.run_sync(_downgrade, "0011")
        assert await current_revision(engine) == "0011"
        assert await truncate_triggers() == of_0003
        if postgres:
            async with engine.begin() as connection:
                await connection.execute(text("TRUNCATE calibration_profiles"))
        async with engine.begin() as connection:
            await connection.run_sync(_one_row_each)
        with pytest.raises(Exception, match="calibration_profiles is append-only"):
            async with engine.begin() as connection:
                await connection.execute(text("DELETE FROM calibration_profiles"))
        await upgrade(engine)
        assert await current_revision(engine) == head_revision()
        assert await truncate_triggers() == of_0003 | of_0012
    finally:
        await engine.dispose()


def _fill_tdp(connection: Connection) -> None:
    with Operations.context(MigrationContext.configure(connection)):
        fill_gpu_column("tdp_w")


async def test_a_new_spec_column_is_filled_from_the_bundled_csv(empty_database_url: str) -> None:
    """What a migration adding a GpuSpec field does after ``add_column`` (CONTRIBUTING.md)."""
    engine = create_engine(empty_database_url)
    try:
        await upgrade(engine)
        async with engine.begin() as connection:
            before = await connection.scalar(text("SELECT revision FROM catalog_state"))
            await connection.execute(text("UPDATE gpus SET tdp_w = NULL"))
            await connection.run_sync(_fill_tdp)
        async with engine.connect() as connection:
            after = await connection.scalar(text("SELECT revision FROM catalog_state"))
            h100 = (
                await connection.execute(
                    text("SELECT tdp_w, revision FROM gpus WHERE id = 'h100-sxm'")
                )
            ).one()
            unset = await connection.scalar(text("SELECT count(*) FROM gpus WHERE tdp_w IS NULL"))
        assert after == before + 1
        assert tuple(h100) == (700.0, after)
        assert unset == 0  # every bundled GPU publishes its power
    finally:
        await engine.dispose()


# GPUs gpus.csv gained for the SkyPilot snapshot; those prices.csv has no row for can be taken
# out of a database seeded by 0002 (price_points is append-only, so a priced GPU cannot).
ADDED_FOR_SNAPSHOT = ("a40", "rtx-a4500", "rtx-a5000", "gh200", "p4")
SNAPSHOT_GPUS = tuple(
    g
    for g in ADDED_FOR_SNAPSHOT
    if g not in {p.gpu_id for p in parse_prices_csv(bundled_text("prices.csv"))}
)


async def test_the_snapshot_migration_adds_the_gpus_an_older_seed_lacks(
    empty_database_url: str,
) -> None:
    """A database seeded before the snapshot's GPUs were in gpus.csv gets them from 0005,
    with the revision of that write, and their offers; a re-run inserts nothing twice."""
    assert SNAPSHOT_GPUS, "every GPU added for the snapshot has a prices.csv row now"
    engine = create_engine(empty_database_url)
    ids = {"ids": list(SNAPSHOT_GPUS)}

    def among(sql: str) -> TextClause:
        return text(sql).bindparams(bindparam("ids", expanding=True))

    try:
        await upgrade(engine, "0004")
        async with engine.begin() as connection:
            await connection.execute(among("DELETE FROM gpus WHERE id IN :ids"), ids)
            before = await connection.scalar(text("SELECT revision FROM catalog_state"))
            assert await connection.scalar(text("SELECT count(*) FROM price_points")) == (
                hand_entered_count()
            )
        await upgrade(engine, "0005")
        async with engine.connect() as connection:
            after = await connection.scalar(text("SELECT revision FROM catalog_state"))
            added = (
                await connection.execute(
                    among("SELECT id, revision FROM gpus WHERE id IN :ids"), ids
                )
            ).all()
            priced = await connection.scalar(
                among("SELECT count(DISTINCT gpu_id) FROM price_points WHERE gpu_id IN :ids"), ids
            )
            imports = (
                await connection.execute(
                    text("SELECT provider, rows, inserted FROM price_imports ORDER BY provider")
                )
            ).all()
            prices = await connection.scalar(text("SELECT count(*) FROM price_points"))
        assert after == before + 1
        assert sorted(added) == sorted((g, after) for g in SNAPSHOT_GPUS)
        assert priced == len(SNAPSHOT_GPUS)
        assert [p for p, _, _ in imports] == ["aws", "azure", "gcp", "lambda", "runpod"]
        assert all(rows > 100 and inserted > 100 for _, rows, inserted in imports)
        assert prices == seeded_price_count(FIRST_SNAPSHOT)
    finally:
        await engine.dispose()


async def test_the_price_seed_migration_is_one_catalog_write_and_adds_nothing_twice(
    empty_database_url: str,
) -> None:
    """0006 brings the purchase and reserved rows of prices.csv to databases seeded before
    them; where they are stored already (0002 read the same file) it inserts nothing, and the
    catalog revision still moves on once, so cached plans are re-keyed."""
    engine = create_engine(empty_database_url)
    try:
        await upgrade(engine, "0005")
        async with engine.connect() as connection:
            before = await connection.scalar(text("SELECT revision FROM catalog_state"))
            count = await connection.scalar(text("SELECT count(*) FROM price_points"))
        await upgrade(engine, "0006")
        async with engine.connect() as connection:
            after = await connection.scalar(text("SELECT revision FROM catalog_state"))
            again = await connection.scalar(text("SELECT count(*) FROM price_points"))
            owned = await connection.scalar(
                text("SELECT count(DISTINCT gpu_id) FROM price_points WHERE kind = 'purchase'")
            )
        assert after == before + 1
        assert again == count == seeded_price_count(FIRST_SNAPSHOT)
        assert owned >= 15
    finally:
        await engine.dispose()


async def test_bringing_a_database_up_to_the_bundled_prices_writes_only_what_it_lacks(
    empty_database_url: str,
) -> None:
    """0009 (``append_bundled_prices``) appends the rows of prices.csv a database lacks as one
    catalog write; a database seeded from the same file by 0002 lacks none, so nothing is
    written and the revision stays (no cached plan is re-keyed for nothing)."""
    engine = create_engine(empty_database_url)
    header = "gpu_id,provider,region,kind,usd,instance_type,gpus_per_instance,observed_at,source\n"
    newer = (
        "l4,street,global,purchase,2400,card,1,2026-11-30T00:00:00Z,https://example.org (test)\n"
    )

    async def state() -> tuple[int, int]:
        return await revision_and_prices(engine)

    async def append(csv_text: str) -> int:
        async with engine.begin() as connection:
            return await connection.run_sync(
                lambda c: append_bundled_prices(c, datetime.now(UTC), chunk=10, text=csv_text)
            )

    try:
        await upgrade(engine, "0008")
        before = await state()
        await upgrade(engine, "0009")
        assert await state() == before
        assert before[1] == seeded_price_count(FIRST_SNAPSHOT)
        # a row the database lacks: stored once, carrying the one new revision
        assert await append(header + newer) == 1
        assert await state() == (before[0] + 1, before[1] + 1)
        assert await append(header + newer) == 0
        assert await state() == (before[0] + 1, before[1] + 1)
        async with engine.connect() as connection:
            stored = await connection.scalar(
                text("SELECT revision FROM price_points WHERE observed_at = :t").bindparams(
                    t=datetime(2026, 11, 30, tzinfo=UTC)
                )
            )
        assert stored == before[0] + 1
    finally:
        await engine.dispose()


async def test_the_gap_migration_stores_each_documented_reason_in_one_catalog_write(
    empty_database_url: str,
) -> None:
    """0011 stores the reasons of purchase_gaps.csv, for the GPUs the database holds, as one
    catalog write (plans that name those GPUs now say why, so they are re-keyed); running
    ``store_bundled_gaps`` again writes nothing and keeps the revision."""
    engine = create_engine(empty_database_url)
    gaps = parse_purchase_gaps_csv(bundled_text("purchase_gaps.csv"))

    async def state() -> tuple[int, list[tuple[str, str, str, int]]]:
        async with engine.connect() as connection:
            revision = await connection.scalar(text("SELECT revision FROM catalog_state"))
            rows = (
                await connection.execute(
                    text("SELECT gpu_id, kind, reason, revision FROM price_gaps ORDER BY gpu_id")
                )
            ).all()
        return int(revision), [tuple(r) for r in rows]

    try:
        await upgrade(engine, "0010")
        async with engine.connect() as connection:
            before = await connection.scalar(text("SELECT revision FROM catalog_state"))
        await upgrade(engine, "0011")
        revision, rows = await state()
        assert revision == before + 1
        assert rows == sorted((g.gpu_id, g.kind, g.reason, revision) for g in gaps)
        async with engine.begin() as connection:
            stored = await connection.run_sync(lambda c: store_bundled_gaps(c, datetime.now(UTC)))
        assert stored == 0
        assert await state() == (revision, rows)
    finally:
        await engine.dispose()


async def test_a_gap_a_seed_price_closes_is_deleted_in_one_catalog_write(
    empty_database_url: str,
) -> None:
    """0014 deletes the stored reason a GPU has no purchase price once the catalog holds one
    (here a reason an older seed stored for the A10, which prices.csv now prices), as one
    catalog write; the reasons of GPUs still without one stay, and a second run deletes
    nothing."""
    engine = create_engine(empty_database_url)

    async def state() -> tuple[int, set[str]]:
        async with engine.connect() as connection:
            revision = await connection.scalar(text("SELECT revision FROM catalog_state"))
            gaps = (await connection.execute(text("SELECT gpu_id FROM price_gaps"))).scalars()
            return int(revision), set(gaps)

    try:
        await upgrade(engine, "0013")
        async with engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO price_gaps (gpu_id, kind, reason, revision) "
                    "VALUES ('a10', 'purchase', 'no price found (older seed)', 1)"
                )
            )
        revision, gaps = await state()
        documented = {g.gpu_id for g in parse_purchase_gaps_csv(bundled_text("purchase_gaps.csv"))}
        assert gaps == documented | {"a10"} and "h200-nvl" in documented
        await upgrade(engine, "0014")
        assert await state() == (revision + 1, documented)
        async with engine.begin() as connection:
            assert await connection.run_sync(drop_priced_gaps) == 0
        assert await state() == (revision + 1, documented)
    finally:
        await engine.dispose()


async def test_the_v9_lambda_migration_makes_every_lambda_offer_current_in_one_write(
    empty_database_url: str,
) -> None:
    """0013 appends the v9 Lambda file as one catalog write and records it as an import: every
    Lambda on-demand offer's newest observation is then the v9 one (the v7 prices stay as
    history); a second run inserts nothing."""
    (v9_file,) = V9_FILES
    engine = create_engine(empty_database_url)

    try:
        before, after, recorded = await import_step(engine, "0012", "0013", "%/catalogs/v9/%")
        assert before[1] == seeded_price_count(FIRST_SNAPSHOT)
        async with engine.connect() as connection:
            lambda_rows = (
                await connection.execute(
                    text(
                        "SELECT gpu_id, region, instance_type, observed_at FROM price_points "
                        "WHERE provider = 'lambda' AND kind = 'on_demand'"
                    )
                )
            ).all()
        assert after == (before[0] + 1, seeded_price_count(FIRST_SNAPSHOT + V9_FILES))
        assert recorded == [("lambda", after[1] - before[1], after[0])]
        newest: dict[tuple[str, str, str], str] = {}
        for gpu, region, instance, observed in lambda_rows:
            day = str(observed)[:10]
            newest[(gpu, region, instance)] = max(day, newest.get((gpu, region, instance), day))
        assert newest and set(newest.values()) == {v9_file.observed_at.date().isoformat()}
        await upgrade(engine)
        assert (await revision_and_prices(engine))[1] == seeded_price_count()
    finally:
        await engine.dispose()


async def test_the_v9_aws_migration_makes_every_offer_of_its_file_current_in_one_write(
    empty_database_url: str,
) -> None:
    """0015 appends the GPU rows of AWS's v9 file as one catalog write and records it as an
    import: every AWS offer the file prices then has a newest observation of that date or later
    (a later dated row of prices.csv may be newer; the v7 prices stay as history), so no p5 is
    costed at its pre-June-2025 price any more; a second run inserts nothing."""
    (v9_file,) = V9_AWS_FILES
    (item,) = bundled_imports(
        {g.id: g for g in parse_gpus_csv(bundled_text("gpus.csv"))}, V9_AWS_FILES
    )
    in_file = {(p.gpu_id, p.region, p.kind, p.instance_type) for p in item.parsed.points}
    engine = create_engine(empty_database_url)

    try:
        before, after, recorded = await import_step(engine, "0014", "0015", "%/catalogs/v9/aws/%")
        async with engine.connect() as connection:
            aws_rows = (
                await connection.execute(
                    text(
                        "SELECT gpu_id, region, kind, instance_type, observed_at, usd, "
                        "gpus_per_instance FROM price_points WHERE provider = 'aws'"
                    )
                )
            ).all()
        assert after == (before[0] + 1, seeded_price_count())
        assert recorded == [("aws", after[1] - before[1], after[0])] and after[1] > before[1]
        newest: dict[tuple[str, str, str, str], tuple[str, float]] = {}
        for gpu, region, kind, instance, observed, usd, count in aws_rows:
            key, day = (gpu, region, kind, instance), str(observed)[:10]
            if key not in newest or day > newest[key][0]:
                newest[key] = (day, float(usd) * int(count))
        v9_day = v9_file.observed_at.date().isoformat()
        assert in_file and all(newest[key][0] >= v9_day for key in in_file)
        p5 = [
            usd
            for (_, _, kind, instance), (_, usd) in newest.items()
            if instance == "p5.48xlarge" and kind == "on_demand"
        ]
        assert p5 and max(p5) < 98.32
        await upgrade(engine)
        assert (await revision_and_prices(engine))[1] == seeded_price_count()
    finally:
        await engine.dispose()
