"""Find the architecture for a model reference, with every assumption made on the way.

:func:`resolve_model` accepts three forms:

* a preset id or alias (``"llama-3.1-70b"``, ``"meta-llama/Llama-3.1-70B-Instruct"``,
  ``"Mixtral-8x7B"``), matched case-insensitively after :func:`names.normalise_name`; an
  unknown name raises :class:`UnknownModel` with the closest preset ids (``difflib``), or when
  none is close, the presets of its family or size, or else the most used ones: never none;
* ``{"params_b": 70, ...}``: a size plus known fields, the rest derived (``derive``);
* ``{"hf_config": {...}}``: a Hugging Face ``config.json`` as-is (``hf_config``).

Pure: no I/O.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from service.domain.errors import InvalidInput, UnknownModel
from service.domain.llm.arch import ModelArch
from service.domain.llm.derive import derive_arch
from service.domain.llm.hf_config import hf_arch
from service.domain.llm.names import (
    ALIASES,
    CHECKPOINTS,
    checkpoint_preset,
    named_format,
    named_fp4_scale_block,
    normalise_name,
)
from service.domain.llm.presets import PRESETS
from service.domain.vocabulary import Precision

__all__ = ["ResolvedModel", "planned_precision", "preset_aliases", "resolve_model"]


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A model architecture plus every assumption made while resolving the input."""

    arch: ModelArch
    assumptions: tuple[str, ...] = ()


def planned_precision(
    model: ResolvedModel, asked: Precision | None
) -> tuple[ResolvedModel, Precision]:
    """The weight format to plan: ``asked``, else the format of the checkpoint the model names
    (``ModelArch.checkpoint_precision``: the publisher's own, or the one a quantized
    checkpoint's name ends with), which a quantized one adds to the assumptions."""
    if asked is not None:
        return model, asked
    fmt = model.arch.checkpoint_precision
    if fmt == "bf16":
        return model, fmt
    note = f"Weights in {fmt}, as the checkpoint stores them (name a precision to plan another)"
    return replace(model, assumptions=(*model.assumptions, note)), fmt


SUGGESTED_AT_MOST = 5
POPULAR_PRESETS: tuple[str, ...] = (
    "llama-3.1-8b",
    "llama-3.3-70b",
    "qwen3-32b",
    "gpt-oss-120b",
    "deepseek-v3",
)
"""Suggested for a name nothing resembles: the most commonly served open-weight models, one
per size class (8B, 32B, 70B, 120B MoE, 671B MoE)."""
_SIZE = re.compile(r"(?<![\d.])(?:(?P<experts>\d+)x)?(?P<size>\d+(?:\.\d+)?)b(?![a-z])")
_FAMILY = re.compile(r"[a-z]+")
_NO_MATCH_REMEDY = (
    "a model that is not a preset can be given by its size (params_b) or by its "
    "Hugging Face config.json (hf_config)"
)


def _size_b(norm: str) -> float | None:
    """The size a name states (``-13b``; ``8x7b`` counts every expert), in billions."""
    match = _SIZE.search(norm)
    if match is None:
        return None
    size = float(match.group("size")) * int(match.group("experts") or 1)
    return size if size > 0 else None


def _family(norm: str) -> str | None:
    match = _FAMILY.match(norm)
    return match.group(0) if match else None


def _suggestions(norm: str) -> tuple[tuple[str, ...], str]:
    """Up to five preset ids for an unknown normalised name, and how they were chosen: the
    closest spellings (aliases mapped to their preset); else the presets of the same family
    (the name's leading word) nearest the size it states; else the presets nearest that size;
    else ``POPULAR_PRESETS``. Never empty."""
    choices = list(PRESETS) + list(ALIASES)
    close = difflib.get_close_matches(norm, choices, n=8, cutoff=0.5)
    seen: list[str] = []
    for c in close:
        pid = ALIASES.get(c, c)
        if pid not in seen:
            seen.append(pid)
    if seen:
        return tuple(seen[:SUGGESTED_AT_MOST]), "closest"
    family = _family(norm)
    members = [pid for pid in PRESETS if family is not None and _family(pid) == family]
    size = _size_b(norm)
    if size is not None:
        pool = members or list(PRESETS)
        pool.sort(key=lambda pid: abs(math.log(PRESETS[pid].params_b / size)))
        label = f"{family} presets nearest {size:g}B" if members else f"presets nearest {size:g}B"
        return tuple(pool[:SUGGESTED_AT_MOST]), label
    if members:
        return tuple(members[:SUGGESTED_AT_MOST]), f"{family} presets"
    return POPULAR_PRESETS, "popular presets"


def _lookup_checkpoint(name: str) -> tuple[ModelArch, tuple[str, ...]]:
    """:func:`_lookup_preset`, with the weight format a quantized checkpoint's name ends with
    (``Qwen/Qwen3-32B-FP8``) as the architecture's ``checkpoint_precision``."""
    arch, notes = _lookup_preset(name)
    fmt = named_format(name)
    block = named_fp4_scale_block(name)
    if block is not None:
        arch = replace(arch, fp4_scale_block=block)
    if fmt is None or fmt == arch.checkpoint_precision:
        return arch, notes
    scales = {32: " (MXFP4: one scale per 32 weights)", 16: " (NVFP4: one scale per 16 weights)"}
    note = (
        f"{name.strip()}: a checkpoint of {arch.id} with {fmt} weights{scales.get(block or 0, '')}"
    )
    return replace(arch, checkpoint_precision=fmt), (*notes, note)


def _lookup_preset(name: str) -> tuple[ModelArch, tuple[str, ...]]:
    """Preset for a name or alias; ``UnknownModel`` with difflib suggestions otherwise."""
    checkpoint = checkpoint_preset(name)
    if checkpoint is not None:
        return PRESETS[checkpoint], ()
    norm = normalise_name(name)
    if norm in PRESETS:
        return PRESETS[norm], ()
    if norm in ALIASES:
        target = ALIASES[norm]
        notes: tuple[str, ...] = ()
        if norm.startswith("deepseek-r1"):
            notes = ("DeepSeek-R1 has the DeepSeek-V3 architecture; using the deepseek-v3 preset",)
        return PRESETS[target], notes
    # tolerate a trailing "-v0.x" version on otherwise known ids
    base = re.sub(r"-v\d+(\.\d+)*$", "", norm)
    if base in PRESETS:
        return PRESETS[base], ()
    if base in ALIASES:
        return PRESETS[ALIASES[base]], ()
    suggestions, label = _suggestions(norm)
    raise UnknownModel(
        name,
        suggestions,
        field="model",
        label=label,
        remedy=None if label == "closest" else _NO_MATCH_REMEDY,
    )


def resolve_model(spec: str | Mapping[str, Any]) -> ResolvedModel:
    """Resolve a model reference to an architecture plus the assumptions made.

    ``spec``: a preset id/alias (case-insensitive, org prefix and instruct/quant suffixes
    ignored), ``{"params_b": ..., ...}`` or ``{"hf_config": {...}}``.

    Raises :class:`UnknownModel` (with the closest preset ids, by ``difflib``) for an unknown
    name and :class:`InvalidInput` naming the field for impossible or inconsistent numbers.
    """
    if isinstance(spec, str):
        return ResolvedModel(*_lookup_checkpoint(spec))
    if not isinstance(spec, Mapping):
        raise InvalidInput("model must be a preset name or an object", field="model")
    if "hf_config" in spec:
        extra = sorted(set(spec) - {"hf_config"})
        if extra:
            raise InvalidInput(
                f"hf_config cannot be combined with {extra[0]!r}", field=f"model.{extra[0]}"
            )
        return ResolvedModel(*hf_arch(spec["hf_config"]))
    if "params_b" in spec:
        return ResolvedModel(*derive_arch(spec))
    raise InvalidInput("model object needs 'params_b' or 'hf_config'", field="model.params_b")


def preset_aliases(model_id: str) -> tuple[str, ...]:
    """The aliases that resolve to preset ``model_id`` (sorted; the id itself excluded)."""
    found = {alias for alias, target in ALIASES.items() if target == model_id}
    found |= {name for name, (_, target) in CHECKPOINTS.items() if target == model_id}
    return tuple(sorted(found - {model_id}))
