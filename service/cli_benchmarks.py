"""``gpuplan benchmarks import FILE...`` and ``gpuplan benchmarks list``: a team's benchmark
result files into the configured database, with the same code ``POST /v1/benchmarks`` runs
(``usecases.benchmarks.import_benchmark``)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from service.cli_common import error_text, fail, open_engine, run
from service.domain.benchmarks import BENCHMARK_FORMATS, RunContext
from service.domain.vocabulary import ENGINES, KV_PRECISIONS, PRECISIONS, one_of

CLI_KEY_ID = "cli"
"""The provenance key id of files imported from the command line (no admin key involved)."""


def register(main: click.Group, settings_loader: Any) -> None:
    """Add the ``benchmarks`` group to the ``gpuplan`` command group."""

    @main.group()
    def benchmarks() -> None:
        """Import your own benchmark result files (for calibration profiles)."""

    @benchmarks.command("import")
    @click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
    @click.option(
        "--format",
        "fmt",
        type=click.Choice(BENCHMARK_FORMATS),
        default=None,
        help="Default: detected from the file.",
    )
    @click.option("--gpu", default=None, help="GPU id or alias that ran the benchmark.")
    @click.option(
        "--cards",
        type=click.IntRange(1, 4096),
        default=None,
        help="All cards of the run (default: --tensor-parallel).",
    )
    @click.option(
        "--tensor-parallel", type=click.IntRange(1, 72), default=None, help="Cards per replica."
    )
    @click.option(
        "--engine",
        type=click.Choice(ENGINES),
        default=None,
        help="Default: the client's backend when it names one.",
    )
    @click.option("--engine-version", default=None, help="Engine release, e.g. 0.11.0.")
    @click.option("--precision", type=click.Choice(PRECISIONS), default=None)
    @click.option("--kv-precision", type=click.Choice(KV_PRECISIONS), default=None)
    @click.option("--model", default=None, help="Model preset id or alias (default: the file's).")
    @click.option("--label", "labels", multiple=True, help="A label (repeat), e.g. team:search.")
    def benchmarks_import(
        files: tuple[str, ...], fmt: str | None, labels: tuple[str, ...], **context: Any
    ) -> None:
        """Import FILES (vllm bench serve --save-result JSON, SGLang bench_serving JSONL,
        GuideLLM report, genai-perf profile_export JSON, or CSV with the columns of
        service/data/serving_measurements.csv), same rules as POST /v1/benchmarks: what a
        file does not say comes from the options; each file is stored whole or not at all,
        and a file already imported is not stored again.

        \b
        Example:
          gpuplan benchmarks import results/*.json --gpu a100-sxm-80gb --tensor-parallel 1 \\
              --precision bf16 --engine-version 0.11.0 --label team:search
        """
        from service.store.benchmarks import BenchmarkRepository
        from service.store.repositories import CatalogRepository
        from service.usecases.benchmarks import import_benchmark

        settings = settings_loader()
        given = RunContext(**context)
        bodies = []
        for name in files:
            try:
                bodies.append((name, Path(name).read_bytes()))
            except OSError as exc:
                fail(f"cannot read {name}: {exc}")

        async def go() -> list[str]:
            lines = []
            async with open_engine(settings) as engine:
                snapshot = await CatalogRepository(engine).snapshot()
                repo = BenchmarkRepository(engine)
                for name, body in bodies:
                    try:
                        outcome = await import_benchmark(
                            repo, snapshot, body, fmt=fmt, context=given,  # type: ignore[arg-type]
                            labels=labels, filename=Path(name).name, key_id=CLI_KEY_ID,
                            now=datetime.now(UTC),
                        )  # fmt: skip
                    except Exception as exc:  # noqa: BLE001 - one line per file, then stop
                        fail(f"{name}: {error_text(exc)}")
                    r = outcome.record
                    state = "imported" if outcome.created else "already imported"
                    lines.append(
                        f"{name}: {state} as #{r.id} ({r.format}, {r.runs} run(s), "
                        f"{r.measurements} measurements, sha256 {r.content_sha256[:16]})"
                    )
            return lines

        try:
            lines = run(go())
        except Exception as exc:  # noqa: BLE001 - reported as a one-line error
            fail(error_text(exc))
        click.echo("\n".join(lines))

    @benchmarks.command("list")
    def benchmarks_list() -> None:
        """Every imported file with its provenance, oldest first."""
        from service.store.benchmarks import BenchmarkRepository

        settings = settings_loader()

        async def go() -> list[str]:
            async with open_engine(settings) as engine:
                records = await BenchmarkRepository(engine).imports()
            return [
                f"#{r.id} {r.imported_at:%Y-%m-%dT%H:%M:%SZ} {r.format:<10} runs {r.runs:>3} "
                f"rows {r.measurements:>4} key {r.key_id} labels {','.join(r.labels) or '-'} "
                f"{r.filename or ''}"
                for r in records
            ]

        try:
            lines = run(go())
        except Exception as exc:  # noqa: BLE001 - reported as a one-line error
            fail(error_text(exc))
        click.echo("\n".join(lines) if lines else "no benchmark files imported")


def register_calibrate(main: click.Group, settings_loader: Any) -> None:
    """Add ``calibrate`` to the ``gpuplan`` command group."""

    @main.command()
    @click.argument("name")
    @click.option(
        "--engine",
        type=click.Choice(ENGINES),
        required=True,
        help="The engine whose measurements are fitted.",
    )
    @click.option(
        "--label", "labels", multiple=True, help="Only files with this label (repeat: all of them)."
    )
    @click.option("--gpu", "gpus", multiple=True, help="Only these GPUs (repeat).")
    @click.option("--model", "models", multiple=True, help="Only these models (repeat).")
    @click.option("--dry-run", is_flag=True, help="Fit and print the report; store nothing.")
    def calibrate(
        name: str, engine: str, labels: tuple[str, ...], gpus: tuple[str, ...],
        models: tuple[str, ...], dry_run: bool,
    ) -> None:  # fmt: skip
        """Fit calibration profile NAME on the imported benchmark measurements (same code as
        POST /v1/calibrations) and store it as its next version; prints the fit report.

        \b
        Example:
          gpuplan benchmarks import results/*.json --gpu a100-sxm-80gb --tensor-parallel 1 \\
              --precision bf16 --engine-version 0.11.0 --label team:search
          gpuplan calibrate team-search --engine vllm --label team:search
        """
        from dataclasses import replace

        from service.api.schemas.calibrations import report_text
        from service.domain.profiles.fit import fit_profile
        from service.domain.profiles.values import Selection, check_name
        from service.store.benchmarks import BenchmarkRepository
        from service.store.profiles import ProfileRepository
        from service.store.repositories import CatalogRepository
        from service.usecases.calibrating import load_rows, profile_from_fit, resolve_selection

        settings = settings_loader()

        async def go() -> str:
            check_name(name)
            async with open_engine(settings) as db:
                snapshot = await CatalogRepository(db).snapshot()
                selection = resolve_selection(snapshot, Selection(labels, gpus, models))
                chosen = one_of(ENGINES, engine, "engine")
                rows = await load_rows(BenchmarkRepository(db), chosen, selection)
                fit = fit_profile(rows, {g.id: g for g in snapshot.gpus}, chosen, name)
                profile = profile_from_fit(
                    name, chosen, selection, fit, now=datetime.now(UTC), key_id=CLI_KEY_ID
                )
                if dry_run:
                    return "dry run: nothing stored\n" + report_text(replace(profile, version=0))
                stored = await ProfileRepository(db).add(profile)
            return report_text(stored)

        try:
            text = run(go())
        except Exception as exc:  # noqa: BLE001 - reported as a one-line error
            fail(error_text(exc))
        click.echo(text, nl=False)
