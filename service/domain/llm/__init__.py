"""LLM architectures: what a model *is*, in the numbers serving depends on.

A model catalogue is data plus small parsers, one job per module:

* ``arch``: :class:`ModelArch` (layers, hidden size, MHA/GQA/MLA attention, MLP and expert
  sizes, vocabulary) and the parameter/KV arithmetic on it (:func:`param_counts`);
* ``presets``: the preset table (:data:`PRESETS`), read from each model's ``config.json``;
* ``names``: name normalisation and the alias table;
* ``resolve``: :func:`resolve_model` for a preset id/alias, ``{"params_b": ...}`` or
  ``{"hf_config": {...}}``, returning a :class:`ResolvedModel` with its assumptions;
* ``derive``: the ``{"params_b": ...}`` form (missing fields derived by stated rules);
* ``hf_config``: the Hugging Face ``config.json`` parser;
* ``fields``: typed readers that validate each number and name the field at fault.

Units: parameter counts in billions (``*_b``) or plain counts (``param_counts``); sizes in
elements; context in tokens. Pure: no I/O.
"""

from service.domain.llm.arch import ModelArch, ParamCounts, param_counts
from service.domain.llm.hf_config import check_numbers
from service.domain.llm.presets import PRESETS, preset_ids
from service.domain.llm.resolve import (
    ResolvedModel,
    planned_precision,
    preset_aliases,
    resolve_model,
)

__all__ = [
    "PRESETS",
    "ModelArch",
    "ParamCounts",
    "ResolvedModel",
    "check_numbers",
    "param_counts",
    "planned_precision",
    "preset_aliases",
    "preset_ids",
    "resolve_model",
]
