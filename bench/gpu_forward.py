"""Time a dense transformer's forward pass on a real GPU, to check the performance model's
kernel terms (weight streaming, GEMM compute, KV reads, prefill attention) against hardware.

Two halves, so the GPU half needs nothing but PyTorch:

* ``python -m bench.gpu_forward shapes > shapes.json`` (here): the architectures and weight
  formats of :data:`MODELS`, from gpuplan's presets.
* ``python3 bench/gpu_forward.py measure shapes.json out.csv`` (on a machine with a CUDA GPU
  and PyTorch): builds each model layer by layer with random weights (each layer its own
  tensors, so no layer is served from L2), captures one forward step in a CUDA graph (no
  launch gaps, as engines run decode) and times its replays with CUDA events. Decode steps
  read a KV cache of ``context`` tokens per sequence (grouped-query attention as engines run
  it: the query heads of one KV head attend together, so each KV head is read once); prefill
  steps run one causal prompt. Weights are BF16, or FP8 (E4M3) in the linear layers: each
  activation cast to FP8 and a scaled FP8 GEMM (``torch._scaled_mm``, rows padded to 16),
  which at a few rows is slower than the engines' FP8 kernels. First the card's ceilings: a
  4 GB copy and a 4 GB sum (bandwidth), 8192^3 GEMMs in BF16 and FP8. Each row is written as
  soon as it is measured.

What it leaves out, on purpose: rotary embeddings, KV-cache writes and sampling (a few
element-wise kernels, under 2% of a step), the serving engine's scheduler and host work (the
model's ``oh_step``/``cpu_seq`` terms), fused kernels an engine may use. So the times are
close to what an engine's kernels take, not what a served request sees.

* ``python -m bench.gpu_forward compare bench/data/gpu_forward_h100.csv
  bench/data/gpu_forward_h200.csv`` (here, CPU only; ``bench/run_all.py`` runs it): per
  card, the model's step time for each measured row with its fixed per-step and host costs
  set to zero (its per-layer latency kept), next to the measurement
  (``bench/gpu_forward_compare.py``).
"""

from __future__ import annotations

import csv
import importlib
import json
import statistics
import sys
from pathlib import Path
from typing import Any

MODELS = (
    ("llama-3.1-8b", "bf16"),
    ("qwen3-32b", "bf16"),
    ("llama-3.1-8b", "fp8"),
    ("llama-3.1-70b", "fp8"),
)
DECODE_BATCHES = (1, 16, 64, 256)
DECODE_CONTEXTS = (512, 2048)
PREFILL_LENGTHS = (128, 512, 2048, 8192)
MEMORY_BUDGET_BYTES = 118e9
# Left free for activations, CUDA graph pools and the allocator on smaller cards.
MEMORY_RESERVE_BYTES = 8e9
REPLAYS = 30
FIELDS = (
    "gpu",
    "model",
    "precision",
    "phase",
    "batch",
    "tokens",
    "context",
    "ms",
    "ms_spread",
    "note",
)


def shapes() -> list[dict[str, Any]]:
    """Architectures of :data:`MODELS` (dense, grouped-query attention) from the presets."""
    from service.domain.llm.presets import PRESETS

    out = []
    for mid, precision in MODELS:
        m = PRESETS[mid]
        out.append(
            {
                "id": m.id,
                "precision": precision,
                "layers": m.n_layers,
                "hidden": m.hidden_size,
                "heads": m.n_heads,
                "kv_heads": m.n_kv_heads,
                "head_dim": m.head_dim,
                "ffn": m.ffn_size,
                "vocab": m.vocab_size,
            }
        )
    return out


# ---- GPU half: PyTorch only (imported lazily; gpuplan does not depend on it) ---------------


def _timed(torch: Any, fn: Any) -> tuple[float, float]:
    """Median and spread (max - min) in ms of :data:`REPLAYS` replays of a captured graph."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPLAYS):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    del graph
    return statistics.median(times), max(times) - min(times)


class _Model:
    """Random weights of one dense GQA transformer, one tensor set per layer: BF16, or FP8
    (E4M3) linear layers as engines run FP8 checkpoints (each activation cast to FP8, a
    scaled FP8 GEMM with BF16 output; norms, attention and the LM head in BF16)."""

    def __init__(self, torch: Any, a: dict[str, Any]) -> None:
        self.torch = torch
        self.a = a
        self.fp8 = a.get("precision", "bf16") == "fp8"
        h, d = a["hidden"], a["head_dim"]
        qkv = (a["heads"] + 2 * a["kv_heads"]) * d
        self.one = torch.ones((), device="cuda", dtype=torch.float32)

        def w(rows: int, cols: int) -> Any:
            return torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16) * 0.02

        def lin(k: int, n: int) -> Any:
            if not self.fp8:
                return w(k, n)
            # stored (n, k) row-major: the column-major (k, n) operand the FP8 GEMM wants
            return w(n, k).to(torch.float8_e4m3fn).t()

        self.layers = [
            {
                "qkv": lin(h, qkv),
                "o": lin(a["heads"] * d, h),
                "gate_up": lin(h, 2 * a["ffn"]),
                "down": lin(a["ffn"], h),
                "n1": torch.ones(h, device="cuda", dtype=torch.bfloat16),
                "n2": torch.ones(h, device="cuda", dtype=torch.bfloat16),
            }
            for _ in range(a["layers"])
        ]
        self.head = w(h, a["vocab"])

    def weight_bytes(self) -> float:
        per = sum(t.numel() * t.element_size() for t in self.layers[0].values())
        return float(per * len(self.layers) + self.head.numel() * 2)

    def _mm(self, x: Any, wt: Any) -> Any:
        if not self.fp8:
            return x @ wt
        torch = self.torch
        m = x.shape[0]
        if m % 16:  # the FP8 GEMM takes rows in multiples of 16
            x = torch.nn.functional.pad(x, (0, 0, 0, 16 - m % 16))
        xq = x.to(torch.float8_e4m3fn)
        y = torch._scaled_mm(xq, wt, scale_a=self.one, scale_b=self.one, out_dtype=torch.bfloat16)
        return y[:m]

    def _mlp(self, x: Any, lay: dict[str, Any]) -> Any:
        f = self.torch.nn.functional
        y = f.rms_norm(x, (x.shape[-1],), lay["n2"])
        g, u = self._mm(y, lay["gate_up"]).chunk(2, dim=-1)
        return x + self._mm(f.silu(g) * u, lay["down"])

    def decode(self, x: Any, caches: list[tuple[Any, Any]]) -> Any:
        """One decode step of ``x.shape[0]`` sequences over their cached contexts."""
        f = self.torch.nn.functional
        a = self.a
        b, nh, nkv, d = x.shape[0], a["heads"], a["kv_heads"], a["head_dim"]
        g = nh // nkv
        for lay, (k, v) in zip(self.layers, caches, strict=True):
            y = f.rms_norm(x, (x.shape[-1],), lay["n1"])
            qkv = self._mm(y, lay["qkv"])
            q = qkv[:, : nh * d].reshape(b, nkv, g, d)
            o = f.scaled_dot_product_attention(q, k, v)
            x = x + self._mm(o.reshape(b, nh * d), lay["o"])
            x = self._mlp(x, lay)
        return f.rms_norm(x, (x.shape[-1],)) @ self.head

    def prefill(self, x: Any) -> Any:
        """One causal prompt of ``x.shape[0]`` tokens; logits of its last token."""
        f = self.torch.nn.functional
        a = self.a
        n, nh, nkv, d = x.shape[0], a["heads"], a["kv_heads"], a["head_dim"]
        for lay in self.layers:
            y = f.rms_norm(x, (x.shape[-1],), lay["n1"])
            qkv = self._mm(y, lay["qkv"])
            q = qkv[:, : nh * d].reshape(n, nh, d).transpose(0, 1).unsqueeze(0)
            k = qkv[:, nh * d : (nh + nkv) * d].reshape(n, nkv, d).transpose(0, 1).unsqueeze(0)
            v = qkv[:, (nh + nkv) * d :].reshape(n, nkv, d).transpose(0, 1).unsqueeze(0)
            # Each KV head repeated for its query heads: a copy of a few MB, so that the
            # fused (flash) kernel runs whatever this PyTorch supports for grouped queries.
            k = k.repeat_interleave(nh // nkv, dim=1)
            v = v.repeat_interleave(nh // nkv, dim=1)
            o = f.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self._mm(o.squeeze(0).transpose(0, 1).reshape(n, nh * d), lay["o"])
            x = self._mlp(x, lay)
        return f.rms_norm(x[-1:], (x.shape[-1],)) @ self.head


def _ceilings(torch: Any, gpu: str) -> list[dict[str, Any]]:
    """The card's ceilings: HBM bandwidth (a 4 GB copy, read + write, and a 4 GB sum, read
    only) and dense GEMM throughput (8192^3, BF16 and FP8)."""
    rows = []
    src = torch.empty(int(4e9) // 2, device="cuda", dtype=torch.bfloat16).normal_()
    dst = torch.empty_like(src)
    acc = torch.empty((), device="cuda", dtype=torch.float32)
    ms, sp = _timed(torch, lambda d=dst, s=src: d.copy_(s))
    gbs = 2 * src.numel() * 2 / (ms / 1e3) / 1e9
    rows.append(_row(gpu, "-", "bf16", "copy", 0, 0, 0, ms, sp, f"4 GB copy: {gbs:.0f} GB/s"))
    ms, sp = _timed(torch, lambda s=src, o=acc: torch.sum(s, dim=0, dtype=torch.float32, out=o))
    gbs = src.numel() * 2 / (ms / 1e3) / 1e9
    rows.append(_row(gpu, "-", "bf16", "read", 0, 0, 0, ms, sp, f"4 GB sum: {gbs:.0f} GB/s"))
    del src, dst
    n = 8192
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    ms, sp = _timed(torch, lambda: torch.matmul(x, y, out=out))
    tf = 2 * n**3 / (ms / 1e3) / 1e12
    rows.append(_row(gpu, "-", "bf16", "gemm", 0, n, 0, ms, sp, f"{n}^3 GEMM: {tf:.0f} TFLOP/s"))
    xq = x.to(torch.float8_e4m3fn)
    yq = y.t().contiguous().to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda", dtype=torch.float32)

    def fp8() -> Any:
        return torch._scaled_mm(xq, yq, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    ms, sp = _timed(torch, fp8)
    tf = 2 * n**3 / (ms / 1e3) / 1e12
    rows.append(_row(gpu, "-", "fp8", "gemm", 0, n, 0, ms, sp, f"{n}^3 GEMM: {tf:.0f} TFLOP/s"))
    return rows


def _row(
    gpu: str,
    model: str,
    precision: str,
    phase: str,
    batch: int,
    tokens: int,
    ctx: int,
    ms: float,
    sp: float,
    note: str,
) -> dict[str, Any]:
    return {
        "gpu": gpu, "model": model, "precision": precision, "phase": phase, "batch": batch,
        "tokens": tokens, "context": ctx, "ms": f"{ms:.4f}", "ms_spread": f"{sp:.4f}", "note": note,
    }  # fmt: skip


def measure(spec_path: str, out_path: str) -> None:
    torch: Any = importlib.import_module("torch")
    attention: Any = importlib.import_module("torch.nn.attention")
    torch.manual_seed(0)
    # Fused attention kernels only (FlashAttention or memory-efficient), as engines run: an
    # error here beats a silent fall-back to the unfused reference implementation.
    fused = attention.sdpa_kernel(
        [attention.SDPBackend.FLASH_ATTENTION, attention.SDPBackend.EFFICIENT_ATTENTION]
    )
    name = torch.cuda.get_device_name(0)
    gpu = name
    budget = min(
        MEMORY_BUDGET_BYTES,
        torch.cuda.get_device_properties(0).total_memory - MEMORY_RESERVE_BYTES,
    )
    meta = f"torch {torch.__version__}, CUDA graph replays, median of {REPLAYS}"
    fh = open(out_path, "w", newline="")  # noqa: SIM115 (written row by row, closed below)
    wr = csv.DictWriter(fh, fieldnames=FIELDS)
    wr.writeheader()

    def emit(row: dict[str, Any]) -> None:
        """Keep a row as soon as it is measured: a later failure loses only what follows."""
        wr.writerow(row)
        fh.flush()
        print(row, flush=True)

    for r in _ceilings(torch, gpu):
        emit(r)
    with torch.inference_mode(), fused:
        for a in json.loads(Path(spec_path).read_text()):
            model = _Model(torch, a)
            wb = model.weight_bytes()
            h, nkv, d = a["hidden"], a["kv_heads"], a["head_dim"]
            for n in PREFILL_LENGTHS:
                x = torch.randn(n, h, device="cuda", dtype=torch.bfloat16)
                ms, sp = _timed(torch, lambda m=model, x=x: m.prefill(x))
                emit(_row(gpu, a["id"], a["precision"], "prefill", 0, n, 0, ms, sp, meta))
            for ctx in DECODE_CONTEXTS:
                for b in DECODE_BATCHES:
                    kv = 2 * a["layers"] * b * nkv * ctx * d * 2
                    if wb + kv > budget:
                        continue
                    caches: list[tuple[Any, Any]] = []
                    try:
                        caches = [
                            (
                                torch.randn(b, nkv, ctx, d, device="cuda", dtype=torch.bfloat16),
                                torch.randn(b, nkv, ctx, d, device="cuda", dtype=torch.bfloat16),
                            )
                            for _ in range(a["layers"])
                        ]
                        x = torch.randn(b, h, device="cuda", dtype=torch.bfloat16)
                        ms, sp = _timed(torch, lambda m=model, x=x, c=caches: m.decode(x, c))
                    except torch.cuda.OutOfMemoryError:
                        print(f"skipped {a['id']} decode b={b} ctx={ctx}: out of memory")
                    else:
                        emit(_row(gpu, a["id"], a["precision"], "decode", b, b, ctx, ms, sp, meta))
                    caches.clear()
                    torch.cuda.empty_cache()
            del model
            torch.cuda.empty_cache()
    fh.close()


def main(argv: list[str]) -> int:
    if argv[:1] == ["shapes"]:
        print(json.dumps(shapes(), indent=1))
        return 0
    if argv[:1] == ["measure"] and len(argv) == 3:
        measure(argv[1], argv[2])
        return 0
    if argv[:1] == ["compare"] and len(argv) >= 2:
        root = str(Path(__file__).resolve().parents[1])
        if root not in sys.path:  # run as a script (bench/run_all.py)
            sys.path.insert(0, root)
        from bench.gpu_forward_compare import card_name, law_table, report

        print("# Kernel terms vs forward passes timed on a GPU")
        paths = [Path(p) for p in argv[1:]]
        for path in paths:
            print(f"\n## {card_name(path)}\n")
            print(report(path))
        print("\n## Decode steps of up to 16 sequences, every card\n")
        print(
            "Measured step time fitted as bytes read / (efficiency x datasheet bandwidth), "
            "plus a latency per layer or not:\n"
        )
        print(law_table(paths))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
