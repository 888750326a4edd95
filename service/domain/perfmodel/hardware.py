"""What a card can do: generation, calibration group, precision support and scale-up links.

Everything here is derived from :class:`~service.domain.catalog.GpuSpec` fields (``architecture``,
``memory_type``, the tensor-throughput columns, ``interconnect_bandwidth_gbps``,
``nvlink_domain``, ``pcie_gen``, ``pcie_lanes``, ``pcie_peer_to_peer``); nothing is looked up
by GPU id, so a GPU added to the catalog gets a prediction without code changes.

Calibration groups
------------------
Efficiency constants are fitted per *group*: what physically differs is the memory technology
(HBM vs GDDR) and the architecture generation (tensor cores, caches, software maturity). The
groups with measured data (``service/data/calibration.csv``) are::

    ampere-hbm      A100 SXM/PCIe                      hopper-hbm   H100, H200 (SXM, PCIe, NVL)
    blackwell-hbm   B200, GB200                        ada-gddr     L40S (and L40, L4, RTX Ada)
    blackwell-gddr  RTX PRO 6000 Blackwell

An uncalibrated GPU uses the nearest calibrated group (rule table ``_GROUP_RULES``) and says so
in the estimate's ``assumptions``: GDDR Ampere and Turing cards -> ``ada-gddr`` (same GDDR6
memory technology); Volta HBM -> ``ampere-hbm`` (the closest HBM generation); AMD CDNA 3 and
Intel Gaudi 3 -> ``hopper-hbm`` efficiencies times ``NON_NVIDIA_DERATE`` (a stated judgement
for kernel/software maturity with no fitted data behind it); anything else by memory type.

Accuracy is reported per *accuracy family* (:func:`accuracy_family`): the group itself for the
cards it was fitted on, and the card's own ``<generation>-<memory>`` family for a card that
borrows it, so a borrowed group's measured error is never quoted for cards it was not measured
on (headroom, the estimate's accuracy note, a team's corrections).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from service.domain.catalog import GpuSpec
from service.domain.perfmodel.values import KvPrecision, Precision

Generation = Literal[
    "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna3", "gaudi3", "other"
]
Mode = Literal["native", "as_fp16", "as_bf16", "weight_only", "fp32", "reject"]

# Substring of ``architecture`` or ``name`` (lower-cased) -> generation; the first match in
# this order wins.
_GENERATION_KEYS: tuple[tuple[str, Generation], ...] = (
    ("blackwell", "blackwell"),
    ("hopper", "hopper"),
    ("ada", "ada"),
    ("ampere", "ampere"),
    ("turing", "turing"),
    ("volta", "volta"),
    ("pascal", "pascal"),
    ("cdna", "cdna3"),
    ("gaudi", "gaudi3"),
)

# Efficiency multiplier for non-NVIDIA accelerators on top of the hopper-hbm constants: a
# judgement (no ROCm / SynapseAI serving data suited to a fit: dstack's MI300X runs are
# early-2025 builds, AMD's own results leave tokens/s undefined), stated in every estimate that
# uses it. Checked, never fitted, against AMD's published MI300X vLLM throughput read both
# ways (bench/RESULTS.md, "Throughput with tokens/s undefined by its source").
NON_NVIDIA_DERATE = 0.85

CALIBRATED_GROUPS: tuple[str, ...] = (
    "ampere-hbm",
    "hopper-hbm",
    "blackwell-hbm",
    "ada-gddr",
    "blackwell-gddr",
)

# (generation, memory class) -> (group, derate, note or "")
_GROUP_RULES: dict[tuple[str, str], tuple[str, float, str]] = {
    ("ampere", "hbm"): ("ampere-hbm", 1.0, ""),
    ("hopper", "hbm"): ("hopper-hbm", 1.0, ""),
    ("blackwell", "hbm"): ("blackwell-hbm", 1.0, ""),
    ("ada", "gddr"): ("ada-gddr", 1.0, ""),
    ("blackwell", "gddr"): ("blackwell-gddr", 1.0, ""),
    ("ampere", "gddr"): ("ada-gddr", 1.0, "GDDR Ampere has no calibration data; using the ada-gddr "
                         "group (same GDDR6 memory technology)"),
    ("turing", "gddr"): ("ada-gddr", 1.0, "Turing has no calibration data; using the ada-gddr "
                         "group (same GDDR6 memory technology)"),
    ("pascal", "gddr"): ("ada-gddr", 1.0, "Pascal has no calibration data; using the ada-gddr "
                         "group's bandwidth efficiency and its compute efficiency on FP32 cores"),
    ("volta", "hbm"): ("ampere-hbm", 1.0, "Volta has no calibration data; using the ampere-hbm "
                       "group (nearest HBM generation)"),
    ("cdna3", "hbm"): ("hopper-hbm", NON_NVIDIA_DERATE, "AMD CDNA 3 has no fitted constants; "
                       f"using hopper-hbm efficiencies x {NON_NVIDIA_DERATE} (judgement)"),
    ("gaudi3", "hbm"): ("hopper-hbm", NON_NVIDIA_DERATE, "Gaudi 3 has no calibration data; "
                        f"using hopper-hbm efficiencies x {NON_NVIDIA_DERATE} (judgement)"),
}  # fmt: skip

# Precision support per generation (one table; see module docstring of perfmodel for the
# policy). "native": tensor cores compute in the format; "as_fp16"/"as_bf16": the other 16-bit
# format is used instead (same bytes); "weight_only": weights stored in the format and
# dequantised in the GEMM (Marlin/Machete-style W4A16/W8A16 kernels), compute at the card's best
# native 16-bit rate; "fp32": no tensor cores, 16-bit weights computed on FP32 CUDA cores;
# "reject": no maintained kernels. CDNA 3 has no FP4 math, but vLLM serves gpt-oss's MXFP4
# experts on MI300X/MI325X (gfx942) from the checkpoint as published (vllm-project/recipes,
# OpenAI/GPT-OSS.md): weight-only.
PRECISION_RULES: dict[str, dict[str, Mode]] = {
    #           bf16        fp16       fp8            int8           int4           fp4
    "pascal": {"bf16": "fp32", "fp16": "fp32", "fp8": "reject", "int8": "reject",
               "int4": "reject", "fp4": "reject"},
    "volta": {"bf16": "as_fp16", "fp16": "native", "fp8": "reject", "int8": "reject",
              "int4": "weight_only", "fp4": "reject"},
    "turing": {"bf16": "as_fp16", "fp16": "native", "fp8": "reject", "int8": "native",
               "int4": "weight_only", "fp4": "reject"},
    "ampere": {"bf16": "native", "fp16": "native", "fp8": "weight_only", "int8": "native",
               "int4": "weight_only", "fp4": "weight_only"},
    "ada": {"bf16": "native", "fp16": "native", "fp8": "native", "int8": "native",
            "int4": "weight_only", "fp4": "weight_only"},
    "hopper": {"bf16": "native", "fp16": "native", "fp8": "native", "int8": "native",
               "int4": "weight_only", "fp4": "weight_only"},
    "blackwell": {"bf16": "native", "fp16": "native", "fp8": "native", "int8": "native",
                  "int4": "weight_only", "fp4": "native"},
    "cdna3": {"bf16": "native", "fp16": "native", "fp8": "native", "int8": "native",
              "int4": "weight_only", "fp4": "weight_only"},
    "gaudi3": {"bf16": "native", "fp16": "as_bf16", "fp8": "native", "int8": "reject",
               "int4": "reject", "fp4": "reject"},
    "other": {"bf16": "native", "fp16": "native", "fp8": "reject", "int8": "reject",
              "int4": "weight_only", "fp4": "reject"},
}  # fmt: skip

# Generations whose FP8 KV cache works (stored FP8, dequantised in attention kernels).
_FP8_KV_OK = frozenset({"ampere", "ada", "hopper", "blackwell", "cdna3", "gaudi3"})


def fp4_weight_bytes(scale_block: int) -> float:
    """Bytes per FP4 weight with one 8-bit scale per ``scale_block`` weights (16: NVFP4's FP8
    scales; 32: MXFP4's E8M0 scales)."""
    return 0.5 + 1.0 / scale_block


# Bytes per weight element as stored. 16-bit: 2. FP8/INT8: 1 (per-channel or 128x128 block
# scales add < 0.1 %). INT4 (GPTQ/AWQ, group 128): 0.5 + a 16-bit scale and a 4-bit zero per 128
# weights = 0.5195. FP4 (NVFP4, as TensorRT-LLM/ModelOpt ship it): 0.5 + one FP8 scale per 16
# weights = 0.5625; a checkpoint in MXFP4 (one 8-bit power-of-two scale per 32 weights, gpt-oss)
# stores 0.53125 (``fp4_weight_bytes``).
WEIGHT_BYTES: dict[str, float] = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5 + 2.0 / 128 + 0.5 / 128,
    "fp4": fp4_weight_bytes(16),
}

# Typical dense 16-bit tensor FLOP per byte of bandwidth per generation (from catalog rows with
# both figures), used only when a card publishes no tensor throughput at all (e.g. A10G).
_FLOP_PER_BYTE: dict[str, float] = {
    "volta": 139.0,  # V100 125 TF / 900 GB/s
    "turing": 203.0,  # T4 65 / 320
    "ampere": 205.0,  # A10 125 / 600, RTX A6000 154.8 / 768
    "ada": 400.0,  # L40S 362 / 864
    "hopper": 295.0,  # H100 SXM 989.5 / 3350
    "blackwell": 281.0,  # B200 2250 / 8000
    "cdna3": 247.0,  # MI300X 1307 / 5300
    "gaudi3": 496.0,  # 1835 / 3700
    "pascal": 28.0,  # P6000 FP32 12 / 432
    "other": 200.0,
}

# PCIe x16 bandwidth per direction (GB/s) by generation: 8/16/32/64/128 GT/s lanes.
PCIE_GBPS_PER_DIRECTION: dict[int, float] = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}
PCIE_HOST_STAGING_FACTOR = 2.0
"""Without PCIe peer-to-peer, NCCL stages each chunk through pinned host memory (its SHM
transport): the sender's DMA into host memory and the receiver's DMA out of it happen one after
the other for a chunk, so each ring step takes twice the latency and moves data at half the
rate of a direct card-to-card write."""


def pcie_gbps_per_direction(gen: int, lanes: int = 16) -> float:
    """GB/s one direction of a PCIe link of generation ``gen`` and ``lanes`` lanes carries:
    the x16 figure of the generation times ``lanes / 16`` (generations past 6 take Gen6's)."""
    x16 = PCIE_GBPS_PER_DIRECTION.get(gen, PCIE_GBPS_PER_DIRECTION[6] if gen > 6 else 15.75)
    return x16 * lanes / 16


def pcie_peer_to_peer(gpu: GpuSpec) -> bool:
    """Whether cards of this kind write into each other's memory over PCIe: the catalog's
    ``pcie_peer_to_peer`` (from datasheets and driver reports). NVIDIA's GeForce drivers
    report none (RTX 3090 and 4090: P2P there needs a patched open kernel module), so NCCL
    stages through host memory; data-centre and workstation cards have it."""
    return gpu.pcie_peer_to_peer


def memory_bytes(gpu: GpuSpec) -> float:
    """Bytes the driver exposes on one card (before any engine allocation).

    GPU memory sizes on datasheets are binary: an "80 GB" H100 has 80 GiB (nvidia-smi shows
    81,559 MiB, 99.6 % of it; H200 143,771 MiB of 141 GiB; B200 ~179 of 180 GiB). So HBM and
    GDDR7 cards expose ``memory_gb * 2^30 * 0.995`` bytes. GDDR6/GDDR6X/GDDR5X cards reserve
    1/16 for ECC, on by default on data-center parts (L4 23,034 MiB of 24 GiB; L40S 46,068 MiB of
    48 GiB; the catalog's A10G note 22,888 MiB), so ``* 0.9375``.
    """
    mt = gpu.memory_type.strip().upper()
    factor = 0.995 if mt.startswith(("HBM", "GDDR7")) else 0.9375
    return gpu.memory_gb * 1024.0**3 * factor


def generation(gpu: GpuSpec) -> Generation:
    """Architecture generation from ``gpu.architecture`` (then ``gpu.name``), case-insensitive."""
    text = f"{gpu.architecture} {gpu.name}".lower()
    for key, gen in _GENERATION_KEYS:
        if key in text:
            return gen
    return "other"


def memory_class(gpu: GpuSpec) -> str:
    """``"hbm"`` for stacked HBM, ``"gddr"`` for GDDR/LPDDR board memory."""
    return "hbm" if gpu.memory_type.strip().upper().startswith("HBM") else "gddr"


@dataclass(frozen=True, slots=True)
class GroupChoice:
    """Calibration group used for a card, its efficiency derate and the note to report."""

    group: str
    derate: float
    note: str


@lru_cache(maxsize=256)
def calibration_group(gpu: GpuSpec) -> GroupChoice:
    """Pick the calibration group for a card (rules in the module docstring)."""
    gen = generation(gpu)
    mem = memory_class(gpu)
    rule = _GROUP_RULES.get((gen, mem))
    if rule is None:
        group = "hopper-hbm" if mem == "hbm" else "ada-gddr"
        return GroupChoice(
            group,
            1.0,
            f"no calibration data for {gen} with {mem.upper()} memory; using the {group} group",
        )
    return GroupChoice(*rule)


def accuracy_family(gpu: GpuSpec) -> str:
    """The GPU family an accuracy figure for this card is about: its calibration group when the
    group was fitted on cards of its kind, else ``"<generation>-<memory class>"``
    (``cdna3-hbm``, ``ampere-gddr``, ``volta-hbm``).

    A card that borrows another group's constants (``_GROUP_RULES`` entries with a note) is
    predicted with them, but the group's measured error says nothing about it: an MI300X plan
    on hopper-hbm efficiencies x 0.85 must not report, or size its headroom by, the error
    measured on H100s and H200s. Measurements on such cards are validated under this family
    (``bench/accuracy.py``), so they neither inflate nor flatter the group they borrow from."""
    choice = calibration_group(gpu)
    if choice.derate == 1.0 and not choice.note:
        return choice.group
    return f"{generation(gpu)}-{memory_class(gpu)}"


@dataclass(frozen=True, slots=True)
class PrecisionPlan:
    """How a weight format runs on a card.

    ``gemm_tflops`` dense peak used for GEMMs; ``attn_tflops`` the 16-bit peak used for
    attention; ``fp_kind`` which fitted low-precision efficiency applies (``"16"``, ``"8"``,
    ``"4"``, ``"32"``); ``weight_bytes`` per element; ``reason`` non-empty when rejected.
    """

    mode: Mode
    weight_bytes: float
    gemm_tflops: float
    attn_tflops: float
    fp_kind: str
    note: str
    reason: str


def _sixteen_bit_tflops(gpu: GpuSpec, gen: str) -> tuple[float, str]:
    if gen == "pascal" or not gpu.fp16_tflops:
        if gen == "pascal" and gpu.fp32_tflops:
            return gpu.fp32_tflops, ""
        est = gpu.memory_bandwidth_gbps * _FLOP_PER_BYTE[gen] / 1000.0
        return est, (
            f"{gpu.id} publishes no 16-bit tensor throughput; assumed {est:.0f} TFLOPS "
            f"({_FLOP_PER_BYTE[gen]:.0f} FLOP/byte x bandwidth, typical of {gen})"
        )
    return gpu.fp16_tflops, ""


@lru_cache(maxsize=1024)
def precision_plan(gpu: GpuSpec, precision: Precision, fp4_scale_block: int = 16) -> PrecisionPlan:
    """Resolve a weight format on a card via ``PRECISION_RULES`` (rates in dense TFLOPS/TOPS);
    FP4 weights carry one scale per ``fp4_scale_block`` of them (the checkpoint's format)."""
    gen = generation(gpu)
    mode = PRECISION_RULES[gen][precision]
    t16, note16 = _sixteen_bit_tflops(gpu, gen)
    if mode == "reject":
        return PrecisionPlan(
            mode, 0.0, 0.0, 0.0, "16", "",
            f"{precision} is not supported on {gpu.name} ({gen}): no tensor-core or "
            "weight-only kernels for it in the serving engines",
        )  # fmt: skip
    if mode == "fp32":
        return PrecisionPlan(
            mode, 2.0, t16, t16, "32",
            f"{gpu.name} has no tensor cores: {precision} weights computed on FP32 cores "
            f"at {t16:g} TFLOPS",
            "",
        )  # fmt: skip
    if mode in ("as_fp16", "as_bf16"):
        other = "fp16" if mode == "as_fp16" else "bf16"
        return PrecisionPlan(
            mode, 2.0, t16, t16, "16",
            f"{precision} not supported natively on {gen}; runs as {other} (same bytes)"
            + (f"; {note16}" if note16 else ""),
            "",
        )  # fmt: skip
    wb = fp4_weight_bytes(fp4_scale_block) if precision == "fp4" else WEIGHT_BYTES[precision]
    if mode == "weight_only":
        return PrecisionPlan(
            mode, wb, t16, t16, "16",
            f"{precision} weight-only on {gen} ({wb:.3g} B/weight; dequantised in the GEMM, "
            f"compute at the 16-bit rate {t16:g} TFLOPS)" + (f"; {note16}" if note16 else ""),
            "",
        )  # fmt: skip
    # native
    if precision in ("bf16", "fp16"):
        return PrecisionPlan(mode, wb, t16, t16, "16", note16, "")
    rate = {
        "fp8": gpu.fp8_tflops,
        "int8": gpu.int8_tops,
        "fp4": gpu.fp4_tflops,
        "int4": None,
    }[precision]
    kind = "4" if precision == "fp4" else "8"
    if not rate:
        return PrecisionPlan(
            "weight_only", wb, t16, t16, "16",
            f"{gpu.name} publishes no {precision} tensor rate; treated as {precision} weight-only "
            f"at the 16-bit rate {t16:g} TFLOPS",
            "",
        )  # fmt: skip
    return PrecisionPlan(mode, wb, rate, t16, kind, note16, "")


def kv_plan(gpu: GpuSpec, kv_precision: KvPrecision) -> tuple[float, str, str]:
    """KV element bytes, a note, and a rejection reason ("" if fine) for a KV format on a card."""
    gen = generation(gpu)
    if kv_precision == "fp8":
        if gen not in _FP8_KV_OK:
            return 0.0, "", f"FP8 KV cache needs Ampere or newer; {gpu.name} is {gen}"
        return 1.0, "", ""
    if kv_precision == "bf16" and gen in ("volta", "turing", "pascal"):
        return 2.0, f"bf16 KV cache stored as fp16 on {gen} (same bytes)", ""
    return 2.0, "", ""


Topology = Literal["none", "switched", "mesh", "ring"]

# Substrings of ``GpuSpec.interconnect`` (lower-cased) naming a topology, first match wins.
# "switch": NVSwitch / NVLink Switch, every card reaches every other at its full link rate.
# "cube-mesh": DGX-1-style hybrid cube mesh, not every pair is linked, so collectives run as
# rings (vLLM's custom all-reduce requires full connectivity and falls back to NCCL rings).
_TOPOLOGY_KEYS: tuple[tuple[str, Topology], ...] = (
    ("switch", "switched"),
    ("cube-mesh", "ring"),
    ("cube mesh", "ring"),
)


@dataclass(frozen=True, slots=True)
class LinkPlan:
    """Scale-up path of a tensor-parallel group.

    ``kind``: ``"none"`` (one card), ``"nvlink"`` (the card's scale-up link: NVLink, xGMI or
    an integrated RoCE fabric) or ``"pcie"``. ``topology``: ``"switched"`` (every card reaches
    every other through a switch at its full link rate), ``"mesh"`` (every pair of cards linked
    directly: NVLink bridges, xGMI's 7 links), ``"ring"`` (PCIe, or a partial mesh: collectives
    hop card to card). ``gbps_per_direction``: bandwidth one card can drive into the rest of the
    group, one direction (GB/s): the whole link on a switch, ``(t - 1) / (domain - 1)`` of it
    on a mesh of ``domain`` cards (one link per peer), PCIe x16 of the card's generation.
    ``nvls``: the switch reduces in the network (NVLink SHARP, NVSwitch generation 3 and later:
    Hopper and Blackwell systems). ``peer_to_peer`` (PCIe only): cards write into each other's
    memory; without it every ring step is staged through host memory
    (:data:`PCIE_HOST_STAGING_FACTOR`). The fitted latency/efficiency constants apply on top.
    """

    kind: str
    gbps_per_direction: float
    note: str
    reason: str
    topology: Topology = "ring"
    nvls: bool = False
    peer_to_peer: bool = True


def link_topology(gpu: GpuSpec) -> Topology:
    """Topology of the card's scale-up domain (``_TOPOLOGY_KEYS`` on ``gpu.interconnect``).

    Unnamed NVLink-class links: a domain of more than 2 cards on an NVIDIA board is switched
    (HGX boards since A100 connect their 8 GPUs through NVSwitches), otherwise a mesh of
    directly linked cards (2-card bridges; AMD xGMI and Gaudi RoCE link every pair).
    """
    text = gpu.interconnect.lower()
    for key, topo in _TOPOLOGY_KEYS:
        if key in text:
            return topo
    nvidia = "nvlink" in text or gpu.vendor.strip().upper() == "NVIDIA"
    if nvidia and gpu.nvlink_domain > 2 and not any(w in text for w in ("bridge", "mesh")):
        return "switched"
    return "mesh"


def link_plan(gpu: GpuSpec, tp: int, allow_pcie: bool) -> LinkPlan:
    """Decide how a TP group of ``tp`` cards talks (NVLink/xGMI/RoCE scale-up or PCIe).

    A group fits the scale-up link when ``tp <= gpu.nvlink_domain`` and the card has one
    (``interconnect_bandwidth_gbps > 0``, which is the both-directions figure; one direction is
    half). Otherwise PCIe (:func:`pcie_gbps_per_direction` of the card's generation and
    ``pcie_lanes``), only when allowed, as a ring, peer to peer or through host memory
    (:func:`pcie_peer_to_peer`).
    """
    if tp == 1:
        return LinkPlan("none", 0.0, "", "", "none")
    domain = max(1, gpu.nvlink_domain)
    if gpu.interconnect_bandwidth_gbps > 0 and tp <= domain:
        topo = link_topology(gpu)
        per_dir = gpu.interconnect_bandwidth_gbps / 2.0
        if topo == "mesh" and domain > 2:
            per_dir *= (tp - 1) / (domain - 1)
        nvls = topo == "switched" and generation(gpu) in ("hopper", "blackwell")
        return LinkPlan("nvlink", per_dir, "", "", topo, nvls)
    pcie = pcie_gbps_per_direction(gpu.pcie_gen, gpu.pcie_lanes)
    p2p = pcie_peer_to_peer(gpu)
    domain = domain if gpu.interconnect_bandwidth_gbps > 0 else 1
    if not allow_pcie:
        if domain == 1:
            why = f"{gpu.name} has no NVLink (PCIe only)"
        else:
            why = f"{gpu.name}'s NVLink domain is {domain} cards"
        return LinkPlan(
            "pcie", pcie, "",
            f"tensor parallel {tp} needs a scale-up link but {why}; "
            "set allow_pcie_tensor_parallel to all-reduce over PCIe",
        )  # fmt: skip
    how = "peer to peer" if p2p else "staged through host memory (no peer-to-peer)"
    return LinkPlan(
        "pcie", pcie,
        f"tensor parallel {tp} all-reduces over PCIe Gen{gpu.pcie_gen} x{gpu.pcie_lanes} "
        f"({pcie:g} GB/s per direction), {how}",
        "", peer_to_peer=p2p,
    )  # fmt: skip
