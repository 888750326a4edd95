"""Estimate use case: one model on one GPU configuration, from the catalog snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from service.domain.errors import InvalidInput
from service.domain.llm import planned_precision
from service.domain.perfmodel import (
    Deployment,
    Engine,
    Estimate,
    KvPrecision,
    Precision,
    RequestShape,
    estimate,
    smallest_fitting_tp,
)
from service.domain.perfmodel.engine_hardware import engine_hardware_reason
from service.domain.perfmodel.hardware import accuracy_family
from service.domain.planner import resolve_requested_model
from service.domain.profiles.values import CalibrationProfile, calibration_words
from service.usecases.calibrating import ProfileResolver
from service.usecases.catalog_state import CatalogState

MAX_TENSOR_PARALLEL = 72


@dataclass(frozen=True, slots=True)
class EstimateQuery:
    """One model on one GPU configuration, as asked: ``model`` a preset id or alias or a custom
    model mapping, ``gpu`` an id or alias; ``tensor_parallel`` cards per replica (``None``: the
    smallest that fits); ``precision`` ``None``: the model's published checkpoint format;
    ``concurrency`` a fixed running batch; ``qps`` an arrival rate in
    requests/s (adds latency percentiles); ``allow_pcie_tensor_parallel`` (default on, as in
    plans) lets a replica span more cards than the NVLink domain, all-reducing over PCIe."""

    model: str | Mapping[str, Any]
    gpu: str
    prompt_tokens: int
    output_tokens: int
    tensor_parallel: int | None = None
    precision: Precision | None = None
    kv_precision: KvPrecision = "bf16"
    engine: Engine = "vllm"
    engine_version: str | None = None
    concurrency: int | None = None
    qps: float | None = None
    allow_pcie_tensor_parallel: bool = True
    calibration: str | None = None


@dataclass(frozen=True, slots=True)
class EstimateAnswer:
    estimate: Estimate
    assumptions: tuple[str, ...]
    revision: int
    stale: bool
    calibration: CalibrationProfile | None = None
    precision: Precision = "bf16"
    """The weight format estimated: as asked, else the model's checkpoint format."""


class EstimatingService:
    def __init__(self, state: CatalogState, profiles: ProfileResolver | None = None) -> None:
        self._state = state
        self._profiles = profiles

    async def estimate(self, q: EstimateQuery) -> EstimateAnswer:
        """Pure and fast (well under a millisecond), so it runs on the event loop. Raises the
        domain's ``InvalidInput``/``NotFound`` naming the field at fault."""
        model, precision = planned_precision(resolve_requested_model(q.model), q.precision)
        profile = None
        if self._profiles is not None:
            profile = await self._profiles.resolve(q.calibration)
        view = await self._state.current()
        gpu = view.snapshot.resolve_gpu(q.gpu, field_name="gpu")
        arch = model.arch
        if q.prompt_tokens + q.output_tokens > arch.max_context:
            raise InvalidInput(
                f"{q.prompt_tokens} prompt + {q.output_tokens} output tokens exceed "
                f"{arch.id}'s context of {arch.max_context}",
                field="prompt_tokens",
            )
        shape = RequestShape(q.prompt_tokens, q.output_tokens)
        notes: list[str] = []
        tp = q.tensor_parallel
        if tp is None and (elsewhere := engine_hardware_reason(q.engine, gpu)):
            tp = 1
            notes.append(f"No tensor-parallel degree helps on {gpu.id}: {elsewhere}.")
        if tp is None:
            tp = smallest_fitting_tp(
                arch,
                gpu,
                precision,
                q.kv_precision,
                q.engine,
                shape,
                allow_pcie_tensor_parallel=q.allow_pcie_tensor_parallel,
                engine_version=q.engine_version,
            )
            if tp is None:
                tp = min(gpu.nvlink_domain, 8) if not q.allow_pcie_tensor_parallel else 8
                notes.append(
                    f"No tensor-parallel degree fits on {gpu.id}; showing tensor_parallel={tp}."
                )
            else:
                notes.append(f"tensor_parallel={tp}: the smallest degree that fits.")
        family = accuracy_family(gpu)
        dep = Deployment(
            gpu=gpu,
            tensor_parallel=tp,
            precision=precision,
            kv_precision=q.kv_precision,
            engine=q.engine,
            allow_pcie_tensor_parallel=q.allow_pcie_tensor_parallel,
            engine_version=q.engine_version,
            correction=None if profile is None else profile.correction_for(q.engine, family),
        )
        result = estimate(arch, dep, shape, concurrency=q.concurrency, qps=q.qps)
        calibrated = (
            calibration_words(profile, q.engine, {gpu.id: family}) if profile is not None else ()
        )
        assumptions = tuple(
            dict.fromkeys((*model.assumptions, *notes, *result.assumptions, *calibrated))
        )
        return EstimateAnswer(
            result, assumptions, view.snapshot.revision, view.stale, profile, precision
        )
