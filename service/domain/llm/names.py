"""How model names are spelled: normalisation rules and the alias table (normalised form ->
preset id).

``normalise_name("meta-llama/Llama-3.1-70B-Instruct-FP8")`` is ``"llama-3.1-70b"``: organisation
prefix, case, separators and instruct/quantisation suffixes do not matter. Pure: no I/O.
"""

from __future__ import annotations

import re

from service.domain.vocabulary import Precision

__all__ = ["ALIASES", "CHECKPOINTS", "checkpoint_preset", "named_format", "normalise_name"]

# Explicit aliases (normalised form -> preset id). Normalisation (see `normalise_name`) already
# strips an organisation prefix, case, "-instruct"/"-hf"/"-chat"/"-base"/"-it" and quantisation
# suffixes, so only genuinely different spellings are listed.
ALIASES: dict[str, str] = {
    "llama2-7b": "llama-2-7b",
    "llama2-13b": "llama-2-13b",
    "llama2-70b": "llama-2-70b",
    "meta-llama-3-8b": "llama-3-8b",
    "meta-llama-3-70b": "llama-3-70b",
    "llama3-8b": "llama-3-8b",
    "llama3-70b": "llama-3-70b",
    "meta-llama-3.1-8b": "llama-3.1-8b",
    "meta-llama-3.1-70b": "llama-3.1-70b",
    "meta-llama-3.1-405b": "llama-3.1-405b",
    "llama3.1-8b": "llama-3.1-8b",
    "llama3.1-70b": "llama-3.1-70b",
    "llama3.1-405b": "llama-3.1-405b",
    "llama3.3-70b": "llama-3.3-70b",
    "llama-3-405b": "llama-3.1-405b",
    "mistral-7b-v0.1": "mistral-7b",
    "mixtral-8x7b-v0.1": "mixtral-8x7b",
    "mixtral-8x22b-v0.1": "mixtral-8x22b",
    "qwen3-30b": "qwen3-30b-a3b",
    "qwen3-235b": "qwen3-235b-a22b",
    "qwen3-235b-a22b-instruct-2507": "qwen3-235b-a22b",
    "qwen3-235b-a22b-thinking-2507": "qwen3-235b-a22b",
    "deepseek-v3-0324": "deepseek-v3",
    "deepseek-v3.1": "deepseek-v3",
    "deepseek-v3.1-terminus": "deepseek-v3",
    "deepseek-v3.2-exp": "deepseek-v3.2",
    "deepseek-r1": "deepseek-v3",
    "deepseek-r1-0528": "deepseek-v3",
    "llama-4-scout-17b-16e": "llama-4-scout",
    "llama-4-maverick-17b-128e": "llama-4-maverick",
    "llama4-scout": "llama-4-scout",
    "llama4-maverick": "llama-4-maverick",
    "gpt-j": "gpt-j-6b",
    "gptj-6b": "gpt-j-6b",
    "falcon-180b-chat": "falcon-180b",
    "gemma2-27b": "gemma-2-27b",
    "nvidia-nemotron-3-nano-30b-a3b": "nemotron-3-nano-30b-a3b",
    "nemotron-3-nano-30b": "nemotron-3-nano-30b-a3b",
    "nemotron-3-nano": "nemotron-3-nano-30b-a3b",
}

# Published checkpoints whose quantization differs from what their format usually covers,
# matched on the whole name (case, separators; the organisation must be the publisher's or
# absent) before normalisation, which would strip the "-fp8" that tells them apart.
# Meta's Llama 3.1 405B FP8 release quantizes only the inner layers' MLPs (the Llama 3
# paper, section 6.2: self-attention and the first and last layers stay BF16); other
# publishers' FP8 405B checkpoints (NVIDIA ModelOpt, AMD Quark) quantize attention as well.
CHECKPOINTS: dict[str, tuple[str, str]] = {
    "llama-3.1-405b-fp8": ("meta-llama", "llama-3.1-405b-fp8"),
    "llama-3.1-405b-instruct-fp8": ("meta-llama", "llama-3.1-405b-fp8"),
    "meta-llama-3.1-405b-fp8": ("meta-llama", "llama-3.1-405b-fp8"),
    "meta-llama-3.1-405b-instruct-fp8": ("meta-llama", "llama-3.1-405b-fp8"),
}


def checkpoint_preset(name: str) -> str | None:
    """The preset id of a published checkpoint in :data:`CHECKPOINTS`, or ``None``."""
    s = name.strip().lower()
    org = ""
    if "/" in s:
        org, s = s.rsplit("/", 1)
    s = re.sub(r"[\s_]+", "-", s)
    found = CHECKPOINTS.get(s)
    if found is None or (org and org != found[0]):
        return None
    return found[1]


_STRIP_SUFFIXES = (
    "instruct",
    "chat",
    "hf",
    "base",
    "it",
    "fp8",
    "kv",  # "-FP8-KV": FP8 weights and KV cache (AMD's Llama 3.1 checkpoints)
    "fp4",
    "nvfp4",
    "mxfp4",
    "awq",
    "gptq",
    "int4",
    "int8",
    "bf16",
    "fp16",
    "original",
    "dynamic",
)


# The weight format a stripped suffix names, most specific first: "GPTQ-Int8" is 8-bit, a bare
# "AWQ" or "GPTQ" the 4-bit default of those methods, "NVFP4"/"MXFP4" an FP4 checkpoint.
_FORMAT_SUFFIXES: tuple[tuple[str, Precision], ...] = (
    ("int8", "int8"),
    ("int4", "int4"),
    ("fp8", "fp8"),
    ("fp4", "fp4"),
    ("nvfp4", "fp4"),
    ("mxfp4", "fp4"),
    ("awq", "int4"),
    ("gptq", "int4"),
    ("bf16", "bf16"),
    ("fp16", "fp16"),
)


def _strip(name: str) -> tuple[str, list[str]]:
    """``name`` lower-cased without its ``org/`` prefix, separators unified, and the
    instruct/quant suffixes it ended with (stripped, last first)."""
    s = name.strip().lower()
    if "/" in s:
        s = s.rsplit("/", 1)[1]
    s = re.sub(r"[\s_]+", "-", s)
    stripped: list[str] = []
    changed = True
    while changed:
        changed = False
        for suf in _STRIP_SUFFIXES:
            if s.endswith("-" + suf):
                s = s[: -len(suf) - 1]
                stripped.append(suf)
                changed = True
    return s, stripped


def normalise_name(name: str) -> str:
    """Lower-case, drop an ``org/`` prefix, unify separators, strip instruct/quant suffixes."""
    s, _ = _strip(name)
    # "-instruct-v0.1" style: a trailing version after a stripped suffix
    m = re.fullmatch(r"(.*)-instruct-(v[\d.]+)", s)
    if m:
        s = f"{m.group(1)}-{m.group(2)}"
    return s


def named_fp4_scale_block(name: str) -> int | None:
    """Weights per scale of the FP4 format a checkpoint's name ends with: 32 for ``-MXFP4``,
    16 for ``-NVFP4``, ``None`` for any other name."""
    _, stripped = _strip(name)
    if "mxfp4" in stripped:
        return 32
    if "nvfp4" in stripped:
        return 16
    return None


def named_format(name: str) -> Precision | None:
    """The weight format a checkpoint's name ends with (``Qwen3-32B-FP8`` -> ``fp8``,
    ``...-GPTQ-Int4`` -> ``int4``, ``...-NVFP4`` -> ``fp4``), or ``None``."""
    _, stripped = _strip(name)
    for suffix, fmt in _FORMAT_SUFFIXES:
        if suffix in stripped:
            return fmt
    return None
