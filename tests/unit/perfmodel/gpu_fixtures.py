"""GpuSpec fixtures built from /work/shared/reference/gpus.csv values (dense tensor figures).

Embedded so the perf-model tests do not depend on the catalog file's current contents. GB200 and
RTX PRO 6000 values follow service/data/gpus.csv (not in the reference file).
"""

from __future__ import annotations

from service.domain.catalog import GpuSpec


def _spec(
    id_: str,
    name: str,
    arch: str,
    mem_gb: float,
    mem_type: str,
    bw: float,
    fp32: float | None,
    fp16: float | None,
    fp8: float | None,
    fp4: float | None,
    int8: float | None,
    link_gbps: float,
    domain: int,
    pcie_gen: int,
) -> GpuSpec:
    return GpuSpec(
        id=id_,
        vendor="NVIDIA" if not id_.startswith(("mi", "gaudi")) else "other",
        name=name,
        architecture=arch,
        launch_year=2024,
        memory_gb=mem_gb,
        memory_type=mem_type,
        memory_bandwidth_gbps=bw,
        fp32_tflops=fp32,
        tf32_tflops=None,
        fp16_tflops=fp16,
        fp8_tflops=fp8,
        fp4_tflops=fp4,
        int8_tops=int8,
        tdp_w=None,
        interconnect="NVLink" if link_gbps else "PCIe",
        interconnect_bandwidth_gbps=link_gbps,
        nvlink_domain=domain,
        pcie_gen=pcie_gen,
        form_factor="SXM" if domain > 2 else "PCIe",
        mig_instances=0,
    )


GPUS: dict[str, GpuSpec] = {
    g.id: g
    for g in (
        _spec("h100-sxm", "H100 SXM5 80GB", "Hopper (GH100)", 80, "HBM3", 3350,
              67, 989.5, 1979, None, 1979, 900, 8, 5),
        _spec("h200-sxm", "H200 SXM 141GB", "Hopper (GH100)", 141, "HBM3e", 4800,
              67, 989.5, 1979, None, 1979, 900, 8, 5),
        _spec("b200", "B200", "Blackwell (GB100)", 180, "HBM3e", 8000,
              80, 2250, 4500, 9000, 4500, 1800, 8, 6),
        _spec("gb200", "GB200", "Blackwell (GB100)", 186, "HBM3e", 8000,
              80, 2500, 5000, 10000, 5000, 1800, 72, 5),
        _spec("a100-sxm-80gb", "A100 SXM4 80GB", "Ampere (GA100)", 80, "HBM2e", 2039,
              19.5, 312, None, None, 624, 600, 8, 4),
        _spec("a100-pcie-80gb", "A100 80GB PCIe", "Ampere (GA100)", 80, "HBM2e", 1935,
              19.5, 312, None, None, 624, 600, 2, 4),
        _spec("l40s", "L40S", "Ada Lovelace (AD102)", 48, "GDDR6", 864,
              91.6, 362.05, 733, None, 733, 0, 1, 4),
        _spec("l4", "L4", "Ada Lovelace (AD104)", 24, "GDDR6", 300,
              30.3, 121, 242.5, None, 242.5, 0, 1, 4),
        _spec("rtx-pro-6000-blackwell", "RTX PRO 6000 Blackwell Server Edition",
              "Blackwell (GB202)", 96, "GDDR7", 1597, 120, 500, 1000, 2000, None, 0, 1, 5),
        _spec("t4", "T4", "Turing (TU104)", 16, "GDDR6", 320, 8.1, 65, None, None, 130, 0, 1, 3),
        _spec("v100-sxm2-32gb", "V100 SXM2 32GB", "Volta (GV100)", 32, "HBM2", 900,
              15.7, 125, None, None, None, 300, 8, 3),
        _spec("quadro-p6000", "Quadro P6000", "Pascal (GP102)", 24, "GDDR5X", 432,
              12, None, None, None, None, 0, 1, 3),
        _spec("a10g", "A10G", "Ampere (GA102, AWS-specific variant)", 24, "GDDR6", 600,
              None, None, None, None, None, 0, 1, 4),
        _spec("mi300x", "Instinct MI300X", "CDNA 3", 192, "HBM3", 5300,
              163.4, 1307.4, 2614.9, None, 2614.9, 896, 8, 5),
        _spec("gaudi3", "Gaudi 3", "Gaudi 3 (MME + TPC)", 128, "HBM2e", 3700,
              229, 1835, 1835, None, None, 1200, 8, 5),
    )
}  # fmt: skip
