"""Find the architecture for a model reference, with every assumption made on the way.

:func:`resolve_model` accepts three forms:

* a preset id or alias (``"llama-3.1-70b"``, ``"meta-llama/Llama-3.1-70B-Instruct"``,
  ``"Mixtral-8x7B"``), matched case-insensitively after :func:`names.normalise_name`; an
  unknown name raises :class:`UnknownModel` with the closest preset ids (``difflib``);
* ``{"params_b": 70, ...}``: a size plus known fields, the rest derived (``derive``);
* ``{"hf_config": {...}}``: a Hugging Face ``config.json`` as-is (``hf_config``).

Pure: no I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from service.domain.errors import InvalidInput, UnknownModel
from service.domain.llm.arch import ModelArch
from service.domain.llm.derive import derive_arch
from service.domain.llm.hf_config import hf_arch
from service.domain.llm.names import ALIASES, normalise_name
from service.domain.llm.presets import PRESETS

__all__ = ["ResolvedModel", "preset_aliases", "resolve_model"]


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A model architecture plus every assumption made while resolving the input."""

    arch: ModelArch
    assumptions: tuple[str, ...] = ()


def _suggestions(norm: str) -> tuple[str, ...]:
    """Up to five preset ids closest to a normalised name (aliases mapped to their preset)."""
    choices = list(PRESETS) + list(ALIASES)
    close = difflib.get_close_matches(norm, choices, n=8, cutoff=0.5)
    seen: list[str] = []
    for c in close:
        pid = ALIASES.get(c, c)
        if pid not in seen:
            seen.append(pid)
    return tuple(seen[:5])


def _lookup_preset(name: str) -> tuple[ModelArch, tuple[str, ...]]:
    """Preset for a name or alias; ``UnknownModel`` with difflib suggestions otherwise."""
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
    raise UnknownModel(name, _suggestions(norm), field="model")


def resolve_model(spec: str | Mapping[str, Any]) -> ResolvedModel:
    """Resolve a model reference to an architecture plus the assumptions made.

    ``spec``: a preset id/alias (case-insensitive, org prefix and instruct/quant suffixes
    ignored), ``{"params_b": ..., ...}`` or ``{"hf_config": {...}}``.

    Raises :class:`UnknownModel` (with the closest preset ids, by ``difflib``) for an unknown
    name and :class:`InvalidInput` naming the field for impossible or inconsistent numbers.
    """
    if isinstance(spec, str):
        return ResolvedModel(*_lookup_preset(spec))
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
    return tuple(sorted(alias for alias, target in ALIASES.items() if target == model_id))
