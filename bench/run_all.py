"""Run every benchmark in ``bench/`` that prints figures and rewrite ``bench/RESULTS.md``.

``make bench`` calls this. Each script runs in its own process, one after another (never two at
once: they would share the CPUs), with its stdout captured (and echoed) and its stderr shown.
``bench/RESULTS.md`` gets the machine (CPU model, cores, RAM, Python, OS, date, git commit and
uncommitted files), then one section per benchmark: the exact command, how long it took, and
its printed output. The script's own title line is replaced by the section heading and its
other headings move one level down; output that is not markdown is kept in a code block.
Diagnostic lines the native HiGHS solver writes straight to stdout are left out and counted.
Before each benchmark it waits (``--max-wait``, default 600 s) until other processes leave the
CPUs mostly idle, and records how busy they were, so a concurrent test run is visible.

The served-throughput benchmark needs ``wrk``: when it is missing it is installed with apt when
this runs as root on a machine with apt-get, else the run stops and says how to install it.

Run: ``.venv/bin/python bench/run_all.py [--only NAME,...] [--output PATH] [--update]``. With
``--only``, results are printed and written only where ``--output`` says; with ``--update`` as
well, the sections of those benchmarks in ``bench/RESULTS.md`` are replaced in place (added at
the end when missing), each saying when and at which commit it was regenerated, and the rest of
the file is kept: regenerating one section takes that benchmark's time, not the whole run's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
HIGHS_NOISE = re.compile(r"^Highs\w*::")


@dataclass(frozen=True, slots=True)
class Bench:
    name: str
    title: str
    about: str
    args: tuple[str, ...] = ()
    timeout_s: int = 1800
    optional: bool = False  # skipped quietly when the script is absent
    timed: bool = True  # its figures are timings (wait for a quiet machine first)

    @property
    def script(self) -> Path:
        return ROOT / "bench" / f"{self.name}.py"


BENCHES = (
    Bench(
        "plan_latency",
        "Uncached plan latency and scaling",
        "The planner in-process, i.e. one plan-cache miss: performance model + MILP + "
        "assembly; *cold* = request shapes and SLO never seen before, so nothing is memoised; "
        "*warm* = recurring shapes with a new QPS.",
    ),
    Bench(
        "curve_sweep",
        "Uncached curve cost",
        "The cost-vs-load sweep (40 load points: the plan's own curve, then the whole chart "
        "with every single-type curve), the cost-vs-SLO curve and the per-GPU table, "
        "in-process, for one plan; target: a 40-point cost-vs-load curve within 1 s.",
    ),
    Bench(
        "estimate_speed",
        "Cost of one estimate",
        "CPU time per call; every call a new shape, so no memoisation.",
    ),
    Bench(
        "solver_scaling",
        "Fleet-solver scaling",
        "The MILP alone on catalog-shaped synthetic instances, as options and buckets grow "
        "(milliseconds, median and max over seeds).",
        timeout_s=900,
        optional=True,
    ),
    Bench(
        "served_throughput",
        "Served throughput: cached plans vs /healthz",
        "The production server (`gpuplan serve`, one worker) under `wrk` on loopback, both "
        "backends, default (INFO, JSON) logging and WARNING; target: cached POST /v1/plans at "
        "least half the requests/s of /healthz.",
    ),
    Bench(
        "memory_growth",
        "Server memory under distinct plans",
        "RSS of the production server (embedded default, in-process plan cache) while it "
        "solves 10,000 distinct plans, then an extension to 20,000.",
    ),
    Bench(
        "gpu_forward",
        "Kernel terms vs forward passes timed on a GPU",
        "The performance model's kernel time (its per-step and host costs set to zero, its "
        "per-layer latency kept) for decode and prefill steps timed on one NVIDIA H100 SXM and "
        "one NVIDIA H200 (`bench/gpu_forward.py measure`: random weights, CUDA graphs; "
        "committed as bench/data/gpu_forward_h100.csv and gpu_forward_h200.csv). Runs on the "
        "CPU from those measurements.",
        args=("compare", "bench/data/gpu_forward_h100.csv", "bench/data/gpu_forward_h200.csv"),
        timed=False,
    ),
    Bench(
        "accuracy",
        "Performance-model accuracy",
        "Predictions against measured data (held-out rows first).",
        timed=False,
    ),
)


# --------------------------------------------------------------------------- machine


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _first(pattern: str, text: str, default: str = "unknown") -> str:
    match = re.search(pattern, text, re.MULTILINE)
    return match.group(1).strip() if match else default


def _command_output(command: list[str], *, any_status: bool = False) -> str | None:
    """The first line ``command`` prints (stdout, else stderr), or None when it cannot run or
    fails (``any_status``: tools such as ``wrk --version`` that exit 1 after printing)."""
    if shutil.which(command[0]) is None:
        return None
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    if not text or (out.returncode != 0 and not any_status):
        return None
    return text.splitlines()[0].strip()


def machine() -> list[str]:
    cpuinfo = _read("/proc/cpuinfo")
    mem_kib = int(_first(r"^MemTotal:\s+(\d+)", _read("/proc/meminfo"), "0"))
    usable = len(os.sched_getaffinity(0))
    status = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain"],
        capture_output=True,
        text=True,
        check=False,
    )
    changed = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    commit = _command_output(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    loadavg = " ".join(_read("/proc/loadavg").split()[:3]) or "unknown"
    wrk = (_command_output(["wrk", "--version"], any_status=True) or "wrk missing").split(
        " Copyright"
    )[0]
    redis = _first(r"(v=[\d.]+)", _command_output(["redis-server", "--version"]) or "", "missing")
    cpu_model = _first(r"^model name\s*:\s*(.+)$", cpuinfo)
    os_name = _first(r'^PRETTY_NAME="?([^"]*)"?$', _read("/etc/os-release"))
    lines = [
        f"- Date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- CPU: {cpu_model}, {platform.machine()}, "
        f"{os.cpu_count()} cores ({usable} usable by this process)",
        f"- RAM: {mem_kib / 1024 / 1024:.1f} GiB",
        f"- OS: {os_name}, kernel {platform.release()}",
        f"- Python: {platform.python_implementation()} {platform.python_version()} "
        f"(`{_rel(sys.executable)}`)",
        f"- Load average before the run (1, 5, 15 min): {loadavg}",
        f"- Load generator: {wrk}",
        f"- Postgres client: {_command_output(['psql', '--version']) or 'psql missing'}; "
        f"Redis: {redis}",
        f"- Code: commit {commit or 'unknown'}"
        + (
            f", with uncommitted changes to {len(changed)} path(s): "
            + ", ".join(f"`{c}`" for c in changed)
            if changed
            else ", no uncommitted changes"
        ),
    ]
    return lines


def _rel(path: str | Path) -> str:
    p = Path(path)
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


# --------------------------------------------------------------------------- wrk


def ensure_wrk() -> None:
    """Install ``wrk`` with apt when missing and possible; else stop with what to do."""
    if shutil.which("wrk") is not None:
        return
    if os.geteuid() == 0 and shutil.which("apt-get") is not None:
        print("run_all: wrk is missing; installing it with apt-get", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False, env=env)
        if shutil.which("wrk") is not None:
            return
        raise SystemExit("run_all: `apt-get install -y wrk` did not install wrk; install it")
    raise SystemExit(
        "run_all: the served-throughput benchmark needs wrk (https://github.com/wg/wrk), which is "
        "not installed. Install it (`sudo apt-get install wrk`, `brew install wrk`) and run "
        "`make bench` again, or run the others with --only."
    )


# --------------------------------------------------------------------------- running

QUIET_BUSY = 0.10  # machine "quiet": under 10 % of all CPUs busy (other processes)


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies over all CPUs from /proc/stat."""
    fields = [int(x) for x in _read("/proc/stat").splitlines()[0].split()[1:9]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields)
    return total - idle, total


def cpu_busy(interval_s: float = 2.0) -> float | None:
    """Share of all CPUs busy over ``interval_s`` while this script sleeps (other load)."""
    try:
        busy0, total0 = _cpu_times()
        time.sleep(interval_s)
        busy1, total1 = _cpu_times()
    except (IndexError, ValueError):
        return None
    return (busy1 - busy0) / max(1, total1 - total0)


def wait_until_quiet(max_wait_s: float) -> float | None:
    """Wait (up to ``max_wait_s``) until other processes leave the CPUs mostly idle, so that a
    benchmark does not share them; returns the last measured busy share."""
    deadline = time.monotonic() + max_wait_s
    busy = cpu_busy()
    while busy is not None and busy > QUIET_BUSY and time.monotonic() < deadline:
        print(
            f"run_all: other processes keep {busy:.0%} of the CPUs busy; waiting",
            file=sys.stderr,
        )
        time.sleep(10)
        busy = cpu_busy()
    return busy


@dataclass(frozen=True, slots=True)
class Outcome:
    bench: Bench
    command: str
    returncode: int | None  # None: timed out
    seconds: float
    stdout: str
    noise_lines: int
    busy_before: float | None


def run_bench(bench: Bench, max_wait_s: float) -> Outcome:
    command = [sys.executable, _rel(bench.script), *bench.args]
    shown = " ".join([_rel(sys.executable), *command[1:]])
    busy = wait_until_quiet(max_wait_s) if bench.timed else None
    print(f"\n=== {bench.name}: {shown}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    kept: list[str] = []
    noise = 0
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        proc.terminate()

    watchdog = threading.Timer(bench.timeout_s, stop)
    watchdog.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if HIGHS_NOISE.match(line):
                noise += 1
                continue
            kept.append(line)
            sys.stderr.write(line)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
    finally:
        watchdog.cancel()
    returncode: int | None = None if timed_out.is_set() else code
    return Outcome(
        bench=bench,
        command=shown,
        returncode=returncode,
        seconds=time.perf_counter() - started,
        stdout="".join(kept),
        noise_lines=noise,
        busy_before=busy,
    )


def section(outcome: Outcome) -> str:
    bench = outcome.bench
    parts = [f"## {bench.title}\n\n", f"{bench.about}\n\n", f"Command: `{outcome.command}`"]
    status = (
        f"did NOT finish within {bench.timeout_s} s (stopped)"
        if outcome.returncode is None
        else f"exit status {outcome.returncode}"
    )
    parts.append(f" ({status}, {outcome.seconds:.0f} s).")
    if outcome.busy_before is not None:
        parts.append(
            f" CPUs busy with other processes just before it started: "
            f"{outcome.busy_before:.0%}"
            + (" (NOT quiet: figures may be low)." if outcome.busy_before > QUIET_BUSY else ".")
        )
    if outcome.noise_lines:
        parts.append(
            f" {outcome.noise_lines} diagnostic line(s) written to stdout by the native HiGHS "
            "solver (`Highs...::...`) are left out."
        )
    parts.append("\n\n")
    parts.append(render_output(outcome.stdout))
    return "".join(parts).rstrip() + "\n"


def render_output(text: str) -> str:
    lines = text.rstrip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    while lines and not lines[0].strip():
        lines = lines[1:]
    if not lines:
        return "(no output)\n"
    if not any(line.startswith("|") for line in lines):
        return "```text\n" + "\n".join(lines) + "\n```\n"
    return "\n".join("#" + line if line.startswith("#") else line for line in lines) + "\n"


def document(machine_lines: list[str], outcomes: list[Outcome]) -> str:
    head = [
        "# Benchmark results\n",
        "Written by `make bench` (`.venv/bin/python bench/run_all.py`), which runs every "
        "benchmark below one after another and copies its printed output here under the exact "
        "command. Do not edit by hand: re-run it. Figures come from the run described here.\n",
        "Machine for this run:\n",
        "\n".join(machine_lines) + "\n",
    ]
    return "\n".join(head) + "\n" + "\n".join(section(o) for o in outcomes)


def update_sections(text: str, outcomes: list[Outcome], machine_lines: list[str]) -> str:
    """``text`` (a RESULTS.md) with the section of each outcome replaced by the new one (added
    at the end when missing); each new section names the run it comes from (date, commit)."""
    date = machine_lines[0].removeprefix("- Date: ")
    code = machine_lines[-1].removeprefix("- Code: ")
    for outcome in outcomes:
        new = section(outcome)
        heading, rest = new.split("\n", 1)
        new = f"{heading}\n\nRegenerated alone ({date}; {code}).\n{rest}"
        start = text.find(f"\n{heading}\n")
        if start < 0:
            text = text.rstrip() + "\n\n" + new
            continue
        following = text.find("\n## ", start + len(heading) + 1)
        end = len(text) if following < 0 else following
        text = text[: start + 1] + new + ("\n" if following >= 0 else "") + text[end + 1 :]
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=None, help="comma-separated benchmark names")
    parser.add_argument("--output", type=Path, default=None, help=f"default {_rel(RESULTS)}")
    parser.add_argument(
        "--max-wait",
        type=float,
        default=600,
        help="seconds to wait for other CPU load to stop before each benchmark",
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help=f"with --only: replace those sections of {_rel(RESULTS)} in place",
    )
    args = parser.parse_args()
    if args.update and (not args.only or args.output):
        parser.error("--update replaces sections of bench/RESULTS.md: give --only, not --output")
    selected = list(BENCHES)
    if args.only:
        wanted = {n.strip() for n in args.only.split(",") if n.strip()}
        unknown = wanted - {b.name for b in BENCHES}
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
        selected = [b for b in BENCHES if b.name in wanted]
    output: Path | None = args.output if args.output or args.only else RESULTS
    selected = [b for b in selected if b.script.exists() or not b.optional]
    if any(b.name == "served_throughput" for b in selected):
        ensure_wrk()

    machine_lines = machine()
    outcomes = [run_bench(b, args.max_wait) for b in selected]
    text = document(machine_lines, outcomes)
    if args.update:
        output = RESULTS
        text = update_sections(RESULTS.read_text(encoding="utf-8"), outcomes, machine_lines)
    if output is not None:
        tmp = output.with_suffix(output.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(output)
        print(f"\nrun_all: wrote {_rel(output)}", file=sys.stderr)
    else:
        print(text)
    failed = [o.bench.name for o in outcomes if o.returncode != 0]
    if failed:
        print(f"run_all: not clean: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
