"""Calibrated constants: their structure, the engine profiles that use them, and the registry of
calibrated engine builds.

The numbers live in :mod:`service.domain.perfmodel.constants`, a Python module written by
``bench/calibrate.py`` (least squares on log ratios against the measurements in
``service/data/``; its docstring records the command, the rows used and the fit and
leave-one-source-out validation errors). This module only gives them shape.

Constant groups (what physically differs, see ``hardware`` for the GPU groups):

* per GPU group: ``eta_m`` achieved fraction of datasheet memory bandwidth; ``eta_c`` achieved
  fraction of datasheet dense 16-bit tensor throughput in GEMMs;
* per format (global): ``fp8_gemm_eff``/``fp4_gemm_eff`` achieved fraction of the 8-bit / 4-bit
  peak relative to ``eta_c`` (low-precision GEMMs reach a smaller share of their doubled peak);
  ``attn_eff`` prefill-attention (FMHA) efficiency relative to ``eta_c``; ``moe_gemm_eff`` for
  grouped expert GEMMs; ``kv_read_eff`` the share of the achieved bandwidth that decode
  attention reaches when streaming the (paged) KV cache; ``ep_imbalance`` (>= 1) the slowest
  rank's share of routed-expert work over the mean when experts are sharded by expert
  (expert parallelism: routing is never perfectly balanced);
* per engine build (``engines``, keyed ``<engine>-<major.minor>``, or ``<engine>`` for a fit
  pooled over all of an engine's versions): ``eff_compute``/``eff_memory`` multipliers, fixed
  per-iteration cost ``step_overhead_ms`` + ``layer_overhead_us`` x layers (launch latency,
  synchronisation and kernel tails that short kernels cannot hide), host-side
  ``seq_overhead_us`` x running sequences (scheduling, sampling, bookkeeping), beside the GPU
  step (an iteration takes the longer of the two) or between steps (added to it), as the
  engine's structure says (``EngineProfile.host_overlap``), ``ttft_overhead_ms`` (request handling
  before the first iteration), and ``moe_eff``, the build's routed-expert GEMM efficiency
  relative to the reference's MoE kernels (1 unless fitted: vLLM's fused-MoE kernels, see
  ``bench/calibrate.py`` ``MOE_FITTED_ENGINES``);
* load: ``closed_loop_ca2``, the squared coefficient of variation of arrivals from a closed loop
  of clients sending identical requests (they drift in step, so arrivals are burstier than
  Poisson's 1); it scales the prompt-queue wait (Kingman's G/D/1 approximation);
* interconnect: per-hop latency of a ring all-reduce step and achieved bandwidth fraction, for
  NVLink-class links and for PCIe;
* memory: ``reserve_gb`` per card for the CUDA context, library workspaces and communication
  buffers, plus ``reserve_frac`` of the card's memory (allocator fragmentation and caching);
  ``act_scale`` multiplies the activation/workspace estimate of ``coefficients`` (buffers sized
  by the per-iteration token budget).

Engine profiles (:class:`EngineProfile`) pair an engine's *structure* (documented scheduler and
memory defaults, :func:`serving_structure`; not fitted) with a key into the fitted constants.
The registry (:func:`profile_registry`) lists every calibrated build as a
:class:`CalibratedProfile`: its rows, sources and leave-one-source-out error per GPU family and
metric, so an estimate can cite how well its profile predicted data it was not fitted on. A
plain ``engine`` resolves to the newest calibrated build (:func:`resolve_profile`); an engine
without usable measurements says so (``calibrated=False``) instead of borrowing a judgement as
if it were data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from service.domain.errors import InvalidInput
from service.domain.hashing import field_hash
from service.domain.perfmodel import constants as _constants
from service.domain.perfmodel import engine_builds as _builds
from service.domain.perfmodel.values import ENGINES, Engine


@dataclass(frozen=True, slots=True)
class GroupConstants:
    """Achieved fractions of datasheet peaks for one GPU group."""

    eta_m: float
    eta_c: float


@dataclass(frozen=True, slots=True)
class EngineConstants:
    """Fitted behaviour of one engine build (see module docstring)."""

    eff_compute: float
    eff_memory: float
    step_overhead_ms: float
    layer_overhead_us: float
    seq_overhead_us: float
    ttft_overhead_ms: float
    moe_eff: float = 1.0


@dataclass(frozen=True, slots=True)
class Calibration:
    """All fitted constants. Hashable, so derived quantities can be memoised per calibration."""

    groups: tuple[tuple[str, GroupConstants], ...]
    engines: tuple[tuple[str, EngineConstants], ...]
    fp8_gemm_eff: float
    fp4_gemm_eff: float
    attn_eff: float
    moe_gemm_eff: float
    kv_read_eff: float
    ep_imbalance: float
    closed_loop_ca2: float
    act_scale: float
    nvlink_latency_us: float
    nvlink_bw_eff: float
    pcie_latency_us: float
    pcie_bw_eff: float
    reserve_gb: float
    reserve_frac: float
    group_by_name: dict[str, GroupConstants] = field(
        init=False, repr=False, compare=False, hash=False
    )
    engine_by_name: dict[str, EngineConstants] = field(
        init=False, repr=False, compare=False, hash=False
    )
    _hash: int = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "group_by_name", dict(self.groups))
        object.__setattr__(self, "engine_by_name", dict(self.engines))
        object.__setattr__(self, "_hash", field_hash(self))

    def __hash__(self) -> int:
        return self._hash

    def gemm_eff(self, fp_kind: str) -> float:
        """Low-precision GEMM efficiency relative to ``eta_c`` for ``fp_kind`` "16"/"8"/"4"/"32"."""
        if fp_kind == "8":
            return self.fp8_gemm_eff
        if fp_kind == "4":
            return self.fp4_gemm_eff
        return 1.0


def calibration_from_mapping(data: Mapping[str, object]) -> Calibration:
    """Build a :class:`Calibration` from the plain-literal form stored in ``constants.py``."""
    groups_raw = data["groups"]
    engines_raw = data["engines"]
    if not isinstance(groups_raw, Mapping) or not isinstance(engines_raw, Mapping):
        raise TypeError("constants: 'groups' and 'engines' must be mappings")
    groups = tuple(
        (str(k), GroupConstants(float(v["eta_m"]), float(v["eta_c"])))
        for k, v in sorted(groups_raw.items())
    )
    engines = tuple(
        (
            str(k),
            EngineConstants(
                eff_compute=float(v["eff_compute"]),
                eff_memory=float(v["eff_memory"]),
                step_overhead_ms=float(v["step_overhead_ms"]),
                layer_overhead_us=float(v["layer_overhead_us"]),
                seq_overhead_us=float(v["seq_overhead_us"]),
                ttft_overhead_ms=float(v["ttft_overhead_ms"]),
                moe_eff=float(v.get("moe_eff", 1.0)),
            ),
        )
        for k, v in sorted(engines_raw.items())
    )

    def f(key: str) -> float:
        value = data[key]
        if not isinstance(value, int | float):
            raise TypeError(f"constants: {key!r} must be a number")
        return float(value)

    return Calibration(
        groups=groups,
        engines=engines,
        fp8_gemm_eff=f("fp8_gemm_eff"),
        fp4_gemm_eff=f("fp4_gemm_eff"),
        attn_eff=f("attn_eff"),
        moe_gemm_eff=f("moe_gemm_eff"),
        kv_read_eff=f("kv_read_eff"),
        ep_imbalance=f("ep_imbalance"),
        closed_loop_ca2=f("closed_loop_ca2"),
        act_scale=f("act_scale"),
        nvlink_latency_us=f("nvlink_latency_us"),
        nvlink_bw_eff=f("nvlink_bw_eff"),
        pcie_latency_us=f("pcie_latency_us"),
        pcie_bw_eff=f("pcie_bw_eff"),
        reserve_gb=f("reserve_gb"),
        reserve_frac=f("reserve_frac"),
    )


@lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    """The committed fit (``constants.FITTED``)."""
    return calibration_from_mapping(_constants.FITTED)


@dataclass(frozen=True, slots=True)
class EngineProfile:
    """How an engine schedules and allocates, plus which fitted constants it uses.

    * ``constants``: key into ``Calibration.engines``; ``derate`` multiplies its efficiencies
      (1.0 for a calibrated build).
    * ``kv_fraction`` of ``"total"`` memory (vLLM ``gpu_memory_utilization``, SGLang
      ``mem_fraction_static``) or of the ``"free"`` memory left after weights and activations
      (TensorRT-LLM ``free_gpu_memory_fraction``).
    * ``full_reservation``: the scheduler reserves ``prompt + output`` tokens per sequence
      (TensorRT-LLM ``GUARANTEED_NO_EVICT``); otherwise paged admission holds on average
      ``prompt + output/2`` tokens per sequence.
    * ``max_batch``: cap on running sequences; ``max_num_tokens``: per-iteration token budget
      (0 = sized to the batch as ``trtllm-bench`` does, capped at ``auto_token_cap``);
      ``chunked_prefill``: long prompts split to fit the budget.
    * ``prefill_first``: the scheduler admits waiting prompts before it resumes the running
      decodes (SGLang's ``get_next_batch_to_run`` runs a prefill batch whenever one can be
      formed, ``enable_mixed_chunk`` off by default; vLLM V0's default scheduler skips decodes
      in a step that schedules prefills, and vLLM 0.7 turns chunked prefill off for MLA models,
      logging "MLA is enabled; forcing chunked prefill and prefix caching to be disabled"
      (vllm-project/vllm#13374), so its DeepSeek runs use that scheduler); otherwise the
      running decodes go first and waiting prompts fill the rest of the token budget (vLLM V1,
      TensorRT-LLM's in-flight batching). Closed loops of identical requests then keep their
      waves (``queueing.rotating_ttft``, ``queueing.locked_cycle``).
    * ``attention_dp_moe``: MoE models run attention data-parallel (each rank its own sequences,
      attention weights replicated, no KV-head replication) with experts sharded.
    * ``host_overlap``: the engine prepares iteration ``i + 1`` on the host (scheduling, input
      tensors, sampling bookkeeping) while the GPU runs iteration ``i``, so an iteration takes
      the longer of the two (SGLang's overlap scheduler, on by default from 0.4; TensorRT-LLM's
      C++ executor; vLLM's asynchronous scheduling, on by default from 0.12,
      vllm-project/vllm#27614). Otherwise the host work runs between GPU steps and adds to
      every iteration (vLLM V0, and V1 up to 0.11: the scheduler waits for the sampled tokens
      of step ``i`` before it schedules ``i + 1``; SGLang before 0.4).
    * ``window_kv``: the KV cache of sliding-window layers holds only the window (vLLM's hybrid
      KV-cache manager from 0.10, SGLang's SWA pool, TensorRT-LLM's variable sliding-window
      attention in the PyTorch backend); otherwise those layers are allocated full length.
      Attention reads and FLOPs honour the window in every engine (the kernels skip masked
      blocks).
    """

    name: str
    constants: str
    derate: float
    kv_fraction: float
    kv_fraction_of: str
    full_reservation: bool
    max_batch: int
    max_num_tokens: int
    chunked_prefill: bool
    prefill_first: bool = False
    attention_dp_moe: bool = False
    auto_token_cap: int = 32768
    window_kv: bool = False
    host_overlap: bool = True
    note: str = ""
    _hash: int = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", field_hash(self))

    def __hash__(self) -> int:  # memoised: setups are cached per profile
        return self._hash


# Structures of the serving engines (documented defaults of each engine; nothing here is fitted).
# The limits vLLM V1 and SGLang derive from the card (vLLM's max_num_seqs and
# max_num_batched_tokens, SGLang's mem_fraction_static, chunked_prefill_size and
# max_running_requests) are set per card by ``engine_limits.card_profile``, which adds them to the
# profile's note; the values below stand for an H100-class card.
_STRUCTURES: dict[str, EngineProfile] = {
    "trtllm": EngineProfile(
        name="trtllm", constants="", derate=1.0, kv_fraction=0.9, kv_fraction_of="free",
        full_reservation=True, max_batch=2048, max_num_tokens=8192, chunked_prefill=True,
        window_kv=True,
        note="TensorRT-LLM (LLM API defaults: KV 0.9 of free memory, GUARANTEED_NO_EVICT, "
        "max_batch_size 2048, max_num_tokens 8192)",
    ),
    "vllm-v0": EngineProfile(
        name="vllm", constants="", derate=1.0, kv_fraction=0.9, kv_fraction_of="total",
        full_reservation=False, max_batch=256, max_num_tokens=8192, chunked_prefill=False,
        prefill_first=True, host_overlap=False,
        note="vLLM V0 (gpu_memory_utilization 0.9, max_num_seqs 256, whole-prompt prefill, "
        "prompts before decodes, host work between steps)",
    ),
    "vllm": EngineProfile(
        name="vllm", constants="", derate=1.0, kv_fraction=0.9, kv_fraction_of="total",
        full_reservation=False, max_batch=1024, max_num_tokens=8192, chunked_prefill=True,
        window_kv=True, host_overlap=False,
        note="vLLM V1 (gpu_memory_utilization 0.9, chunked prefill, host work between steps)",
    ),
    "sglang": EngineProfile(
        name="sglang", constants="", derate=1.0, kv_fraction=0.88, kv_fraction_of="total",
        full_reservation=False, max_batch=1024, max_num_tokens=8192, chunked_prefill=True,
        prefill_first=True, window_kv=True,
        note="SGLang (chunked prefill, prompts before decodes)",
    ),
    "tgi": EngineProfile(
        name="tgi", constants="", derate=1.0, kv_fraction=0.9, kv_fraction_of="total",
        full_reservation=False, max_batch=512, max_num_tokens=4096, chunked_prefill=True,
        note="TGI (max_batch_prefill_tokens 4096, KV from remaining memory)",
    ),
}  # fmt: skip


def version_key(version: str) -> tuple[int, ...]:
    """Sortable form of ``"major.minor"`` (``""`` sorts first)."""
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def serving_structure(engine: str, version: str) -> EngineProfile:
    """The documented scheduler/memory defaults of an engine build (no constants key set)."""
    if engine == "vllm" and version and version_key(version) < (0, 8):
        return _STRUCTURES["vllm-v0"]
    if engine not in _STRUCTURES:
        raise InvalidInput(f"unknown engine {engine!r}", field="engine")
    base = _STRUCTURES[engine]
    # host work overlapped with the GPU step: vLLM's asynchronous scheduling from 0.12 (its
    # structure above is the newest calibrated build's, 0.11, so an unstated version keeps
    # the host work between steps), SGLang's overlap scheduler from 0.4
    if engine == "vllm" and version and version_key(version) >= (0, 12):
        note = base.note.replace("host work between steps", "asynchronous scheduling")
        base = replace(base, host_overlap=True, note=note)
    if engine == "sglang" and version and version_key(version) < (0, 4):
        note = base.note.removesuffix(")") + ", host work between steps)"
        base = replace(base, host_overlap=False, note=note)
    # window-sized KV for sliding-window layers arrived in vLLM 0.10 and SGLang 0.5
    first = {"vllm": (0, 10), "sglang": (0, 5)}.get(engine)
    if first is not None and version and version_key(version) < first:
        return replace(base, window_kv=False)
    return base


@dataclass(frozen=True, slots=True)
class ValidationCell:
    """Leave-one-source-out error of a profile on one GPU family and metric: ``n`` rows,
    median absolute percentage error and share within 25 % (fractions), median signed bias
    (median of predicted / measured - 1)."""

    family: str
    metric: str
    n: int
    median_ape: float
    within_25pct: float
    bias: float


@dataclass(frozen=True, slots=True)
class CalibratedProfile:
    """One engine build in the registry.

    ``calibrated``: the build has constants fitted on its own measurements (``rows`` rows from
    ``sources`` source documents on ``gpus``); otherwise ``note`` says what it uses instead.
    ``validation``: its leave-one-source-out error per GPU family and metric (empty when it
    has no data).
    """

    engine: str
    version: str
    profile: EngineProfile
    calibrated: bool
    rows: int
    sources: int
    gpus: tuple[str, ...]
    validation: tuple[ValidationCell, ...]
    note: str

    @property
    def name(self) -> str:
        """``<engine>-<version>`` (``<engine>`` when the build has no version)."""
        return f"{self.engine}-{self.version}" if self.version else self.engine


def _entry(name: str, data: Mapping[str, object]) -> CalibratedProfile:
    def s(key: str) -> str:
        return str(data.get(key, ""))

    def i(key: str) -> int:
        value = data.get(key, 0)
        if not isinstance(value, int | float):
            raise TypeError(f"constants: profile {name!r} field {key!r} must be a number")
        return int(value)

    engine, version = s("engine"), s("version")
    cells: list[ValidationCell] = []
    validation = data.get("validation", {})
    if isinstance(validation, Mapping):
        for fam, metrics in sorted(validation.items()):
            if not isinstance(metrics, Mapping):
                continue
            for metric, e in sorted(metrics.items()):
                cells.append(
                    ValidationCell(
                        str(fam), str(metric), int(e["n"]), float(e["median_ape"]),
                        float(e["within_25pct"]), float(e["bias"]),
                    )
                )  # fmt: skip
    note = s("note")
    derate_raw = data.get("derate", 1.0)
    derate = float(derate_raw) if isinstance(derate_raw, int | float) else 1.0
    base = serving_structure(engine, version)
    profile = replace(
        base, name=name, constants=s("constants"), derate=derate, note=f"{base.note}; {note}"
    )
    gpus_raw = data.get("gpus", ())
    gpus = tuple(str(g) for g in gpus_raw) if isinstance(gpus_raw, list | tuple) else ()
    return CalibratedProfile(
        engine=engine, version=version, profile=profile, calibrated=bool(data.get("calibrated")),
        rows=i("rows"), sources=i("sources"), gpus=gpus, validation=tuple(cells), note=note,
    )  # fmt: skip


@lru_cache(maxsize=1)
def profile_registry() -> dict[tuple[str, str], CalibratedProfile]:
    """Every registered engine build by ``(engine, version)`` (from ``engine_builds.PROFILES``)."""
    out: dict[tuple[str, str], CalibratedProfile] = {}
    for name, data in sorted(_builds.PROFILES.items()):
        if not isinstance(data, Mapping):
            raise TypeError(f"constants: profile {name!r} must be a mapping")
        entry = _entry(name, data)
        out[(entry.engine, entry.version)] = entry
    return out


# Answers of known_versions and resolve_profile for the registry they were read from: the
# planner asks the same few questions for every capacity it computes. Kept with the registry
# object, so a new registry (profile_registry.cache_clear()) starts afresh.
_memo: dict[str, Any] = {"registry": None, "versions": {}, "profiles": {}}


def _memo_for(reg: object) -> dict[str, Any]:
    if _memo["registry"] is not reg:
        _memo.update(registry=reg, versions={}, profiles={})
    return _memo


def known_versions(engine: str) -> tuple[str, ...]:
    """Registered versions of ``engine``, oldest first (``""`` for an unversioned entry)."""
    reg = profile_registry()
    versions: dict[str, tuple[str, ...]] = _memo_for(reg)["versions"]
    found = versions.get(engine)
    if found is None:
        found = tuple(sorted((v for e, v in reg if e == engine), key=version_key))
        versions[engine] = found
    return found


REFERENCE_CONSTANTS = "trtllm-1.0"
"""The fitted build whose constants an engine without registered measurements uses."""


def _uncalibrated(engine: str) -> CalibratedProfile:
    """An engine the vocabulary and ``_STRUCTURES`` know but no calibration has registered yet
    (``bench/calibrate.py`` writes one entry per engine): its documented defaults with the
    reference constants, and a note saying nothing validates them."""
    note = f"no {engine} measurements registered: {REFERENCE_CONSTANTS} constants, unvalidated"
    base = _STRUCTURES[engine]
    profile = replace(base, constants=REFERENCE_CONSTANTS, note=f"{base.note}; {note}")
    return CalibratedProfile(
        engine=engine, version="", profile=profile, calibrated=False,
        rows=0, sources=0, gpus=(), validation=(), note=note,
    )  # fmt: skip


def resolve_profile(engine: str, version: str | None = None) -> CalibratedProfile:
    """The registered build of ``engine``: ``version`` exactly, or with ``None`` the newest
    calibrated build (the unversioned entry when no build of the engine is calibrated).

    Raises :class:`InvalidInput` for an unknown engine or version, listing the known ones.
    Memoised per registry (an unknown one is not remembered: it raises each time).
    """
    reg = profile_registry()
    profiles: dict[tuple[str, str | None], CalibratedProfile] = _memo_for(reg)["profiles"]
    found = profiles.get((engine, version))
    if found is None:
        found = _resolve_profile(reg, engine, version)
        profiles[(engine, version)] = found
    return found


def _resolve_profile(
    reg: Mapping[tuple[str, str], CalibratedProfile], engine: str, version: str | None
) -> CalibratedProfile:
    versions = known_versions(engine)
    if not versions and engine in _STRUCTURES:
        return _uncalibrated(engine)
    if not versions:
        raise InvalidInput(
            f"unknown engine {engine!r}; known: {', '.join(sorted({e for e, _ in reg}))}",
            field="engine",
        )
    if version is None:
        calibrated = [v for v in versions if reg[(engine, v)].calibrated]
        return reg[(engine, (calibrated or list(versions))[-1])]
    version = release_series(version)
    if (engine, version) not in reg:
        listed = ", ".join(v or "(unversioned)" for v in versions)
        raise InvalidInput(
            f"unknown {engine} version {version!r}; known versions: {listed}",
            field="engine_version",
        )
    return reg[(engine, version)]


def release_series(version: str) -> str:
    """``"major.minor"`` of a release as callers write it (``"0.11.2"``, ``"v0.11"``): builds are
    registered per minor series."""
    text = version.strip().lower().removeprefix("v")
    parts = text.split(".")
    if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]):
        return f"{int(parts[0])}.{int(parts[1])}"
    return text


_METRIC_LABELS = {
    "peak_throughput": "peak throughput",
    "throughput_at_load": "throughput at a fixed load",
    "ttft": "TTFT",
    "tpot": "TPOT",
    "itl": "inter-token latency",
}


# What every answer rests on (the validation targets): a note names those of them that no
# held-out measurement checks on the card's family, so a quoted error is never read as
# covering them.
_HEADLINE_METRICS = ("peak_throughput", "throughput_at_load", "ttft", "tpot")


def accuracy_note(entry: CalibratedProfile, family: str) -> str:
    """What a caller should know about the build behind an answer on a card of GPU ``family``:
    its name, the data behind it, its leave-one-source-out error on that family, and which of
    the headline metrics no held-out measurement checks there."""
    head = f"Performance profile {entry.name}"
    if not entry.validation:
        return f"{head}: no measurements validate it ({entry.note}); its error is unknown."
    if entry.calibrated:
        plural = "source" if entry.sources == 1 else "sources"
        basis = f"{head} ({entry.rows} measurements from {entry.sources} {plural})"
    else:
        basis = f"{head} (too little data of its own: {entry.profile.constants} constants)"
    cells = [c for c in entry.validation if c.family == family]
    if not cells:
        covered = ", ".join(sorted({c.family for c in entry.validation})) or "none"
        return (
            f"{basis}: no measurements on {family} GPUs, so its error there is unknown "
            f"(validated on: {covered})."
        )
    order = list(_METRIC_LABELS)
    cells.sort(key=lambda c: order.index(c.metric) if c.metric in order else len(order))
    parts = ", ".join(
        f"{_METRIC_LABELS.get(c.metric, c.metric)} {c.median_ape * 100:.0f}% ({c.n} rows)"
        for c in cells
    )
    measured = {c.metric for c in cells}
    missing = [_METRIC_LABELS[m] for m in _HEADLINE_METRICS if m not in measured]
    gap = f"; not measured there (error unknown): {', '.join(missing)}" if missing else ""
    return f"{basis}: median error on {family} GPUs, each source held out of the fit: {parts}{gap}."


@lru_cache(maxsize=16)
def hybrid_validation(engine: str) -> tuple[ValidationCell, ...]:
    """Leave-one-source-out error of ``engine``'s answers on the published measurements of
    hybrid Mamba-2 models (``FIT_REPORT["loso_hybrid"]``; family ``"hybrid"``), in the order
    of the metric labels. Their Mamba-2 layers have no fitted constant, so these rows are their
    only check; empty when no such measurement exists."""
    report = _constants.FIT_REPORT.get("loso_hybrid", {})
    cells = report.get(engine, {}) if isinstance(report, Mapping) else {}
    order = list(_METRIC_LABELS)
    return tuple(
        ValidationCell(
            "hybrid",
            m,
            int(c["n"]),
            float(c["median_ape"]),
            float(c["within_25pct"]),
            float(c["bias"]),
        )
        for m, c in sorted(cells.items(), key=lambda mc: order.index(mc[0]))
        if m in _METRIC_LABELS
    )


def hybrid_accuracy_note(engine: str) -> str:
    """What the published measurements of hybrid Mamba-2 models say of the model's error on
    them with ``engine`` (:func:`hybrid_validation`), or that none exist."""
    head = (
        "Hybrid Mamba-2 model: its Mamba-2 layers are timed from their weights, state and scan "
        "FLOPs alone (no fitted constant)"
    )
    cells = hybrid_validation(engine)
    if not cells:
        return f"{head}; no published measurement of such a model with {engine} checks them."
    parts = ", ".join(
        f"{_METRIC_LABELS[c.metric]} {c.median_ape * 100:.0f}% ({c.n} rows)" for c in cells
    )
    return (
        f"{head}; median error on the published measurements of such models with {engine}, "
        f"each source held out of the fit: {parts}."
    )


# The profile a plain ``engine`` gets: its newest calibrated build.
PUBLIC_PROFILES: dict[Engine, EngineProfile] = {e: resolve_profile(e).profile for e in ENGINES}


# Profiles of the measured benchmark harnesses (used by bench/; not offered to callers).
def trtllm_bench_profile(version: str) -> EngineProfile:
    """``trtllm-bench throughput`` as the TensorRT-LLM performance overview of release
    ``version`` ran it (its "Reproducing" section).

    v0.10 and v0.11 ran ``gptManagerBenchmark`` with the settings their pages state (below).
    From 0.12 to 0.18, TensorRT backend: the engine is built by the trtllm-bench heuristic
    (max batch from KV memory, <= 4096; token budget batch x (1 + ISL/OSL)),
    GUARANTEED_NO_EVICT, KV 0.95 of free memory (``--kv_cache_free_gpu_mem_fraction 0.95``),
    every layer's cache full length.
    From 0.19 ("Starting with v0.19, testing was performed using the PyTorch backend"): the same
    sizing, MoE models with attention data parallelism and expert parallelism (the overview's
    ``llm_options`` for MoE), sliding-window layers holding their window.
    """
    key = f"trtllm-{version}"
    release = version_key(version)
    pytorch = release >= (0, 19)
    if release < (0, 11):
        # v0.10 ran gptManagerBenchmark on engines built with max_batch_size 2048 and
        # max_num_tokens 2048, chunked context, max_utilization scheduling (no up-front
        # reservation), --kv_cache_free_gpu_mem_fraction 0.9
        return EngineProfile(
            name=key, constants=key, derate=1.0, kv_fraction=0.9, kv_fraction_of="free",
            full_reservation=False, max_batch=2048, max_num_tokens=2048, chunked_prefill=True,
        )  # fmt: skip
    if release < (0, 12):
        # v0.11: gptManagerBenchmark, engines tuned per shape (its table of max_batch_size and
        # max_num_tokens; sized to the batch here), chunked context, guaranteed_no_evict,
        # --kv_cache_free_gpu_mem_fraction 0.99
        return EngineProfile(
            name=key, constants=key, derate=1.0, kv_fraction=0.99, kv_fraction_of="free",
            full_reservation=True, max_batch=4096, max_num_tokens=0, chunked_prefill=True,
        )  # fmt: skip
    return EngineProfile(
        name=key, constants=key, derate=1.0, kv_fraction=0.95, kv_fraction_of="free",
        full_reservation=True, max_batch=4096, max_num_tokens=0, chunked_prefill=False,
        attention_dp_moe=pytorch, window_kv=pytorch,
    )  # fmt: skip


# Releases whose performance overview gpuplan's data holds or may hold.
TRTLLM_BENCH_RELEASES = (
    "0.10", "0.11", "0.12", "0.13", "0.14", "0.15", "0.16", "0.17", "0.18", "0.19", "0.20",
    "0.21", "1.0", "1.1", "1.2",
)  # fmt: skip

BENCH_PROFILES: dict[str, EngineProfile] = {
    **{f"trtllm-{v}": trtllm_bench_profile(v) for v in TRTLLM_BENCH_RELEASES},
    # LMDeploy v0.1.0a1 TurboMind: paged blocks, whole-prompt prefill, KV pool sized so the
    # process holds ~95 % of the card (the source's mem(GB) column: 74-78 of 80 GB).
    "lmdeploy-0.1": EngineProfile(
        name="lmdeploy-0.1", constants="lmdeploy-0.1", derate=1.0, kv_fraction=0.95,
        kv_fraction_of="total", full_reservation=False, max_batch=4096, max_num_tokens=10**9,
        chunked_prefill=False,
    ),
    # NIM 1.8 (TensorRT-LLM engine behind an OpenAI server): serving defaults of TensorRT-LLM,
    # its own fitted constants (the TensorRT-LLM release inside the container is not stated).
    "nim-1.8": EngineProfile(
        name="nim-1.8", constants="nim-1.8", derate=1.0, kv_fraction=0.9,
        kv_fraction_of="free", full_reservation=True, max_batch=2048, max_num_tokens=8192,
        chunked_prefill=False,
    ),
}  # fmt: skip
