"""Server memory under many distinct plans: does the in-process plan cache keep RSS bounded?

Starts the real server (``gpuplan serve``, one worker) on the embedded default (SQLite file in a
temporary ``GPUPLAN_DATA_DIR``, in-process plan cache, default
``GPUPLAN_PLAN_CACHE_MAX_ENTRIES``), reads its RSS (``VmRSS`` in ``/proc/<pid>/status``) once
it is ready, then sends 10,000 DISTINCT plan requests (llama-3.1-8b on three small GPUs, a
different prompt/output shape and QPS each, so every one is a cache miss and a real solve) with
a bounded number in flight, and reads RSS again after 1k, 2.5k, 5k, 7.5k and 10k plans, with
the server's cache counters from ``/metrics``. The cache is an LRU bounded by entries (and
bytes): once it is full, every new plan evicts the oldest, so RSS should stop growing. The
verdict "plateaued" is judged on those 10,000 plans. The same server then receives 10,000 more
distinct plans (``--extend-to``), to show where RSS levels off if it had not by 10,000 (other
bounded per-process memos, e.g. the performance model's, fill later than the plan cache).

The load generator is Python (httpx) on the same machine; that only affects how long the run
takes, not the server's memory, which is what is measured.

Run: ``.venv/bin/python bench/memory_growth.py [--plans 10000] [--extend-to 20000]
[--concurrency 4]``. Prints a markdown table (progress on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.served_throughput import (  # noqa: E402
    ServerProcess,
    cache_outcome,
    clean_environment,
    http,
    scrape_metrics,
)
from service.settings import load_settings  # noqa: E402

MIB = 1024 * 1024
GPUS = ["l4", "a10", "l40s"]
CHECKPOINT_FRACTIONS = (0.1, 0.25, 0.5, 0.75, 1.0)
EXTENSION_FRACTIONS = (0.25, 0.5, 1.0)
MAX_PLANS = 40_000
PLATEAU_RATIO = 0.2
PLATEAU_FLOOR = 2 * MIB


def plan_body(i: int) -> dict[str, object]:
    """Request ``i``: a (prompt, output) shape no other ``i`` has, and its own QPS."""
    return {
        "model": "llama-3.1-8b",
        "precision": "bf16",
        "workload": {
            "qps": round(1.0 + (i * 7919 % 1000) / 10, 1),
            "prompt_tokens": 128 + 8 * (i % 500),
            "output_tokens": 32 + 8 * (i // 500),
        },
        "slo": {"ttft_ms": 2000, "tpot_ms": 80, "percentile": 95},
        "constraints": {"gpus": GPUS},
    }


def proc_status(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` (peak RSS) of ``pid``, in bytes."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0]) * 1024
    return values


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), from ``/proc/*/stat``."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def helpers_pss(pid: int) -> tuple[int, int]:
    """(processes, bytes): the processes below the server (the helper processes' fork server,
    its workers, the resource tracker) and their summed PSS (``/proc/<pid>/smaps_rollup``:
    pages they share counted once between them)."""
    total, count = 0, 0
    for child in descendants(pid):
        try:
            rollup = Path(f"/proc/{child}/smaps_rollup").read_text()
        except OSError:
            continue
        count += 1
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1]) * 1024
    return count, total


_CACHE_SIZE = re.compile(r"^gpuplan_plan_cache_\w*(entries|bytes|size)\w*(\{.*\})?$")


def exported_cache_size(metrics: Mapping[str, float]) -> str | None:
    """A plan-cache size gauge from ``/metrics``, if the server exports one."""
    found = [f"{k}={v:,.0f}" for k, v in metrics.items() if _CACHE_SIZE.match(k)]
    return ", ".join(found) if found else None


@dataclass
class Progress:
    sent: int = 0
    retries_503: int = 0
    errors: list[str] = field(default_factory=list)
    not_miss: int = 0
    plan_ids: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)


async def send_range(
    client: httpx.AsyncClient, start: int, stop: int, concurrency: int, progress: Progress
) -> None:
    """Send plans ``start``..``stop - 1``, at most ``concurrency`` in flight, in order of index;
    a 503 (solver queue full) is retried after its Retry-After."""
    next_index = start
    results: dict[int, tuple[str, int]] = {}

    async def worker() -> None:
        nonlocal next_index
        while next_index < stop:
            i = next_index
            next_index += 1
            while True:
                resp = await client.post("/v1/plans", json=plan_body(i))
                if resp.status_code == 503:
                    progress.retries_503 += 1
                    await asyncio.sleep(float(resp.headers.get("retry-after", "1")))
                    continue
                break
            if resp.status_code != 200:
                progress.errors.append(f"plan {i}: {resp.status_code} {resp.text[:300]}")
                if len(progress.errors) > 20:
                    raise RuntimeError("too many errors:\n" + "\n".join(progress.errors))
                continue
            if resp.headers.get("x-cache") != "miss":
                progress.not_miss += 1
            results[i] = (resp.headers.get("etag", "").strip('"'), len(resp.content))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    for i in sorted(results):
        plan_id, size = results[i]
        progress.plan_ids.append(plan_id)
        progress.sizes.append(size)
    progress.sent = stop


@dataclass(frozen=True, slots=True)
class Checkpoint:
    plans: int
    rss: int
    hwm: int
    misses: int
    hits: int
    cache_size: str | None
    elapsed_s: float


async def run(
    args: argparse.Namespace, server: ServerProcess, progress: Progress
) -> list[Checkpoint]:
    checkpoints = sorted(
        {max(1, round(args.plans * f)) for f in CHECKPOINT_FRACTIONS}
        | {args.plans + round((args.extend_to - args.plans) * f) for f in EXTENSION_FRACTIONS}
    )
    rows: list[Checkpoint] = []
    started = time.perf_counter()
    limits = httpx.Limits(
        max_connections=args.concurrency, max_keepalive_connections=args.concurrency
    )
    async with httpx.AsyncClient(base_url=server.base, timeout=60.0, limits=limits) as client:
        done = 0
        for target in checkpoints:
            await send_range(client, done, target, args.concurrency, progress)
            done = target
            metrics = scrape_metrics(server)
            status = proc_status(server.pid)
            rows.append(
                Checkpoint(
                    plans=target,
                    rss=status["VmRSS"],
                    hwm=status["VmHWM"],
                    misses=round(cache_outcome(metrics, "miss")),
                    hits=round(cache_outcome(metrics, "hit")),
                    cache_size=exported_cache_size(metrics),
                    elapsed_s=time.perf_counter() - started,
                )
            )
            print(
                f"  {target} plans: RSS {status['VmRSS'] / MIB:.1f} MiB "
                f"({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plans", type=int, default=10_000, help="distinct plans judged")
    parser.add_argument(
        "--extend-to",
        type=int,
        default=20_000,
        help="then keep sending distinct plans up to this many, to see where RSS levels off "
        "(<= --plans: no extension)",
    )
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight")
    args = parser.parse_args()
    if not 1 <= args.plans <= MAX_PLANS:
        parser.error(f"--plans must be between 1 and {MAX_PLANS:,}")
    args.extend_to = min(max(args.extend_to, args.plans), MAX_PLANS)

    with tempfile.TemporaryDirectory(prefix="gpuplan-mem-") as tmp:
        workdir = Path(tmp)
        env = clean_environment({"GPUPLAN_DATA_DIR": str(workdir / "data")})
        cap = load_settings(env).plan_cache_max_entries
        server = ServerProcess(env, workdir / "server.log")
        progress = Progress()
        try:
            ready_s = server.start()
            startup = proc_status(server.pid)
            helpers_start = helpers_pss(server.pid)
            rows = asyncio.run(run(args, server, progress))
            first_id, last_id = progress.plan_ids[0], progress.plan_ids[-1]
            first = http("GET", server.url(f"/v1/plans/{first_id}")).status
            last = http("GET", server.url(f"/v1/plans/{last_id}")).status
            final = proc_status(server.pid)
            helpers_end = helpers_pss(server.pid)
        finally:
            server.stop()

    distinct = len(set(progress.plan_ids))
    held = progress.sizes[-min(cap, len(progress.sizes)) :]
    print("# Server memory under distinct plans (embedded, in-process plan cache)\n")
    print(
        f"`gpuplan serve --workers 1`, embedded SQLite, in-process plan cache with the default "
        f"bound of {cap:,} entries (`GPUPLAN_PLAN_CACHE_MAX_ENTRIES`; also 64 MiB). "
        f"{args.extend_to:,} POST /v1/plans requests (the first {args.plans:,} judged, the rest "
        f"an extension), llama-3.1-8b bf16 on {', '.join(GPUS)}, a new "
        f"(prompt, output, QPS) each, {args.concurrency} in flight; server ready in "
        f"{ready_s:.1f} s. RSS = VmRSS from /proc/<pid>/status.\n"
    )
    print(
        "| plans sent | server misses | server hits | RSS MiB | growth since start MiB | "
        "peak RSS MiB | elapsed s |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rss0, hwm0 = startup["VmRSS"] / MIB, startup["VmHWM"] / MIB
    print(f"| 0 (ready) | 0 | 0 | {rss0:.1f} | 0.0 | {hwm0:.1f} | 0 |")
    for row in rows:
        label = f"{row.plans:,}" + (" (extension)" if row.plans > args.plans else "")
        print(
            f"| {label} | {row.misses:,} | {row.hits:,} | {row.rss / MIB:.1f} | "
            f"{(row.rss - startup['VmRSS']) / MIB:+.1f} | {row.hwm / MIB:.1f} | "
            f"{row.elapsed_s:.0f} |"
        )
    print()
    print(
        f"- Helper processes below the server (the solver's helpers, their fork server, the "
        f"resource tracker), not in the RSS above: {helpers_start[0]} at start, PSS "
        f"{helpers_start[1] / MIB:.1f} MiB; {helpers_end[0]} at the end, PSS "
        f"{helpers_end[1] / MIB:.1f} MiB (proportional set size: pages they share counted once)."
    )
    size = rows[-1].cache_size
    print(
        f"- Plan-cache size: {size if size else 'not exported by /metrics'}; the cache holds the "
        f"newest {len(held):,} plans, whose JSON bodies total {sum(held) / MIB:.1f} MiB "
        f"(mean {sum(progress.sizes) / max(1, len(progress.sizes)) / 1024:.1f} KiB per plan)."
    )
    print(
        f"- Distinct plan ids: {distinct:,} of {len(progress.plan_ids):,} answered; answers not "
        f"`X-Cache: miss`: {progress.not_miss}; 503 retries: {progress.retries_503}; errors: "
        f"{len(progress.errors)}."
    )
    print(
        f"- Eviction: GET /v1/plans/<first plan> answered {first} "
        f"({'evicted' if first == 404 else 'still cached'}), GET /v1/plans/<last plan> answered "
        f"{last}."
    )
    # Plateau: over the second half of the run (the plan cache long full) RSS grows by at most a
    # fifth of what it grew over the first half (a leak keeps growing at one rate), or < 2 MiB.
    main_rows = [r for r in rows if r.plans <= args.plans]
    half = next((r for r in main_rows if r.plans >= args.plans // 2), main_rows[0])
    end_row = main_rows[-1]
    tail_growth = end_row.rss - half.rss
    early_growth = half.rss - startup["VmRSS"]
    plateau = tail_growth <= max(PLATEAU_FLOOR, PLATEAU_RATIO * early_growth)
    print(
        f"- RSS growth over the second half ({half.plans:,} to {end_row.plans:,} plans): "
        f"{tail_growth / MIB:+.1f} MiB, against {early_growth / MIB:+.1f} MiB over the first half "
        f"(0 to {half.plans:,}). Plateaued within {args.plans:,} plans (second half grows at most "
        f"{PLATEAU_RATIO:.0%} of the first half, or under {PLATEAU_FLOOR / MIB:.0f} MiB): "
        f"**{'yes' if plateau else 'NO'}**."
    )
    extension = [r for r in rows if r.plans > args.plans]
    if extension:
        mid = next(r for r in rows if r.plans >= (args.plans + args.extend_to) // 2)
        ext_growth = extension[-1].rss - mid.rss
        points = [(0, startup["VmRSS"]), *((r.plans, r.rss) for r in rows)]
        per_k = [
            (n1, (rss1 - rss0) / MIB / ((n1 - n0) / 1000))
            for (n0, rss0), (n1, rss1) in itertools.pairwise(points)
        ]
        print(
            f"- Extension to {args.extend_to:,} distinct plans: RSS {extension[-1].rss / MIB:.1f} "
            f"MiB; growth from {mid.plans:,} to {extension[-1].plans:,}: "
            f"{ext_growth / MIB:+.1f} MiB. Growth per 1,000 plans, by interval ending at: "
            + ", ".join(f"{n:,}: {g:+.1f} MiB" for n, g in per_k)
            + "."
        )
    print(f"- RSS at the end: {final['VmRSS'] / MIB:.1f} MiB (peak {final['VmHWM'] / MIB:.1f}).")
    for error in progress.errors[:5]:
        print(f"- error: {error}")
    # Exit status: the measurement itself went wrong (errors, repeated plans, cache hits);
    # "not plateaued" is a finding, printed above, not a failure to measure.
    valid = not progress.errors and distinct == len(progress.plan_ids) and not progress.not_miss
    return 0 if valid else 1


if __name__ == "__main__":
    sys.exit(main())
