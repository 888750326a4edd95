"""Which accelerators each serving engine runs on, as the engines' own documentation says.

A fleet of cards its engine does not run on is not a plan, however cheap: TensorRT-LLM is
NVIDIA's and supports Ampere and newer, vLLM builds its CUDA kernels for compute capability 7.0
(Volta) and newer, SGLang for 7.5 (Turing) and newer. Such a card is refused for the engine
with the requirement in words, before any sizing, by estimates and plans alike; the same card
may serve under another engine.

Sources (read 2026-12-07):

* vLLM: installation, GPU requirements (docs.vllm.ai, v0.11.0 and v0.14.0): "compute
  capability 7.0 or higher (e.g., V100, T4, RTX20xx, A100, L4, H100, etc.)"; AMD MI200s
  (gfx90a) and MI300 (gfx942); Intel Gaudi among the other accelerators (the vllm-gaudi
  plugin).
* SGLang: quickstart (docs.sglang.io): "NVIDIA GPU with CUDA support (sm75 and above, e.g., T4,
  A10, A100, L4, L40S, H100)"; AMD GPUs on their own installation page; no Gaudi backend.
* TensorRT-LLM: supported hardware (nvidia.github.io/TensorRT-LLM): Blackwell, Hopper, Ada
  Lovelace, Ampere ("if a GPU architecture is not listed, the TensorRT-LLM team does not develop
  or test the software on the architecture"); NVIDIA only.
* TGI: "Using TGI with Nvidia GPUs" (huggingface.co/docs/text-generation-inference): optimised
  models run on H100, A100, A10G and T4; "for other NVIDIA GPUs ... flash attention and paged
  attention will not be executed", which the performance model (paged KV cache) does not
  describe, so Volta and Pascal are refused; AMD and Gaudi have their own guides.

Weight formats the card runs but the engine does not (:data:`ENGINE_PRECISIONS`): TensorRT-LLM's
support matrix (0.18.2) lists FP8 on Ada and Hopper and only FP32, FP16, BF16, INT8 and INT4 on
Ampere (SM80, SM86), and its 1.0 quantization guide FP4 and FP8 on Hopper and Blackwell; the
FP8 and FP4 weight-only kernels other engines run on Ampere (Marlin) are not TensorRT-LLM's.

A generation this module does not know (``"other"``) is left to the engine (on NVIDIA for
TensorRT-LLM). Pure: no I/O.
"""

from __future__ import annotations

from service.domain.catalog import GpuSpec
from service.domain.perfmodel.hardware import Generation, generation
from service.domain.perfmodel.values import Precision

__all__ = [
    "ENGINE_GENERATIONS",
    "ENGINE_PRECISIONS",
    "engine_hardware_reason",
    "engine_precision_reason",
]

ENGINE_GENERATIONS: dict[str, frozenset[Generation]] = {
    "vllm": frozenset(
        {"volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna3", "gaudi3", "other"}
    ),
    "sglang": frozenset({"turing", "ampere", "ada", "hopper", "blackwell", "cdna3", "other"}),
    "trtllm": frozenset({"ampere", "ada", "hopper", "blackwell", "other"}),
    "tgi": frozenset(
        {"turing", "ampere", "ada", "hopper", "blackwell", "cdna3", "gaudi3", "other"}
    ),
}
"""Per engine, the generations it runs on (engines not listed: no restriction known)."""

_NEEDS: dict[str, str] = {
    "vllm": "vLLM needs NVIDIA compute capability 7.0 (Volta) or newer, AMD MI200/MI300 or "
    "Intel Gaudi",
    "sglang": "SGLang needs NVIDIA compute capability 7.5 (Turing) or newer, or AMD MI300",
    "trtllm": "TensorRT-LLM runs on NVIDIA Ampere, Ada, Hopper and Blackwell GPUs only",
    "tgi": "TGI's flash and paged attention need NVIDIA Turing or newer, AMD MI300 or Intel "
    "Gaudi (on older cards it runs without them, which this model does not describe)",
}

_ORDER: tuple[Generation, ...] = (
    "pascal",
    "volta",
    "turing",
    "ampere",
    "ada",
    "hopper",
    "blackwell",
    "cdna3",
    "gaudi3",
    "other",
)

_LABEL: dict[Generation, str] = {
    "pascal": "Pascal, compute capability 6.x",
    "volta": "Volta, compute capability 7.0",
    "turing": "Turing, compute capability 7.5",
    "ampere": "Ampere",
    "ada": "Ada",
    "hopper": "Hopper",
    "blackwell": "Blackwell",
    "cdna3": "AMD CDNA 3",
    "gaudi3": "Intel Gaudi 3",
    "other": "an unknown architecture",
}


def engine_hardware_reason(engine: str, gpu: GpuSpec) -> str:
    """Why ``engine`` does not run on ``gpu`` ("" when it does, or when nothing is known)."""
    allowed = ENGINE_GENERATIONS.get(engine)
    if allowed is None:
        return ""
    gen = generation(gpu)
    if engine == "trtllm" and gpu.vendor.strip().upper() != "NVIDIA":
        return f"{_NEEDS[engine]}; {gpu.name} is made by {gpu.vendor}"
    if gen in allowed:
        return ""
    return f"{_NEEDS[engine]}; {gpu.name} is {_LABEL[gen]}"


ENGINE_PRECISIONS: dict[tuple[str, Precision], frozenset[Generation]] = {
    ("trtllm", "fp8"): frozenset({"ada", "hopper", "blackwell", "other"}),
    ("trtllm", "fp4"): frozenset({"hopper", "blackwell", "other"}),
}
"""Per (engine, weight format), the generations the engine runs that format on, where that is
narrower than what the card itself runs (``hardware.PRECISION_RULES``)."""


def engine_precision_reason(engine: str, gpu: GpuSpec, precision: Precision) -> str:
    """Why ``engine`` does not run ``precision`` weights on ``gpu`` ("" when it does, or when
    nothing narrower than the card's own rule is known)."""
    allowed = ENGINE_PRECISIONS.get((engine, precision))
    gen = generation(gpu)
    if allowed is None or gen in allowed:
        return ""
    names = {"trtllm": "TensorRT-LLM"}
    named = [_LABEL[g] for g in _ORDER if g in allowed and g != "other"]
    where = ", ".join(named[:-1]) + " and " + named[-1] if len(named) > 1 else named[0]
    return (
        f"{names.get(engine, engine)} runs {precision} weights on {where} GPUs only; "
        f"{gpu.name} is {_LABEL[gen]}"
    )
