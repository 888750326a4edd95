"""Served throughput of the production server: cached plans against a liveness probe.

Starts the real server (``gpuplan serve``, one uvicorn worker, uvloop/httptools) as a
subprocess, waits for ``/readyz``, warms the plan cache, then drives it with ``wrk`` over
loopback in the same server run, each endpoint for a fixed duration and number of connections:

- (a) ``POST /v1/plans``: a fixed request (llama-3.1-70b fp8, 1024 in / 256 out, 40 req/s,
  TTFT p95 1500 ms, TPOT p95 60 ms, 150 USD/h), answered from the plan cache;
- (b) ``GET /v1/plan?...``: the same plan from a query string, also from the cache;
- (c) ``GET /healthz``: the cheapest route, the ceiling of the HTTP stack itself.

``X-Cache: hit`` is checked before measuring, and the server's own counters (``/metrics``) are
read around every run: a plan run counts only if every request it answered was a cache hit.

Backends: the embedded default (SQLite file in a temporary ``GPUPLAN_DATA_DIR``, in-process
plan cache) and Postgres + Redis (a temporary database ``gpuplan_bench_<random>``, migrated
with ``gpuplan migrate`` and dropped at the end; Redis DB 0, where plan keys are namespaced by
plan id). Logging is the production default (INFO, JSON, one access line per request, written
to a file); a second row per backend repeats the runs with ``GPUPLAN_LOG_LEVEL=WARNING``.

Fairness on a small machine: ``wrk`` (C, one thread) is the load generator, and the server
and ``wrk`` are pinned to different CPUs (server on the first allowed CPU, ``wrk`` on the
second) so they never compete for one core; Postgres and Redis are not pinned.

Run: ``.venv/bin/python bench/served_throughput.py [--duration 10] [--connections 16]
[--backends embedded,postgres] [--log-levels INFO,WARNING]``. Needs ``wrk`` on PATH. Prints
markdown tables.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from service.cache.codec import plan_key

ROOT = Path(__file__).resolve().parents[1]

PLAN_BODY: dict[str, object] = {
    "model": "llama-3.1-70b",
    "precision": "fp8",
    "workload": {"qps": 40, "prompt_tokens": 1024, "output_tokens": 256},
    "slo": {"ttft_ms": 1500, "tpot_ms": 60, "percentile": 95},
    "budget": {"usd_per_hour": 150},
}
PLAN_QUERY: dict[str, str] = {
    "model": "llama-3.1-70b",
    "precision": "fp8",
    "qps": "40",
    "prompt_tokens": "1024",
    "output_tokens": "256",
    "ttft_ms": "1500",
    "tpot_ms": "60",
    "budget_usd_per_hour": "150",
}
REDIS_KEY_PREFIX = "gpuplan:"  # the server's default Redis key prefix (service.app.create_app)


# --------------------------------------------------------------------------- server process


def gpuplan_executable() -> str:
    """The ``gpuplan`` entry point next to this interpreter (the venv's), else on PATH."""
    sibling = Path(sys.executable).with_name("gpuplan")
    if sibling.exists():
        return str(sibling)
    found = shutil.which("gpuplan")
    if found is None:
        raise SystemExit("gpuplan is not installed: run `make run` or `pip install -e .` first")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def clean_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """The current environment without any ``GPUPLAN_*`` setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUPLAN_")}
    env.update(extra)
    return env


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    status: int
    headers: dict[str, str]
    body: bytes


def http(
    method: str,
    url: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> HttpAnswer:
    """One request with the standard library (control traffic only, never the measured load)."""
    req = urllib.request.Request(  # noqa: S310 - loopback http URLs built here
        url, data=body, method=method, headers=dict(headers or {})
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - loopback URL
            return HttpAnswer(
                resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
            )
    except urllib.error.HTTPError as exc:
        return HttpAnswer(exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read())


class ServerProcess:
    """``gpuplan serve`` in a subprocess, its stdout and stderr (the JSON log) in a file."""

    def __init__(
        self,
        env: Mapping[str, str],
        log_path: Path,
        *,
        cpus: set[int] | None = None,
        workers: int = 1,
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._env = dict(env)
        self._cpus = cpus
        self._workers = workers
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError("server not started")
        return self._proc.pid

    def url(self, path: str) -> str:
        return self.base + path

    def start(self, timeout_s: float = 90.0) -> float:
        """Start and wait until ``/readyz`` says ready; returns the seconds that took."""
        cpus = self._cpus
        command = [
            gpuplan_executable(),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            str(self._workers),
        ]
        started = time.perf_counter()
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                command,
                cwd=ROOT,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
            )
        deadline = started + timeout_s
        while time.perf_counter() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"gpuplan serve exited with {self._proc.returncode}:\n{self.log_tail()}"
                )
            with contextlib.suppress(OSError):
                answer = http("GET", self.url("/readyz"), timeout_s=2.0)
                if answer.status == 200 and json.loads(answer.body).get("status") == "ready":
                    return time.perf_counter() - started
            time.sleep(0.2)
        raise RuntimeError(f"gpuplan serve not ready within {timeout_s:g} s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM (graceful shutdown), then SIGKILL if it has not exited within 30 s."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def access_log_lines(self, method: str, route: str) -> int:
        """Access-log lines written so far for ``method`` ``route`` (one per request at INFO)."""
        count = 0
        with self.log_path.open("rb") as log:
            for line in log:
                if b'"logger":"gpuplan.access"' not in line:
                    continue
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    count += entry.get("method") == method and entry.get("route") == route
        return count

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*(?:\{[^}]*\})?) (\S+)$")


def scrape_metrics(server: ServerProcess) -> dict[str, float]:
    """``/metrics`` as {sample name with labels: value}."""
    answer = http("GET", server.url("/metrics"))
    values: dict[str, float] = {}
    for line in answer.body.decode().splitlines():
        match = _SAMPLE.match(line)
        if match:
            with contextlib.suppress(ValueError):
                values[match.group(1)] = float(match.group(2))
    return values


def cache_outcome(metrics: Mapping[str, float], outcome: str) -> float:
    return metrics.get(f'gpuplan_plan_cache_total{{outcome="{outcome}"}}', 0.0)


def route_requests(metrics: Mapping[str, float], method: str, route: str) -> float:
    prefix = f'gpuplan_http_requests_total{{method="{method}",route="{route}",'
    return sum(v for k, v in metrics.items() if k.startswith(prefix))


# --------------------------------------------------------------------------- wrk

_LUA_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK_RESULT %d %d %d %d %d %d %d %d %.1f %.1f %.1f\\n",
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, latency:percentile(50), latency:percentile(99), latency.max))
end
"""


def lua_script(directory: Path, name: str, method: str = "GET", body: bytes | None = None) -> Path:
    """A wrk script: the request (method, JSON body) and a machine-readable summary line."""
    lines = [f'wrk.method = "{method}"']
    if body is not None:
        text = body.decode()
        if "]==]" in text:
            raise ValueError("body cannot be quoted as a Lua long string")
        lines.append(f"wrk.body = [==[{text}]==]")
        lines.append('wrk.headers["Content-Type"] = "application/json"')
    path = directory / f"{name}.lua"
    path.write_text("\n".join(lines) + "\n" + _LUA_DONE, encoding="utf-8")
    return path


@dataclass(frozen=True, slots=True)
class WrkResult:
    requests: int
    duration_s: float
    response_bytes: int
    socket_errors: int
    non_2xx: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s


def wrk_version() -> str:
    wrk = shutil.which("wrk")
    if wrk is None:
        return "missing"
    out = subprocess.run([wrk, "--version"], capture_output=True, text=True, check=False)
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0].split(" Copyright")[0] if first else "unknown"


def run_wrk(
    url: str,
    script: Path,
    *,
    duration_s: int,
    connections: int,
    cpus: set[int] | None,
) -> WrkResult:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    command = [
        wrk,
        "-t1",
        f"-c{connections}",
        f"-d{duration_s}s",
        "--timeout",
        "10s",
        "-s",
        str(script),
        url,
    ]
    out = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        timeout=duration_s + 60,
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
    )
    for line in out.stdout.splitlines():
        if line.startswith("WRK_RESULT "):
            f = line.split()[1:]
            return WrkResult(
                requests=int(f[0]),
                duration_s=int(f[1]) / 1e6,
                response_bytes=int(f[2]),
                socket_errors=int(f[3]) + int(f[4]) + int(f[5]) + int(f[7]),
                non_2xx=int(f[6]),
                p50_ms=float(f[8]) / 1000,
                p99_ms=float(f[9]) / 1000,
                max_ms=float(f[10]) / 1000,
            )
    raise RuntimeError(f"wrk printed no result (exit {out.returncode}):\n{out.stdout}{out.stderr}")


# --------------------------------------------------------------------------- measurement

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class CpuShare:
    """CPU used during a run, in CPUs (1.0 = one core busy all the time)."""

    server: float
    wrk: float
    others: float  # everything else on the machine (Postgres and Redis included)


@dataclass(frozen=True, slots=True)
class CpuSample:
    at: float
    machine_busy_s: float
    server_s: float
    children_s: float

    @classmethod
    def take(cls, pid: int) -> CpuSample:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:9]
        jiffies = [int(x) for x in fields]
        busy = sum(jiffies) - jiffies[3] - jiffies[4]  # minus idle and iowait
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        server = int(stat[11]) + int(stat[12])  # utime + stime of every thread
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # reaped children: wrk runs
        return cls(time.monotonic(), busy / _TICK, server / _TICK, usage.ru_utime + usage.ru_stime)

    def since(self, before: CpuSample) -> CpuShare:
        wall = max(1e-9, self.at - before.at)
        server = (self.server_s - before.server_s) / wall
        wrk = (self.children_s - before.children_s) / wall
        busy = (self.machine_busy_s - before.machine_busy_s) / wall
        return CpuShare(server=server, wrk=wrk, others=max(0.0, busy - server - wrk))


@dataclass(frozen=True, slots=True)
class Endpoint:
    key: str
    label: str
    method: str
    path: str
    route: str
    script: Path
    cached_plan: bool


@dataclass(frozen=True, slots=True)
class Row:
    backend: str
    log_level: str
    endpoint: Endpoint
    result: WrkResult
    served: int  # server-side count of answers on the route during the run
    hits: int
    misses: int
    log_lines: int
    cpu: CpuShare
    connections: int

    @property
    def verdict(self) -> str:
        problems = []
        if self.result.non_2xx or self.result.socket_errors:
            problems.append(f"{self.result.non_2xx} non-2xx, {self.result.socket_errors} errors")
        # A request of the warm-up still finishing at the first scrape can shift one hit out of
        # the window, hence the allowance of one per connection.
        short = self.hits < self.result.requests - self.connections
        if self.endpoint.cached_plan and (self.misses or short):
            problems.append(f"{self.misses} misses")
        return "; ".join(problems) or "ok"


def confirm_hit(server: ServerProcess, endpoint: Endpoint, body: bytes | None) -> str:
    """Request the plan until it is cached; returns its ETag. Raises if it never hits."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    for _ in range(3):
        answer = http(endpoint.method, server.url(endpoint.path), body, headers)
        if answer.status != 200:
            raise RuntimeError(f"{endpoint.label} answered {answer.status}: {answer.body[:500]!r}")
        if answer.headers.get("x-cache") == "hit":
            return answer.headers.get("etag", "").strip('"')
    raise RuntimeError(f"{endpoint.label} never answered X-Cache: hit")


def measure_endpoint(
    server: ServerProcess,
    endpoint: Endpoint,
    *,
    backend: str,
    log_level: str,
    duration_s: int,
    warmup_s: int,
    connections: int,
    wrk_cpus: set[int] | None,
) -> Row:
    url = server.url(endpoint.path)
    if warmup_s > 0:
        run_wrk(url, endpoint.script, duration_s=warmup_s, connections=connections, cpus=wrk_cpus)
    time.sleep(0.5)  # let requests still in flight from the warm-up finish
    before = scrape_metrics(server)
    lines_before = server.access_log_lines(endpoint.method, endpoint.route)
    cpu_before = CpuSample.take(server.pid)
    result = run_wrk(
        url, endpoint.script, duration_s=duration_s, connections=connections, cpus=wrk_cpus
    )
    cpu = CpuSample.take(server.pid).since(cpu_before)
    time.sleep(0.5)  # and those in flight when wrk stopped
    after = scrape_metrics(server)
    lines_after = server.access_log_lines(endpoint.method, endpoint.route)
    served = route_requests(after, endpoint.method, endpoint.route) - route_requests(
        before, endpoint.method, endpoint.route
    )
    return Row(
        backend=backend,
        log_level=log_level,
        endpoint=endpoint,
        result=result,
        served=round(served),
        hits=round(cache_outcome(after, "hit") - cache_outcome(before, "hit")),
        misses=round(
            cache_outcome(after, "miss")
            - cache_outcome(before, "miss")
            + cache_outcome(after, "bypass")
            - cache_outcome(before, "bypass")
        ),
        log_lines=lines_after - lines_before,
        cpu=cpu,
        connections=connections,
    )


@dataclass(frozen=True, slots=True)
class Backend:
    name: str
    env: dict[str, str]
    redis_url: str | None = None


def run_backend(
    backend: Backend,
    log_level: str,
    endpoints: list[Endpoint],
    bodies: Mapping[str, bytes | None],
    args: argparse.Namespace,
    workdir: Path,
    server_cpus: set[int] | None,
    wrk_cpus: set[int] | None,
) -> tuple[list[Row], dict[str, str]]:
    """One server run: warm the cache, confirm hits, measure every endpoint."""
    env = clean_environment({**backend.env, "GPUPLAN_LOG_LEVEL": log_level})
    log_path = workdir / f"server-{backend.name}-{log_level}.log"
    server = ServerProcess(env, log_path, cpus=server_cpus)
    facts: dict[str, str] = {}
    created_keys: list[str] = []
    try:
        ready_s = server.start()
        facts["ready_s"] = f"{ready_s:.1f}"
        post = next(e for e in endpoints if e.key == "a")
        first = http(
            "POST", server.url(post.path), bodies["a"], {"Content-Type": "application/json"}
        )
        if first.status != 200:
            raise RuntimeError(f"warming POST answered {first.status}: {first.body[:500]!r}")
        facts["first_x_cache"] = first.headers.get("x-cache", "?")
        facts["response_bytes"] = str(len(first.body))
        plan_id = first.headers.get("etag", "").strip('"')
        if backend.redis_url and facts["first_x_cache"] == "miss":
            created_keys.append(REDIS_KEY_PREFIX + plan_key(plan_id))
        etags = {e.key: confirm_hit(server, e, bodies[e.key]) for e in endpoints if e.cached_plan}
        if len(set(etags.values())) != 1:
            raise RuntimeError(f"POST and GET name different plans: {etags}")
        facts["plan_id"] = plan_id
        rows = [
            measure_endpoint(
                server,
                endpoint,
                backend=backend.name,
                log_level=log_level,
                duration_s=args.duration,
                warmup_s=args.warmup,
                connections=args.connections,
                wrk_cpus=wrk_cpus,
            )
            for endpoint in endpoints
        ]
        return rows, facts
    finally:
        server.stop()
        if created_keys and backend.redis_url:
            delete_redis_keys(backend.redis_url, created_keys)


def delete_redis_keys(url: str, keys: list[str]) -> None:
    """Remove the plan keys this run created (only those), so Redis is left as found."""
    import redis

    client = redis.Redis.from_url(url, socket_timeout=2)
    try:
        client.delete(*keys)
    except redis.RedisError as exc:
        print(f"(could not delete Redis keys {keys}: {exc})", file=sys.stderr)
    finally:
        client.close()


@contextlib.contextmanager
def postgres_database(args: argparse.Namespace) -> Iterator[str]:
    """A fresh database ``gpuplan_bench_<random>``, dropped afterwards; yields its URL."""
    name = f"gpuplan_bench_{secrets.token_hex(4)}"
    conn = ["-h", args.pg_host, "-p", str(args.pg_port), "-U", args.pg_user]
    subprocess.run(["createdb", *conn, name], check=True, capture_output=True, text=True)
    try:
        yield f"postgresql+asyncpg://{args.pg_user}@{args.pg_host}:{args.pg_port}/{name}"
    finally:
        subprocess.run(
            ["dropdb", *conn, "--if-exists", "--force", name],
            check=False,
            capture_output=True,
            text=True,
        )


def postgres_unavailable(args: argparse.Namespace) -> str | None:
    """Why the Postgres + Redis backend cannot run here, or None."""
    for tool in ("createdb", "dropdb"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run(
        ["pg_isready", "-h", args.pg_host, "-p", str(args.pg_port)],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"Postgres does not answer on {args.pg_host}:{args.pg_port}"
    import redis

    client = redis.Redis.from_url(args.redis_url, socket_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        return f"Redis does not answer at {args.redis_url}: {exc}"
    finally:
        client.close()
    return None


# --------------------------------------------------------------------------- report


def print_tables(rows: list[Row]) -> None:
    print("| backend | logging | endpoint | requests | req/s | p50 ms | p99 ms | max ms | check |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        res = r.result
        print(
            f"| {r.backend} | {r.log_level} | {r.endpoint.label} | {res.requests:,} | "
            f"{res.rps:,.0f} | {res.p50_ms:.2f} | {res.p99_ms:.2f} | {res.max_ms:.1f} | "
            f"{r.verdict} |"
        )
    print()
    print(
        "Server-side counts over each measured run (`/metrics` deltas; the server also answers "
        "requests still in flight when wrk stops, so its counts can exceed wrk's), and CPU used "
        "during it, in CPUs (1.00 = one core all the time; from /proc: the server's threads, "
        "wrk, and everything else on the machine, which includes Postgres and Redis and any "
        "unrelated load):\n"
    )
    print(
        "| backend | logging | endpoint | answered | cache hits | cache misses | "
        "access-log lines | CPUs: server | CPUs: wrk | CPUs: everything else |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        cached = r.endpoint.cached_plan
        print(
            f"| {r.backend} | {r.log_level} | {r.endpoint.label} | {r.served:,} | "
            f"{f'{r.hits:,}' if cached else '-'} | {r.misses if cached else '-'} | "
            f"{r.log_lines:,} | {r.cpu.server:.2f} | {r.cpu.wrk:.2f} | {r.cpu.others:.2f} |"
        )
    print()
    print("| backend | logging | (a)/(c) POST cached / healthz | (b)/(c) GET cached / healthz |")
    print("| --- | --- | ---: | ---: |")
    groups: dict[tuple[str, str], dict[str, Row]] = {}
    for r in rows:
        groups.setdefault((r.backend, r.log_level), {})[r.endpoint.key] = r
    for (backend, level), by_key in groups.items():
        c = by_key["c"].result.rps
        a = by_key["a"].result.rps / c
        b = by_key["b"].result.rps / c
        mark = "meets" if a >= 0.5 else "BELOW"
        print(f"| {backend} | {level} | {a:.2f} ({mark} target 0.5) | {b:.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured run")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of discarded load first")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--backends", default="embedded,postgres")
    parser.add_argument("--log-levels", default="INFO,WARNING")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and wrk CPUs")
    parser.add_argument("--pg-host", default="127.0.0.1")
    parser.add_argument("--pg-port", type=int, default=5432)
    parser.add_argument("--pg-user", default="postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="GPUPLAN_NAME=VALUE",
        help="an extra server setting for every run (repeatable; printed with the results)",
    )
    args = parser.parse_args()
    extra_env: dict[str, str] = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name.startswith("GPUPLAN_"):
            parser.error(f"--env expects GPUPLAN_NAME=VALUE, got {item!r}")
        extra_env[name] = value
    if shutil.which("wrk") is None:
        print("served_throughput: wrk is required (apt-get install wrk)", file=sys.stderr)
        return 2
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    levels = [lvl.strip().upper() for lvl in args.log_levels.split(",") if lvl.strip()]
    allowed = sorted(os.sched_getaffinity(0))
    server_cpus: set[int] | None = None
    wrk_cpus: set[int] | None = None
    if not args.no_pin and len(allowed) >= 2:
        server_cpus, wrk_cpus = {allowed[0]}, {allowed[1]}

    post_body = json.dumps(PLAN_BODY, separators=(",", ":")).encode()
    bodies: dict[str, bytes | None] = {"a": post_body, "b": None, "c": None}
    rows: list[Row] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="gpuplan-bench-") as tmp:
        workdir = Path(tmp)
        query = urllib.parse.urlencode(PLAN_QUERY)
        endpoints = [
            Endpoint(
                "a",
                "(a) POST /v1/plans, cached",
                "POST",
                "/v1/plans",
                "/v1/plans",
                lua_script(workdir, "post_plan", "POST", post_body),
                True,
            ),
            Endpoint(
                "b",
                "(b) GET /v1/plan?..., cached",
                "GET",
                f"/v1/plan?{query}",
                "/v1/plan",
                lua_script(workdir, "get_plan"),
                True,
            ),
            Endpoint(
                "c",
                "(c) GET /healthz",
                "GET",
                "/healthz",
                "/healthz",
                lua_script(workdir, "h"),
                False,
            ),
        ]
        facts: dict[str, str] = {}
        for name in backends:
            if name == "embedded":
                data_dir = workdir / "data"
                data_dir.mkdir()
                backend = Backend(
                    "embedded (SQLite + in-process cache)",
                    {**extra_env, "GPUPLAN_DATA_DIR": str(data_dir)},
                )
                for level in levels:
                    got, facts = run_backend(
                        backend, level, endpoints, bodies, args, workdir, server_cpus, wrk_cpus
                    )
                    rows.extend(got)
                    notes.append(f"{backend.name}, {level}: {_facts(facts)}")
            elif name == "postgres":
                why = postgres_unavailable(args)
                if why is not None:
                    notes.append(f"Postgres + Redis: SKIPPED ({why})")
                    continue
                with postgres_database(args) as url:
                    env = clean_environment({"GPUPLAN_DATABASE_URL": url})
                    migrate = subprocess.run(
                        [gpuplan_executable(), "migrate"],
                        env=env,
                        cwd=ROOT,
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    if migrate.returncode != 0:
                        raise RuntimeError(f"gpuplan migrate failed:\n{migrate.stderr}")
                    backend = Backend(
                        "Postgres + Redis",
                        {
                            **extra_env,
                            "GPUPLAN_DATABASE_URL": url,
                            "GPUPLAN_REDIS_URL": args.redis_url,
                        },
                        redis_url=args.redis_url,
                    )
                    for level in levels:
                        got, facts = run_backend(
                            backend, level, endpoints, bodies, args, workdir, server_cpus, wrk_cpus
                        )
                        rows.extend(got)
                        notes.append(f"{backend.name}, {level}: {_facts(facts)}")
            else:
                raise SystemExit(f"unknown backend {name!r} (embedded, postgres)")

    print("# Served throughput: cached plans vs /healthz\n")
    pinning = (
        f"server pinned to CPU {sorted(server_cpus)[0]}, wrk to CPU {sorted(wrk_cpus)[0]}"
        if server_cpus and wrk_cpus
        else "no CPU pinning"
    )
    print(
        f"`gpuplan serve --workers 1` (uvicorn, uvloop/httptools) on loopback; load from "
        f"{wrk_version()}, 1 thread, {args.connections} connections, {args.warmup} s discarded "
        f"warm-up then {args.duration} s measured per endpoint; {pinning}; "
        f"{os.cpu_count()} CPUs. Server log (JSON) written to a file. Latencies are wrk's, "
        "per request, closed loop.\n"
    )
    print(
        f"Plan request (a): `{post_body.decode()}`; (b): the same plan as "
        f"`GET /v1/plan?{urllib.parse.urlencode(PLAN_QUERY)}`.\n"
    )
    if extra_env:
        settings = ", ".join(f"`{k}={v}`" for k, v in sorted(extra_env.items()))
        print(f"Extra server settings for every run: {settings}.\n")
    for note in notes:
        print(f"- {note}")
    print()
    if rows:
        print_tables(rows)
    failed = [r for r in rows if r.verdict != "ok"]
    return 1 if failed else 0


def _facts(facts: Mapping[str, str]) -> str:
    return (
        f"ready in {facts.get('ready_s', '?')} s; plan {facts.get('plan_id', '?')} "
        f"({facts.get('response_bytes', '?')} bytes of JSON), first POST X-Cache: "
        f"{facts.get('first_x_cache', '?')}, then hit for (a) and (b) before measuring"
    )


if __name__ == "__main__":
    sys.exit(main())
