"""``gpuplan plan`` and ``gpuplan estimate``: the service's planning code, run locally against
the configured catalog (the embedded SQLite default needs no server), printed as the text table
or JSON. Both go through the same use cases as the HTTP API, and their options are made from
the same tables as ``GET /v1/plan``'s and ``GET /v1/estimate``'s query parameters
(``PLAN_FIELDS``, ``ESTIMATE_FIELDS``), so limits, defaults and errors match."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import msgspec
from litestar.exceptions import ClientException, SerializationException
from sqlalchemy.ext.asyncio import AsyncEngine

from service.api.json_body import checked_json
from service.api.render import plan_flat, plan_text
from service.api.schemas.estimate import (
    ESTIMATE_FIELDS,
    EstimateIn,
    EstimateOut,
    estimate_from_flat,
)
from service.api.schemas.flat import body_from_data
from service.api.schemas.plan_fields import PLAN_FIELDS, plan_request_from_flat
from service.api.schemas.plan_request import PlanRequestIn
from service.api.schemas.plan_response import PlanOut
from service.cache.memory import MemoryPlanCache
from service.cli_common import fail, open_engine, run
from service.cli_flat import flat_options, option_for
from service.domain.errors import DomainError
from service.domain.planner import PlanDraft, SolvedPlan, price_age
from service.settings import Settings
from service.store.profiles import ProfileRepository
from service.store.repositories import CatalogRepository
from service.usecases.calibrating import ProfileResolver
from service.usecases.catalog_state import CatalogState
from service.usecases.errors import ServiceUnavailable
from service.usecases.estimating import EstimateAnswer, EstimateQuery, EstimatingService
from service.usecases.planning import PlanningService, SilentMetrics
from service.usecases.solver_pool import SolverPool

_encoder = msgspec.json.Encoder()


async def _solve(settings: Settings, draft: PlanDraft) -> SolvedPlan:
    """The plan through the planning use case, with an in-process cache and one solver."""
    async with open_engine(settings) as engine:
        state = CatalogState(CatalogRepository(engine), timeout_s=settings.database_timeout_s)
        metrics = SilentMetrics()
        planning = PlanningService(
            state,
            MemoryPlanCache(max_entries=16),
            SolverPool(1, 0, metrics, helper_processes=False),
            metrics,
            ttl_s=settings.plan_cache_ttl_s,
            time_limit_s=settings.solve_time_limit_s,
            defaults=settings.plan_defaults,
            profiles=_profiles(settings, engine, state),
        )
        try:
            outcome = await planning.solve(draft)
        finally:
            await planning.close()
    if outcome.solved is None:  # only when a caller says it holds the plan: never here
        fail("no plan was solved", 1)
    return outcome.solved


def _read_body(request_file: str) -> PlanRequestIn:
    """The request file read as ``POST /v1/plans`` reads a body (same JSON checks, same
    limits); a file that is not acceptable JSON stops with one line."""
    text = sys.stdin.read() if request_file == "-" else Path(request_file).read_text()
    try:
        raw = checked_json(text.encode())
    except (SerializationException, ClientException) as exc:
        fail(f"--request is not acceptable JSON: {exc.detail}", 2)
    return body_from_data(PlanRequestIn, raw)


def register(main: click.Group, settings_loader: Any) -> None:
    """Add ``plan`` and ``estimate`` to the ``gpuplan`` command group."""

    @main.command()
    @click.option(
        "--request",
        "request_file",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="A full POST /v1/plans JSON body (file, or - for stdin); other options are ignored.",
    )
    @flat_options(PlanRequestIn, PLAN_FIELDS)
    @click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
    @click.option("--flat", is_flag=True, help="Print the flat string map (Terraform external).")
    def plan(request_file: str | None, as_json: bool, flat: bool, **options: Any) -> None:
        """Solve the cheapest fleet locally, with the service's own code and catalog.

        \b
        Examples:
          gpuplan plan --model llama-3.1-70b --precision fp8 --qps 40 \\
              --prompt-tokens 1024 --output-tokens 256 --ttft-ms 1500 --tpot-ms 60
          gpuplan plan --model llama-3.1-8b --qps 100 --mix 0.8:300:150 --mix 0.2:6000:300 \\
              --tpot-ms 80 --gpus l4,l40s,h100 --json
          gpuplan plan --request body.json
        """
        settings = settings_loader()
        if request_file is None and (not options["model"] or options["qps"] is None):
            fail("--model and --qps are required (or give --request FILE)", 2)
        try:
            if request_file is not None:
                body = _read_body(request_file)
            else:
                body = plan_request_from_flat(options)
            solved = run(_solve(settings, body.to_draft()))
        except DomainError as exc:
            where = exc.field if request_file is not None else option_for(PLAN_FIELDS, exc.field)
            fail(exc.message + (f" ({where})" if where else ""), 2)
        except ServiceUnavailable as exc:
            fail(exc.why, 1)
        out = PlanOut.from_domain(solved)
        if flat:
            click.echo(json.dumps(plan_flat(out), indent=2))
        elif as_json:
            click.echo(_encoder.encode(out).decode())
        else:
            click.echo(plan_text(out), nl=False)
        # Beside the plan, never in it (the plan is the same on every day): standard error.
        age = price_age(solved, datetime.now(UTC))
        warning = age.warning() if age is not None else None
        if warning is not None:
            click.echo(f"gpuplan: {warning}", err=True)

    @main.command()
    @flat_options(EstimateIn, ESTIMATE_FIELDS, required=True)
    @click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON.")
    def estimate(as_json: bool, **options: Any) -> None:
        """Estimate one model on one GPU configuration locally.

        \b
        Examples:
          gpuplan estimate --model llama-2-70b --gpu a100 --prompt-tokens 1024 --output-tokens 256
          gpuplan estimate --model llama-3.1-8b --gpu l4 --prompt-tokens 512 \\
              --output-tokens 128 --qps 1 --json
        """
        settings = settings_loader()
        try:
            query = estimate_from_flat(options).to_query()
            answer = run(_estimate(settings, query))
        except DomainError as exc:
            where = option_for(ESTIMATE_FIELDS, exc.field)
            fail(exc.message + (f" ({where})" if where else ""), 2)
        except ServiceUnavailable as exc:
            fail(exc.why, 1)
        out = EstimateOut.from_domain(answer)
        if as_json:
            click.echo(_encoder.encode(out).decode())
            return
        click.echo(_estimate_text(out), nl=False)


async def _estimate(settings: Settings, query: EstimateQuery) -> EstimateAnswer:
    async with open_engine(settings) as engine:
        state = CatalogState(CatalogRepository(engine), timeout_s=settings.database_timeout_s)
        profiles = _profiles(settings, engine, state)
        return await EstimatingService(state, profiles).estimate(query)


def _profiles(settings: Settings, engine: AsyncEngine, state: CatalogState) -> ProfileResolver:
    """Calibration profiles from the configured database, as the server resolves them."""
    return ProfileResolver(
        ProfileRepository(engine),
        state,
        settings.default_calibration,
        timeout_s=settings.database_timeout_s,
    )


def _estimate_text(e: EstimateOut) -> str:
    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:,.1f} ms"

    m = e.memory
    rows = [
        ("gpu", f"{e.gpu} x {e.tensor_parallel}, {e.precision} weights"),
        ("fits", "yes" if e.fits else f"no: {e.reason}"),
        ("concurrency", f"{e.concurrency} running (memory/engine allow {e.max_concurrency})"),
        ("ttft / tpot / e2e", f"{ms(e.ttft_ms)} / {ms(e.tpot_ms)} / {ms(e.e2e_ms)}"),
        (
            "throughput",
            f"{e.output_tokens_per_s:,.0f} output tokens/s, {e.requests_per_s:,.2f} req/s",
        ),
        ("bottleneck", e.bottleneck),
        (
            "memory per card",
            f"weights {m.weights_gb:.1f} GB, KV {m.kv_cache_gb:.1f} GB, "
            f"activations {m.activations_gb:.1f} GB, reserve {m.reserve_gb:.1f} GB "
            f"of {m.capacity_gb:.1f} GB",
        ),
    ]
    if e.latency is not None:
        lat = e.latency
        rows.append(
            (
                "ttft p50/p95/p99",
                f"{ms(lat.ttft_ms.p50)} / {ms(lat.ttft_ms.p95)} / {ms(lat.ttft_ms.p99)}",
            )
        )
        rows.append(
            (
                "tpot p50/p95/p99",
                f"{ms(lat.tpot_ms.p50)} / {ms(lat.tpot_ms.p95)} / {ms(lat.tpot_ms.p99)}",
            )
        )
    if e.reason and e.fits:
        rows.append(("note", e.reason))
    width = max(len(k) for k, _ in rows)
    text = "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
    text += "\nassumptions:\n" + "\n".join(f"- {a}" for a in e.assumptions)
    return text + "\n"
