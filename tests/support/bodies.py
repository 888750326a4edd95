"""Request bodies more than one test builds on."""

from __future__ import annotations

from typing import Any

# The least a GPU spec write needs (an H100-like card).
MINIMAL_GPU_SPEC: dict[str, Any] = {
    "vendor": "NVIDIA",
    "name": "Example",
    "architecture": "Hopper (GH100)",
    "launch_year": 2024,
    "memory_gb": 80.0,
    "memory_type": "HBM3",
    "memory_bandwidth_gbps": 3350.0,
}

# A Llama-3.1-8B-shaped Hugging Face config.json (the fields the model reader uses).
LLAMA_8B_HF_CONFIG: dict[str, Any] = {
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "intermediate_size": 14336,
}

# A small plan: Llama-3.1-8B on L4 and L40S, quick to solve.
SMALL_PLAN: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "workload": {"qps": 5, "prompt_tokens": 256, "output_tokens": 64},
    "slo": {"tpot_ms": 120},
    "constraints": {"gpus": ["l4", "l40s"]},
}
