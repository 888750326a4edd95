"""Accuracy of the performance model against measured data, as markdown tables.

Usage::

    .venv/bin/python bench/accuracy.py            # held-out split, all rows, validation points
    .venv/bin/python bench/accuracy.py > accuracy.md

Sections:

1. calibration.csv, HELD-OUT rows (shapes the fit never saw; the honest figure);
2. calibration.csv, ALL used rows (training + held out);
3. rows left out of the fit (pipeline parallel, ShareGPT) and why;
4. validation points (bench/validation_points.csv): published figures never used by the fit,
   predicted with the product's public ``trtllm`` engine profile under Poisson load (``qps``).

Per metric (peak throughput, TTFT, TPOT) and GPU: number of points, median and mean absolute
percentage error, share within 25 %, and signed bias (median of predicted / measured - 1).
"""

from __future__ import annotations

import csv
import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._calibration_data import (  # noqa: E402
    Row,
    held_out,
    load_gpus,
    load_rows,
    predict,
)
from service.domain.llm import resolve_model  # noqa: E402
from service.domain.perfmodel import Deployment, RequestShape, estimate  # noqa: E402
from service.domain.perfmodel.calibration import default_calibration  # noqa: E402
from service.domain.perfmodel.constants import FIT_REPORT  # noqa: E402

VALIDATION_CSV = ROOT / "bench" / "validation_points.csv"
METRIC_LABEL = {
    "throughput": "peak throughput",
    "throughput_at_c": "throughput at fixed concurrency",
    "ttft": "TTFT",
    "tpot": "TPOT",
}


def _stats(pairs: Sequence[tuple[float, float]]) -> tuple[int, float, float, float, float]:
    """(n, median APE, mean APE, share within 25 %, median signed bias)."""
    ratios = [p / m if math.isfinite(p) and p > 0 else 0.0 for p, m in pairs]
    apes = [abs(r - 1.0) for r in ratios]
    return (
        len(pairs),
        statistics.median(apes),
        statistics.fmean(apes),
        sum(1 for a in apes if a <= 0.25) / len(apes),
        statistics.median(ratios) - 1.0,
    )


def _table(title: str, groups: dict[tuple[str, str], list[tuple[float, float]]]) -> list[str]:
    out = [
        f"### {title}",
        "",
        "| metric | GPU | n | median APE | mean APE | within 25% | bias (median pred/meas - 1) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    metrics = sorted({m for m, _ in groups}, key=lambda m: list(METRIC_LABEL).index(m))
    for metric in metrics:
        pairs_all = [p for (m, _), v in groups.items() if m == metric for p in v]
        rows = sorted((g, v) for (m, g), v in groups.items() if m == metric)
        for gpu, pairs in [("**all**", pairs_all), *rows]:
            n, med, mean, w25, bias = _stats(pairs)
            out.append(
                f"| {METRIC_LABEL[metric]} | {gpu} | {n} | {med:.1%} | {mean:.1%} | "
                f"{w25:.0%} | {bias:+.1%} |"
            )
    out.append("")
    return out


def _group(
    rows: Iterable[Row], preds: dict[int, float]
) -> dict[tuple[str, str], list[tuple[float, float]]]:
    groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in rows:
        metric = "throughput_at_c" if r.metric == "throughput" and r.kind != "peak" else r.metric
        groups.setdefault((metric, r.gpu_id), []).append((preds[r.index], r.value))
    return groups


def _targets(rows: Sequence[Row], preds: dict[int, float], label: str) -> list[str]:
    peak = [r for r in rows if r.kind == "peak"]
    med = _stats([(preds[r.index], r.value) for r in peak])[1]
    worst = []
    for gpu in sorted({r.gpu_id for r in peak}):
        sel = [r for r in peak if r.gpu_id == gpu]
        if len(sel) >= 20:
            worst.append((gpu, len(sel), _stats([(preds[r.index], r.value) for r in sel])[1]))
    lat = [r for r in rows if r.metric in ("ttft", "tpot")]
    lat_med = _stats([(preds[r.index], r.value) for r in lat])[1] if lat else float("nan")
    per = {
        m: _stats([(preds[r.index], r.value) for r in lat if r.metric == m])[1]
        for m in ("ttft", "tpot")
        if any(r.metric == m for r in lat)
    }
    w_gpu, w_n, w_med = max(worst, key=lambda x: x[2])
    return [
        f"- {label}: peak-throughput median APE **{med:.1%}** over {len(peak)} rows "
        f"(target <= 15%); worst GPU with >= 20 rows: {w_gpu} {w_med:.1%} over {w_n} "
        f"(target <= 30%); latency rows median APE **{lat_med:.1%}** over {len(lat)} "
        f"(TTFT {per.get('ttft', float('nan')):.1%}, TPOT {per.get('tpot', float('nan')):.1%}; "
        "target <= 25%)",
    ]


def _validation() -> list[str]:
    if not VALIDATION_CSV.exists():
        return []
    gpus = load_gpus()
    good: dict[tuple[str, str], list[tuple[float, float]]] = {}
    saturated: list[str] = []
    lines = ["## 4. Validation points (never used by the fit)", ""]
    with VALIDATION_CSV.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    sources = sorted({r["source"] for r in rows})
    for r in rows:
        model = resolve_model(r["model"]).arch
        dep = Deployment(
            gpus[r["gpu"]], int(r["tp"]), r["precision"], r["kv_precision"], r["engine"]
        )  # type: ignore[arg-type]
        shape = RequestShape(int(r["input_len"]), int(r["output_len"]))
        offered, achieved = float(r["offered_qps"]), float(r["achieved_rps"])
        est = estimate(model, dep, shape, qps=offered)
        metric = {
            "ttft_ms_mean": "ttft",
            "tpot_ms_mean": "tpot",
            "output_tokens_per_s": "throughput",
        }[r["metric"]]
        value = float(r["value"])
        if achieved < 0.9 * offered:
            if metric == "ttft":
                verdict = (
                    "overloaded" if est.reason else f"not overloaded, TTFT {est.ttft_ms:.0f} ms"
                )
                saturated.append(
                    f"{model.id} {r['gpu']} TP{r['tp']} "
                    f"{shape.prompt_tokens}/{shape.output_tokens} at {offered:g} qps "
                    f"(achieved {achieved:g}): model {verdict}"
                )
            continue
        if metric == "throughput":
            continue  # at an unsaturated offered rate this is the offered rate: nothing to test
        pred = est.ttft_ms if metric == "ttft" else est.tpot_ms
        good.setdefault((metric, r["gpu"]), []).append((pred, value))
    lines.append(
        "Published serving measurements under a request rate, predicted with the product's public "
        "`trtllm` engine profile and `estimate(..., qps=offered)` (means). Points where the "
        "server did not keep up (achieved < 0.9 x offered) are listed separately. Sources:"
    )
    lines += [f"- {s}" for s in sources]
    lines.append("")
    lines += _table("Unsaturated points (achieved >= 0.9 x offered)", good)
    lines.append("Saturated points (the source's server fell behind the offered rate):")
    lines += [f"- {s}" for s in saturated] or ["- none"]
    lines.append("")
    return lines


def main() -> int:
    gpus = load_gpus()
    cal = default_calibration()
    rows = load_rows()
    used = [r for r in rows if r.used]
    preds = {r.index: predict(r, gpus, cal) for r in used}
    test = [r for r in used if held_out(r)]
    out = ["# Performance-model accuracy", ""]
    fit_date = FIT_REPORT.get("n_params")
    out.append(
        f"Constants: service/domain/perfmodel/constants.py ({fit_date} fitted parameters, "
        f"{FIT_REPORT.get('n_train')} training rows). APE = |predicted / measured - 1|."
    )
    out.append("")
    out.append("## Headline (targets of the issue)")
    out.append("")
    out += _targets(test, preds, "held-out rows")
    out += _targets(used, preds, "all used rows")
    out.append("")
    out.append("## 1. calibration.csv, held-out rows")
    out.append("")
    out.append(
        "A deterministic quarter of (model, prompt length, output length) shapes, chosen by "
        "SHA-256 of the shape key, is never seen by the fit."
    )
    out.append("")
    out += _table(f"Held out ({len(test)} rows)", _group(test, preds))
    out.append("## 2. calibration.csv, all used rows")
    out.append("")
    out += _table(f"All used rows ({len(used)})", _group(used, preds))
    out.append("## 3. Rows not used")
    out.append("")
    pp = [r for r in rows if r.kind == "pp"]
    sg = [r for r in rows if r.kind == "sharegpt"]
    out.append(
        f"- {len(pp)} pipeline-parallel rows (gpu_count > tp; all RTX PRO 6000, TRT-LLM v1.0): "
        "the model has no pipeline parallelism."
    )
    out.append(
        f"- {len(sg)} LMDeploy ShareGPT rows: variable request lengths whose prompt mean is not "
        "in the CSV."
    )
    out.append("")
    out += _validation()
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
