"""``gpuplan plan`` and ``gpuplan estimate``: the service's planning code, run locally against
the configured catalog (the embedded SQLite default needs no server), printed as the text table
or JSON. Inputs go through the same wire types as the HTTP API, so limits and errors match."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec

from service.api.render import plan_flat, plan_text
from service.api.schemas.estimate import EstimateIn, EstimateOut
from service.api.schemas.plans import PlanOut, PlanRequestIn, to_domain
from service.cli_common import error_text, fail, run
from service.domain.errors import DomainError
from service.domain.perfmodel import ENGINES, KV_PRECISIONS, PRECISIONS
from service.domain.planner import plan as solve_plan
from service.settings import Settings
from service.usecases.catalog_io import open_repository
from service.usecases.estimating import EstimatingService
from service.usecases.planning import plan_id_for

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
_encoder = msgspec.json.Encoder()


def _convert(raw: dict[str, Any], cls: type[T]) -> T:
    try:
        return msgspec.convert(raw, cls)
    except msgspec.ValidationError as exc:
        fail(f"invalid request: {exc}", 2)


def _names(value: str | None) -> list[str] | None:
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


def _mix(items: tuple[str, ...]) -> list[dict[str, Any]] | None:
    if not items:
        return None
    out = []
    for item in items:
        try:
            share, prompt, output = item.split(":")
            out.append(
                {"share": float(share), "prompt_tokens": int(prompt), "output_tokens": int(output)}
            )
        except ValueError:
            fail(f"--mix {item!r}: expected SHARE:PROMPT_TOKENS:OUTPUT_TOKENS, e.g. 0.7:512:200", 2)
    return out


def _max_cards(items: tuple[str, ...]) -> dict[str, int]:
    caps = {}
    for item in items:
        gpu, _, cards = item.partition("=")
        if not cards.isdigit():
            fail(f"--max-cards {item!r}: expected GPU=CARDS, e.g. h100=16", 2)
        caps[gpu] = int(cards)
    return caps


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    return value


async def _plan(settings: Settings, body: PlanRequestIn) -> PlanOut:
    async with open_repository(settings) as repo:
        snapshot = await (repo.snapshot(body.as_of) if body.as_of else repo.snapshot())
    request, canonical, canonical_bytes = to_domain(
        body, snapshot, time_limit_s=settings.solve_time_limit_s
    )
    result = solve_plan(request, snapshot)
    plan_id = plan_id_for(canonical_bytes, snapshot.revision)
    return PlanOut.from_domain(
        result, plan_id=plan_id, revision=snapshot.revision, request=canonical
    )


def serving_options(command: F) -> F:
    """``--precision``, ``--kv-cache-precision`` and ``--engine``, as the API spells them."""
    for option in reversed(
        (
            click.option(
                "--precision", default="bf16", show_default=True, type=click.Choice(PRECISIONS)
            ),
            click.option(
                "--kv-cache-precision",
                default="bf16",
                show_default=True,
                type=click.Choice(KV_PRECISIONS),
            ),
            click.option("--engine", default="vllm", show_default=True, type=click.Choice(ENGINES)),
        )
    ):
        command = option(command)
    return command


def register(main: click.Group, settings_loader: Any) -> None:
    """Add ``plan`` and ``estimate`` to the ``gpuplan`` command group."""

    @main.command()
    @click.option(
        "--request",
        "request_file",
        type=click.Path(dir_okay=False, allow_dash=True),
        help="A full POST /v1/plans JSON body (file, or - for stdin); other options are ignored.",
    )
    @click.option("--model", help="Preset id or alias, e.g. llama-3.1-70b.")
    @click.option("--qps", type=float, help="Total requests per second.")
    @click.option("--prompt-tokens", type=int)
    @click.option("--output-tokens", type=int)
    @click.option(
        "--mix",
        multiple=True,
        metavar="SHARE:PROMPT:OUTPUT",
        help="A request shape and its share (repeat; shares sum to 1).",
    )
    @click.option("--ttft-ms", type=float)
    @click.option("--tpot-ms", type=float)
    @click.option("--e2e-ms", type=float)
    @click.option("--percentile", type=float, default=95.0, show_default=True)
    @click.option("--budget-usd-per-hour", type=float)
    @click.option("--budget-usd-per-month", type=float)
    @click.option("--gpus", help="Comma-separated ids or aliases allowed.")
    @click.option("--exclude-gpus", help="Comma-separated ids or aliases to leave out.")
    @click.option("--providers", help="Comma-separated providers allowed, e.g. aws,lambda.")
    @click.option("--regions", help="Comma-separated regions allowed.")
    @click.option(
        "--pricing",
        type=click.Choice(["on_demand", "spot", "reserved_1y", "reserved_3y", "owned"]),
        default="on_demand",
        show_default=True,
    )
    @click.option(
        "--max-cards", multiple=True, metavar="GPU=CARDS", help="Availability cap (repeat)."
    )
    @serving_options
    @click.option("--headroom", type=float, default=0.0, show_default=True)
    @click.option("--min-replicas", type=int, default=1, show_default=True)
    @click.option("--single-type", is_flag=True, help="Use one GPU type only (allow_mix=false).")
    @click.option("--as-of", help="Plan with the prices known at this ISO 8601 moment.")
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
        if request_file is not None:
            text = sys.stdin.read() if request_file == "-" else Path(request_file).read_text()
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as exc:
                fail(f"--request is not JSON: {exc}", 2)
        else:
            o = options
            if not o["model"] or o["qps"] is None:
                fail("--model and --qps are required (or give --request FILE)", 2)
            budget = None
            if o["budget_usd_per_hour"] or o["budget_usd_per_month"]:
                budget = {
                    "usd_per_hour": o["budget_usd_per_hour"],
                    "usd_per_month": o["budget_usd_per_month"],
                }
            raw = _drop_none(
                {
                    "model": o["model"],
                    "precision": o["precision"],
                    "kv_cache_precision": o["kv_cache_precision"],
                    "engine": o["engine"],
                    "workload": {
                        "qps": o["qps"],
                        "prompt_tokens": o["prompt_tokens"],
                        "output_tokens": o["output_tokens"],
                        "mix": _mix(o["mix"]),
                    },
                    "slo": {
                        "ttft_ms": o["ttft_ms"],
                        "tpot_ms": o["tpot_ms"],
                        "e2e_ms": o["e2e_ms"],
                        "percentile": o["percentile"],
                    },
                    "budget": budget,
                    "constraints": {
                        "gpus": _names(o["gpus"]),
                        "exclude_gpus": _names(o["exclude_gpus"]) or [],
                        "providers": _names(o["providers"]),
                        "regions": _names(o["regions"]),
                        "pricing": o["pricing"],
                        "max_cards": _max_cards(o["max_cards"]),
                        "allow_mix": not o["single_type"],
                        "headroom": o["headroom"],
                        "min_replicas": o["min_replicas"],
                    },
                    "as_of": o["as_of"],
                }
            )
        body = _convert(raw, PlanRequestIn)
        try:
            out = run(_plan(settings, body))
        except DomainError as exc:
            fail(error_text(exc), 2)
        if flat:
            click.echo(json.dumps(plan_flat(out), indent=2))
        elif as_json:
            click.echo(_encoder.encode(out).decode())
        else:
            click.echo(plan_text(out), nl=False)

    @main.command()
    @click.option("--model", required=True, help="Preset id or alias.")
    @click.option("--gpu", required=True, help="GPU id or alias.")
    @click.option("--prompt-tokens", type=int, required=True)
    @click.option("--output-tokens", type=int, required=True)
    @click.option(
        "--tensor-parallel",
        "--tp",
        type=int,
        help="Cards per replica (default: smallest that fits).",
    )
    @serving_options
    @click.option("--concurrency", type=int, help="Fixed running batch.")
    @click.option("--qps", type=float, help="Arrival rate at the replica (adds percentiles).")
    @click.option("--allow-pcie-tensor-parallel", is_flag=True)
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
        raw = _drop_none(dict(options))
        body = _convert(raw, EstimateIn)

        async def go() -> EstimateOut:
            from service.usecases.catalog_state import CatalogState

            async with open_repository(settings) as repo:
                state = CatalogState(repo)
                answer = await EstimatingService(state).estimate(body.to_query())
            return EstimateOut.from_domain(answer)

        try:
            out = run(go())
        except DomainError as exc:
            fail(error_text(exc), 2)
        if as_json:
            click.echo(_encoder.encode(out).decode())
            return
        click.echo(_estimate_text(out), nl=False)


def _estimate_text(e: EstimateOut) -> str:
    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:,.1f} ms"

    m = e.memory
    rows = [
        ("gpu", f"{e.gpu} x {e.tensor_parallel}"),
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
