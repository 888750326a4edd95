"""Did a refit help? The leave-one-source-out errors of two fits, side by side.

``bench/calibrate.py`` writes its held-out errors into ``constants.py`` (``FIT_REPORT``:
``loso`` per engine and metric, ``loso_by_gpu`` per engine, metric and GPU). This reads two such
files and prints, as markdown:

* the team's targets (``bench/accuracy.py`` ``TARGETS``) per engine and metric: the median APE
  before and after, and which targets each fit meets;
* per engine, the row-weighted mean of the per-GPU median APEs over every metric (one number
  that a change confined to a few rows cannot move much);
* every engine, metric and GPU cell whose median APE moved by at least ``--min-change``;
* the constants every engine shares (top-level numbers, each GPU group's efficiencies).

A fit is named by a path to a ``constants.py`` or by ``git:REV`` (the file as committed at
``REV``). Default: the committed fit (``git:HEAD``) against the working tree's.

Run: ``PYTHONPATH=. .venv/bin/python bench/fit_diff.py [OLD [NEW]] [--min-change 0.03]``; after
a refit in another worktree, e.g. ``bench/fit_diff.py git:HEAD
../other/service/domain/perfmodel/constants.py``.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.accuracy import METRIC_LABEL, TARGET_ENGINES, TARGETS

ROOT = Path(__file__).resolve().parents[1]
CONSTANTS = "service/domain/perfmodel/constants.py"

Report = Mapping[str, Any]


def load(source: str) -> dict[str, Any]:
    """The names the ``constants.py`` that ``source`` names (a path or ``git:REV``) defines."""
    if source.startswith("git:"):
        text = subprocess.run(
            ["git", "show", f"{source[4:]}:{CONSTANTS}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    else:
        text = Path(source).read_text(encoding="utf-8")
    names: dict[str, Any] = {}
    for node in ast.parse(text, source).body:  # a generated module of literals
        if isinstance(node, ast.AnnAssign | ast.Assign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names[target.id] = ast.literal_eval(node.value)
    return names


def shared_constants(fitted: Mapping[str, Any]) -> dict[str, float]:
    """The fit's constants shared by every engine: the top-level numbers and each GPU group's
    efficiencies (``group.eta_m``)."""
    out = {k: float(v) for k, v in fitted.items() if isinstance(v, int | float)}
    for group, effs in fitted.get("groups", {}).items():
        for k, v in effs.items():
            out[f"{group}.{k}"] = float(v)
    return dict(sorted(out.items()))


@dataclass(frozen=True, slots=True)
class Cell:
    """One engine x metric (x GPU) of both fits: median APE (NaN where a fit has no rows)."""

    engine: str
    metric: str
    gpu: str
    rows: int
    old: float
    new: float

    @property
    def change(self) -> float:
        return self.new - self.old


def _ape(stats: Mapping[str, float] | None) -> float:
    return float(stats["median_ape"]) if stats else float("nan")


def target_cells(old: Report, new: Report) -> list[Cell]:
    """The targeted engine x metric pairs, in ``TARGET_ENGINES`` x ``TARGETS`` order."""
    out = []
    for eng in TARGET_ENGINES:
        for metric in TARGETS:
            a = old["loso"].get(eng, {}).get(metric)
            b = new["loso"].get(eng, {}).get(metric)
            rows = int((b or a or {}).get("n", 0))
            out.append(Cell(eng, metric, "", rows, _ape(a), _ape(b)))
    return out


def gpu_cells(old: Report, new: Report) -> list[Cell]:
    """Every engine x metric x GPU cell both fits scored, sorted."""
    out = []
    a_all, b_all = old["loso_by_gpu"], new["loso_by_gpu"]
    for eng in sorted(set(a_all) & set(b_all)):
        for metric in sorted(set(a_all[eng]) & set(b_all[eng])):
            a_m, b_m = a_all[eng][metric], b_all[eng][metric]
            for gpu in sorted(set(a_m) & set(b_m)):
                rows = int(b_m[gpu]["n"])
                out.append(Cell(eng, metric, gpu, rows, _ape(a_m[gpu]), _ape(b_m[gpu])))
    return out


def weighted(cells: Sequence[Cell]) -> dict[str, tuple[int, float, float]]:
    """Per engine: rows, and the row-weighted mean of the cells' median APEs, old and new."""
    sums: dict[str, list[float]] = {}
    for c in cells:
        s = sums.setdefault(c.engine, [0.0, 0.0, 0.0])
        s[0] += c.rows
        s[1] += c.rows * c.old
        s[2] += c.rows * c.new
    return {e: (int(n), a / n, b / n) for e, (n, a, b) in sorted(sums.items()) if n}


def _pct(x: float) -> str:
    return "-" if x != x else f"{x:.1%}"


def report(old_fit: Mapping[str, Any], new_fit: Mapping[str, Any], min_change: float) -> str:
    """The markdown comparison of two ``constants.py`` namespaces (see the module docstring)."""
    old: Report = old_fit["FIT_REPORT"]
    new: Report = new_fit["FIT_REPORT"]
    lines = [
        "## Targets (leave-one-source-out median APE)",
        "",
        "| engine | metric | rows | old | new | target | old meets | new meets |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    met = [0, 0]
    for c in target_cells(old, new):
        limit = TARGETS[c.metric]
        flags = [c.old <= limit, c.new <= limit]
        met = [m + f for m, f in zip(met, flags, strict=True)]
        yes = ["yes" if f else "no" for f in flags]
        lines.append(
            f"| {c.engine} | {METRIC_LABEL[c.metric]} | {c.rows} | {_pct(c.old)} | "
            f"{_pct(c.new)} | {limit:.0%} | {yes[0]} | {yes[1]} |"
        )
    lines += ["", f"Targets met: {met[0]} before, {met[1]} after.", ""]
    cells = gpu_cells(old, new)
    lines += [
        "## Per engine (row-weighted mean of the per-GPU median APEs, every metric)",
        "",
        "| engine | rows | old | new |",
        "| --- | ---: | ---: | ---: |",
    ]
    per = weighted(cells)
    for eng, (rows, a, b) in per.items():
        lines.append(f"| {eng} | {rows} | {_pct(a)} | {_pct(b)} |")
    everything = weighted([Cell("all", c.metric, c.gpu, c.rows, c.old, c.new) for c in cells])
    for _, (rows, a, b) in everything.items():
        lines.append(f"| **all** | {rows} | {_pct(a)} | {_pct(b)} |")
    moved = [c for c in cells if abs(c.change) >= min_change]
    lines += [
        "",
        f"## Cells that moved by {min_change:.0%} or more",
        "",
        "| engine | metric | GPU | rows | old | new |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for c in moved:
        lines.append(
            f"| {c.engine} | {METRIC_LABEL.get(c.metric, c.metric)} | {c.gpu} | {c.rows} | "
            f"{_pct(c.old)} | {_pct(c.new)} |"
        )
    if not moved:
        lines.append("| (none) | | | | | |")
    before, after = shared_constants(old_fit["FITTED"]), shared_constants(new_fit["FITTED"])
    lines += [
        "",
        "## Constants every engine shares",
        "",
        "| constant | old | new |",
        "| --- | ---: | ---: |",
    ]
    for k in sorted(set(before) | set(after)):
        x, y = before.get(k, float("nan")), after.get(k, float("nan"))
        lines.append(f"| {k} | {x:.4g} | {y:.4g} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("old", nargs="?", default="git:HEAD", help="constants.py path or git:REV")
    ap.add_argument("new", nargs="?", default=str(ROOT / CONSTANTS), help="likewise")
    ap.add_argument("--min-change", type=float, default=0.03, help="APE change listed per GPU")
    args = ap.parse_args(argv)
    print(report(load(args.old), load(args.new), args.min_change))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
