"""A request that names no weight format plans the format of the model's published checkpoint:
DeepSeek-V3/R1 publish block-FP8 weights and gpt-oss MXFP4 experts, so planning them in 16 bits
would size a fleet for a checkpoint nobody serves (DeepSeek-R1 in BF16 does not fit eight
H200s; its FP8 release does). A named precision always wins; a pasted ``config.json`` says its
format in ``quantization_config``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from service.app import create_app
from service.domain.errors import InvalidInput
from service.domain.llm import PRESETS, param_counts, planned_precision, resolve_model
from service.domain.llm.hf_config import hf_arch
from service.domain.planner import canonical_document, canonical_request, plan_id
from service.settings import Settings
from tests.unit.planner.test_canonical import draft, snapshot

QUANTIZED_CHECKPOINTS = {
    "deepseek-v3": "fp8",
    "deepseek-v3.2": "fp8",
    "llama-3.1-405b-fp8": "fp8",
    "gpt-oss-120b": "fp4",
    "gpt-oss-20b": "fp4",
}

LLAMA_CONFIG: dict[str, Any] = {
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}


def test_presets_record_their_checkpoints_format() -> None:
    quantized = {k: m.checkpoint_precision for k, m in PRESETS.items()}
    assert {k: v for k, v in quantized.items() if v != "bf16"} == QUANTIZED_CHECKPOINTS


@pytest.mark.parametrize("name", ["deepseek-r1", "deepseek-ai/DeepSeek-V3.1", "gpt-oss-120b"])
def test_no_precision_plans_the_checkpoint_with_the_reason_said(name: str) -> None:
    model = resolve_model(name)
    planned, fmt = planned_precision(model, None)
    assert fmt == model.arch.checkpoint_precision != "bf16"
    assert any(f"Weights in {fmt}" in a for a in planned.assumptions)
    assert planned.arch == model.arch


@pytest.mark.parametrize(
    ("name", "preset", "fmt"),
    [
        ("Qwen/Qwen3-14B-FP8", "qwen3-14b", "fp8"),
        ("zai-org/GLM-4.5-Air-FP8", "glm-4.5-air", "fp8"),
        ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "llama-3.3-70b", "fp8"),
        ("amd/Llama-3.1-70B-Instruct-FP8-KV", "llama-3.1-70b", "fp8"),
        ("nvidia/Llama-3.3-70B-Instruct-FP4", "llama-3.3-70b", "fp4"),
        ("nvidia/Qwen3-235B-A22B-NVFP4", "qwen3-235b-a22b", "fp4"),
        ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int8", "qwen2.5-72b", "int8"),
        ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "qwen2.5-72b", "int4"),
        ("Qwen/Qwen2.5-72B-Instruct-AWQ", "qwen2.5-72b", "int4"),
        ("unsloth/DeepSeek-V3-bf16", "deepseek-v3", "bf16"),
    ],
)
def test_a_quantized_checkpoints_name_sets_its_format(name: str, preset: str, fmt: str) -> None:
    model = resolve_model(name)
    assert model.arch.id == preset
    assert model.arch.checkpoint_precision == fmt != PRESETS[preset].checkpoint_precision
    assert any(name in a and fmt in a for a in model.assumptions)
    # only the format differs from the preset: the shapes, and so the physics, are the same
    assert (
        replace(model.arch, checkpoint_precision=PRESETS[preset].checkpoint_precision)
        == (PRESETS[preset])
    )
    assert planned_precision(model, None)[1] == fmt


def test_an_fp4_checkpoints_name_sets_its_scales() -> None:
    # MXFP4 stores one 8-bit scale per 32 weights, NVFP4 one per 16: 3% fewer weight bytes
    mx, nv = resolve_model("Qwen/Qwen3-32B-MXFP4"), resolve_model("nvidia/Qwen3-32B-NVFP4")
    assert (mx.arch.checkpoint_precision, mx.arch.fp4_scale_block) == ("fp4", 32)
    assert (nv.arch.checkpoint_precision, nv.arch.fp4_scale_block) == ("fp4", 16)
    assert "MXFP4: one scale per 32 weights" in mx.assumptions[-1]
    assert resolve_model("Qwen/Qwen3-32B-FP8").arch.fp4_scale_block == 16
    assert resolve_model("openai/gpt-oss-120b").arch.fp4_scale_block == 32  # the preset's own


@pytest.mark.parametrize(
    "name", ["Qwen/Qwen3-32B", "deepseek-ai/DeepSeek-V3-0324", "meta-llama/Llama-3.1-405B-FP8"]
)
def test_a_name_that_matches_its_presets_format_adds_nothing(name: str) -> None:
    model = resolve_model(name)
    assert not any("a checkpoint of" in a for a in model.assumptions)


def test_a_named_precision_wins_and_adds_nothing() -> None:
    model = resolve_model("deepseek-r1")
    assert planned_precision(model, "bf16") == (model, "bf16")
    llama = resolve_model("llama-3.1-8b")
    assert planned_precision(llama, None) == (llama, "bf16")


def test_deepseek_r1_fits_eight_h200s_as_published_and_not_in_16_bits() -> None:
    # Bytes, not a fit: 671B weights at one byte each are ~84 GB per card of 8, under a
    # 141 GB H200; at two bytes (168 GB per card) they are over it.
    total = param_counts(PRESETS["deepseek-v3"]).total
    assert total / 8 < 141e9 < 2 * total / 8
    as_published = canonical_request(draft(model="deepseek-r1"), snapshot())
    assert as_published.precision == "fp8"
    assert canonical_request(
        draft(model="deepseek-r1", precision="bf16"), snapshot()
    ).precision == ("bf16")


def test_leaving_precision_out_is_the_same_plan_as_naming_the_checkpoints() -> None:
    implicit = canonical_request(draft(model="gpt-oss-120b"), snapshot())
    explicit = canonical_request(draft(model="gpt-oss-120b", precision="fp4"), snapshot())
    assert canonical_document(implicit)["precision"] == "fp4"
    assert plan_id(implicit, 1) == plan_id(explicit, 1)
    other = canonical_request(draft(model="gpt-oss-120b", precision="bf16"), snapshot())
    assert plan_id(other, 1) != plan_id(implicit, 1)


@pytest.mark.parametrize(
    ("quantization", "expected"),
    [
        (None, "bf16"),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8"),
        ({"quant_method": "fbgemm_fp8"}, "fp8"),
        ({"quant_method": "mxfp4"}, "fp4"),
        ({"quant_method": "awq", "bits": 4}, "int4"),
        ({"quant_method": "gptq", "bits": 8}, "int8"),
        ({"quant_method": "compressed-tensors", "format": "float-quantized"}, "fp8"),
        ({"quant_method": "compressed-tensors", "format": "pack-quantized"}, "int4"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "fp4"),
    ],
)
def test_a_pasted_config_says_its_format(
    quantization: dict[str, Any] | None, expected: str
) -> None:
    cfg = dict(LLAMA_CONFIG)
    if quantization is not None:
        cfg["quantization_config"] = quantization
    arch, notes = hf_arch(cfg)
    assert arch.checkpoint_precision == expected
    assert not any("quantization_config" in n for n in notes)


def test_an_unread_quantization_is_said_and_planned_as_16_bit() -> None:
    arch, notes = hf_arch({**LLAMA_CONFIG, "quantization_config": {"quant_method": "bitsandbytes"}})
    assert arch.checkpoint_precision == "bf16"
    assert any("bitsandbytes" in n for n in notes)


@pytest.mark.parametrize(
    ("quantization", "field"),
    [
        ("fp8", "hf_config.quantization_config"),
        ({"quant_method": "gptq", "bits": 3}, "hf_config.quantization_config.bits"),
        ({"quant_method": "awq"}, "hf_config.quantization_config.bits"),
    ],
)
def test_an_impossible_quantization_names_its_field(quantization: object, field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        hf_arch({**LLAMA_CONFIG, "quantization_config": quantization})
    assert err.value.field == field


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient[Litestar]]:
    db = tmp_path_factory.mktemp("checkpoint") / "x.db"
    with TestClient(create_app(Settings(database_url=f"sqlite+aiosqlite:///{db}"))) as c:
        yield c


def test_a_plan_for_a_named_fp8_checkpoint_is_the_fp8_plan() -> None:
    named = canonical_request(draft(model="Qwen/Qwen3-32B-FP8"), snapshot())
    asked = canonical_request(draft(model="qwen3-32b", precision="fp8"), snapshot())
    assert named.precision == "fp8"
    assert plan_id(named, 1) == plan_id(asked, 1)


def test_an_estimate_says_which_format_it_used(client: TestClient[Litestar]) -> None:
    body = {"model": "deepseek-r1", "gpu": "h200-sxm", "prompt_tokens": 1000, "output_tokens": 1000}
    implicit = client.post("/v1/estimate", json=body).json()
    assert implicit["precision"] == "fp8" and implicit["fits"] is True
    assert implicit["tensor_parallel"] == 8
    assert any("Weights in fp8" in a for a in implicit["assumptions"])
    named = client.post("/v1/estimate", json={**body, "precision": "bf16", "tensor_parallel": 8})
    assert named.json()["precision"] == "bf16" and named.json()["fits"] is False
    query = "model=gpt-oss-20b&gpu=h100-sxm&prompt_tokens=512&output_tokens=128"
    assert client.get(f"/v1/estimate?{query}").json()["precision"] == "fp4"


def test_the_model_listing_shows_the_checkpoint_format(client: TestClient[Litestar]) -> None:
    assert client.get("/v1/models/gpt-oss-120b").json()["checkpoint_precision"] == "fp4"
    assert client.get("/v1/models/llama-3.1-70b").json()["checkpoint_precision"] == "bf16"
    named = client.get("/v1/models/Qwen3-32B-FP8").json()
    assert named["id"] == "qwen3-32b" and named["checkpoint_precision"] == "fp8"


def test_a_pasted_fp8_config_plans_fp8_weights(client: TestClient[Litestar]) -> None:
    cfg = {**LLAMA_CONFIG, "quantization_config": {"quant_method": "fp8"}}
    body = {
        "model": {"hf_config": cfg},
        "gpu": "h100-sxm",
        "prompt_tokens": 512,
        "output_tokens": 128,
        "tensor_parallel": 1,
    }
    fp8 = client.post("/v1/estimate", json=body).json()
    bf16 = client.post("/v1/estimate", json={**body, "precision": "bf16"}).json()
    assert fp8["precision"] == "fp8"
    # one byte per weight against two in the transformer body (embedding and head stay 16-bit)
    counts = param_counts(hf_arch(cfg)[0])
    body_params = counts.total - counts.embedding - counts.lm_head
    saved = bf16["memory"]["weights_gb"] - fp8["memory"]["weights_gb"]
    assert saved == pytest.approx(body_params / 1e9, rel=0.02)


def test_replace_keeps_the_format_a_preset_was_given() -> None:
    # DeepSeek-V3.2 is the V3 preset with another name; it inherits the FP8 release format
    assert replace(PRESETS["deepseek-v3"], id="x").checkpoint_precision == "fp8"
