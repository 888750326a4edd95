"""``gpuplan`` command line: serve the API, migrate, manage the catalog, plan and estimate.

Settings are read once here (``GPUPLAN_*``); a bad value stops the command with the variable's
name and why, before anything starts.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click

from service import __version__
from service.cli_common import error_text, fail, open_repository, run
from service.native_stdout import divert_native_stdout
from service.settings import Settings, SettingsError, load_settings, redact_url


def _settings() -> Settings:
    try:
        return load_settings()
    except SettingsError as exc:
        fail(f"configuration error: {exc}", 2)


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Settings come from GPUPLAN_* environment variables; see README.md.",
)
@click.version_option(__version__, prog_name="gpuplan")
def main() -> None:
    """gpuplan: the cheapest GPU fleet for an LLM workload, its latency and cost.

    \b
    Examples:
      gpuplan serve --port 8000          # HTTP API on the embedded catalog
      gpuplan migrate                    # apply database migrations
      gpuplan catalog import prices.csv  # ingest price observations
    """


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Worker processes (each with its own catalog snapshot and solver pool).",
)
@click.option(
    "--graceful-timeout",
    default=20,
    show_default=True,
    type=click.IntRange(1, 600),
    help="Seconds to finish in-flight requests after SIGTERM before closing.",
)
def serve(host: str, port: int, workers: int, graceful_timeout: int) -> None:
    """Run the HTTP API (uvicorn with uvloop/httptools; graceful shutdown on SIGTERM).

    \b
    Examples:
      gpuplan serve
      gpuplan serve --host 0.0.0.0 --port 8080 --workers 2
      GPUPLAN_DATABASE_URL=postgresql+asyncpg://u:p@db/gpuplan gpuplan serve
    """
    import uvicorn

    from service.observability.logging import configure_logging

    settings = _settings()
    configure_logging(settings.log_level, settings.log_format)
    _preflight_schema(settings)
    click.echo(
        f"gpuplan {__version__} on http://{host}:{port} "
        f"(database: {redact_url(settings.database_url)}, cache: {settings.cache_backend}); "
        f"docs at http://{host}:{port}/docs",
        err=True,
    )
    uvicorn.run(
        "service.app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        lifespan="on",
        log_config=None,
        access_log=False,
        server_header=False,
        # Client addresses are the TCP peer's; X-Forwarded-For is read by the write rate limit
        # only from GPUPLAN_TRUSTED_PROXIES (uvicorn would otherwise trust it from 127.0.0.1).
        proxy_headers=False,
        timeout_graceful_shutdown=graceful_timeout,
        timeout_keep_alive=5,
    )


def _preflight_schema(settings: Settings) -> None:
    """Stop with one clear line when Postgres answers but its schema is behind this build
    (an unreachable database is not fatal: the server starts and reports itself unready)."""
    if settings.database_backend != "postgresql":
        return
    from service.store.database import create_engine
    from service.store.migrate import current_revision, head_revision

    async def at() -> str | None:
        engine = create_engine(settings.database_url, timeout_s=settings.database_timeout_s)
        try:
            return await current_revision(engine)
        finally:
            await engine.dispose()

    try:
        revision = run(at())
    except Exception:  # noqa: BLE001 - unreachable now; the server retries on its own
        return
    if revision != head_revision():
        fail(
            f"database schema is at {revision or 'nothing'}, this build needs "
            f"{head_revision()}: run `gpuplan migrate` first",
            3,
        )


@main.command()
@click.option("--to", "target", default="head", show_default=True, help="Target revision.")
def migrate(target: str) -> None:
    """Apply database migrations: the schema, then the bundled catalog (reference GPUs and prices,
    the SkyPilot offer snapshot and later seed data), each seed migration one catalog revision.

    \b
    Examples:
      gpuplan migrate
      GPUPLAN_DATABASE_URL=postgresql+asyncpg://u:p@db/gpuplan gpuplan migrate
    """
    from service.store.database import create_engine
    from service.store.grants import grant_service_role
    from service.store.migrate import current_revision, upgrade

    settings = _settings()

    async def go() -> str | None:
        engine = create_engine(settings.database_url, timeout_s=settings.database_timeout_s)
        try:
            await upgrade(engine, target)
            if settings.service_role and settings.database_backend == "postgresql":
                await grant_service_role(engine, settings.service_role)
            return await current_revision(engine)
        finally:
            await engine.dispose()

    try:
        at = run(go())
    except Exception as exc:  # noqa: BLE001 - one clear line instead of a driver traceback
        fail(error_text(exc))
    click.echo(f"database {redact_url(settings.database_url)} is at migration {at}")
    if settings.service_role and settings.database_backend == "postgresql":
        click.echo(f"role {settings.service_role} granted the service's privileges only")


@main.group()
def catalog() -> None:
    """Import and export the price catalog."""


@catalog.command("import")
@click.argument("path_or_url")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["gpuplan", "skypilot"]),
    default="gpuplan",
    show_default=True,
    help="gpuplan: our prices.csv columns. skypilot: a SkyPilot catalog vms.csv of one cloud.",
)
@click.option(
    "--cloud",
    default=None,
    help="skypilot: the cloud the file prices (aws, azure, gcp, lambda, runpod); "
    "default: the folder it is in (.../aws/vms.csv).",
)
@click.option(
    "--observed-at",
    default=None,
    help="skypilot: when the prices were read (ISO 8601, e.g. 2026-12-01T06:00:00Z). Default: "
    "now, or the date an earlier import of the same file was given (so it inserts nothing).",
)
@click.option("--source", default=None, help="skypilot: provenance text for every observation.")
def catalog_import(
    path_or_url: str, fmt: str, cloud: str | None, observed_at: str | None, source: str | None
) -> None:
    """Ingest price observations from PATH_OR_URL (a file, or an http(s) URL).

    \b
    --format gpuplan (default), same rules as POST /v1/prices. Columns:
      gpu_id,provider,region,kind,usd,instance_type,gpus_per_instance,observed_at,source
    GPU ids or aliases are accepted.

    \b
    --format skypilot, same rules as POST /v1/prices/import: one cloud's SkyPilot catalog
    vms.csv (catalogs/v7/<cloud>/vms.csv). Zones are merged into one offer per region (lowest
    price), GCP host and accelerator prices are added, spot prices kept as kind spot; every row
    left out or adjusted is counted by reason in the table printed.

    The whole file is one all-or-nothing transaction (a bad row or an outage writes nothing),
    idempotent on (gpu, provider, region, kind, instance type, observed_at): re-importing a
    file inserts nothing new.

    \b
    Examples:
      gpuplan catalog import new-prices.csv
      gpuplan catalog export > all.csv && gpuplan catalog import all.csv   # inserts 0
      gpuplan catalog import --format skypilot service/data/skypilot/aws/vms.csv
      gpuplan catalog import --format skypilot --cloud lambda --observed-at 2026-12-01T06:00:00Z \\
        https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v7/lambda/vms.csv
    """
    if fmt == "skypilot":
        _import_catalog_file(path_or_url, cloud, observed_at, source)
        return
    from service.domain.catalog import IngestResult
    from service.usecases.catalog_io import import_prices

    settings = _settings()
    text = _read_import_text(path_or_url)
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show:
            click.echo(f"\r  {done}/{total} observations", nl=False, err=True)

    async def go() -> IngestResult:
        async with open_repository(settings) as repo:
            return await import_prices(repo, text, datetime.now(UTC), progress=progress)

    try:
        result = run(go())
    except Exception as exc:  # noqa: BLE001 - reported as a one-line error, not a traceback
        if show:
            click.echo("", err=True)
        fail(error_text(exc))
    if show:
        click.echo("", err=True)
    click.echo(
        f"inserted {result.inserted}, already present {result.already_present}; "
        f"catalog revision {result.revision}"
    )


def _read_import_text(path_or_url: str) -> str:
    from service.cli_import import read_text

    try:
        return read_text(path_or_url)
    except (OSError, ValueError) as exc:
        fail(f"cannot read {path_or_url}: {exc}")


def _import_catalog_file(
    path_or_url: str, cloud: str | None, observed_at: str | None, source: str | None
) -> None:
    from service.cli_import import cloud_from_location, summary
    from service.domain.price_import import PriceImportResult
    from service.store.csv_format import parse_timestamp
    from service.usecases.price_import import CLOUDS, import_price_catalog

    settings = _settings()
    cloud = cloud or cloud_from_location(path_or_url, CLOUDS)
    if cloud is None:
        fail(f"name the cloud the file prices with --cloud ({', '.join(CLOUDS)})", 2)
    moment = None
    if observed_at is not None:
        try:
            moment = parse_timestamp(observed_at)
        except ValueError as exc:
            fail(f"--observed-at: {exc}", 2)
    text = _read_import_text(path_or_url)

    async def go() -> PriceImportResult:
        async with open_repository(settings) as repo:
            return await import_price_catalog(
                repo,
                text,
                fmt="skypilot",
                cloud=cloud,
                observed_at=moment,
                source=source,
                now=datetime.now(UTC),
            )

    try:
        result = run(go())
    except Exception as exc:  # noqa: BLE001 - reported as a one-line error, not a traceback
        fail(error_text(exc))
    click.echo(summary(result, path_or_url))


@catalog.command("export")
@click.option("--gpu", default=None, help="Only this GPU (id or alias).")
def catalog_export(gpu: str | None) -> None:
    """Write the whole price history as CSV to stdout (the import format).

    \b
    Examples:
      gpuplan catalog export > prices.csv
      gpuplan catalog export --gpu H100
    """
    from service.usecases.catalog_io import export_prices

    settings = _settings()

    async def go() -> str:
        async with open_repository(settings) as repo:
            return await export_prices(repo, gpu)

    try:
        text = run(go())
    except Exception as exc:  # noqa: BLE001 - reported as a one-line error, not a traceback
        fail(error_text(exc))
    click.echo(text, nl=False)


def _register_planning() -> None:
    from service.cli_benchmarks import register as register_benchmarks
    from service.cli_benchmarks import register_calibrate
    from service.cli_planning import register

    register(main, _settings)
    register_benchmarks(main, _settings)
    register_calibrate(main, _settings)


_register_planning()


def entry() -> None:
    """The ``gpuplan`` command: native libraries' writes kept off standard output (see
    :mod:`service.native_stdout`), then :func:`main`."""
    divert_native_stdout()
    main()


if __name__ == "__main__":
    entry()
