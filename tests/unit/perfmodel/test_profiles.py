"""The registry of calibrated engine builds: the default build of an engine is its newest
calibrated one, an unknown version is a clear error listing the known ones, an engine without
data says so, and every public profile points at constants that exist."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.domain.errors import InvalidInput
from service.domain.llm import resolve_model
from service.domain.perfmodel import engine_builds, estimate
from service.domain.perfmodel.calibration import (
    PUBLIC_PROFILES,
    accuracy_note,
    default_calibration,
    hybrid_accuracy_note,
    hybrid_validation,
    known_versions,
    profile_registry,
    release_series,
    resolve_profile,
)
from service.domain.perfmodel.hardware import CALIBRATED_GROUPS, accuracy_family, calibration_group
from service.domain.perfmodel.serving import estimate_fresh
from service.domain.perfmodel.values import ENGINES, Deployment, RequestShape
from tests.unit.perfmodel.gpu_fixtures import GPUS

_CELL = {"n": 12, "median_ape": 0.1, "within_25pct": 0.9, "bias": -0.02}
SYNTHETIC = {
    "vllm-0.6": {"engine": "vllm", "version": "0.6", "constants": "vllm-0.6",
                 "calibrated": True, "rows": 40, "sources": 2, "gpus": ["a100-sxm-80gb"],
                 "note": "fitted", "validation": {"ampere-hbm": {"ttft": _CELL}}},
    "vllm-0.11": {"engine": "vllm", "version": "0.11", "constants": "vllm-0.11",
                  "calibrated": True, "rows": 400, "sources": 12, "gpus": ["h100-sxm"],
                  "note": "fitted", "validation": {"hopper-hbm": {"tpot": _CELL}}},
    "vllm-0.19": {"engine": "vllm", "version": "0.19", "constants": "vllm",
                  "calibrated": False, "rows": 15, "sources": 1, "gpus": ["h100-sxm"],
                  "note": "pooled", "validation": {}},
    "tgi": {"engine": "tgi", "version": "", "constants": "trtllm-1.0", "calibrated": False,
            "rows": 0, "sources": 0, "gpus": [], "note": "no usable tgi measurements",
            "validation": {}},
}  # fmt: skip


@pytest.fixture
def synthetic(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(engine_builds, "PROFILES", SYNTHETIC)
    profile_registry.cache_clear()
    yield
    profile_registry.cache_clear()


@pytest.mark.usefixtures("synthetic")
def test_default_is_the_newest_calibrated_build() -> None:
    # 0.19 is newer but has no fit of its own: 0.11 (not 0.6: versions compare numerically)
    entry = resolve_profile("vllm")
    assert (entry.engine, entry.version, entry.calibrated) == ("vllm", "0.11", True)
    assert entry.profile.constants == "vllm-0.11"
    assert entry.name == "vllm-0.11"
    assert known_versions("vllm") == ("0.6", "0.11", "0.19")


@pytest.mark.usefixtures("synthetic")
def test_a_named_version_resolves_and_carries_its_validation() -> None:
    entry = resolve_profile("vllm", "0.6")
    assert entry.rows == 40 and entry.sources == 2
    (cell,) = entry.validation
    assert (cell.family, cell.metric, cell.n, cell.median_ape) == ("ampere-hbm", "ttft", 12, 0.1)
    assert resolve_profile("vllm", "0.19").profile.constants == "vllm"


@pytest.mark.usefixtures("synthetic")
def test_unknown_version_lists_the_known_ones() -> None:
    with pytest.raises(InvalidInput) as err:
        resolve_profile("vllm", "0.7")
    assert "0.6, 0.11, 0.19" in err.value.message
    assert err.value.field == "engine_version"
    with pytest.raises(InvalidInput, match="unknown engine"):
        resolve_profile("llamacpp")


@pytest.mark.usefixtures("synthetic")
def test_engine_without_data_says_so() -> None:
    entry = resolve_profile("tgi")
    assert not entry.calibrated and entry.rows == 0 and entry.validation == ()
    assert "no usable" in entry.note
    assert entry.profile.derate == 1.0  # no judgement multiplier dressed up as data


def test_committed_registry_covers_every_public_engine() -> None:
    cal = default_calibration()
    assert set(PUBLIC_PROFILES) == set(ENGINES)
    for engine in ENGINES:
        entry = resolve_profile(engine)
        assert entry.profile.constants in cal.engine_by_name
        assert PUBLIC_PROFILES[engine] == entry.profile
        if entry.calibrated:
            assert entry.rows > 0 and entry.sources > 0
    for (name, version), entry in profile_registry().items():
        assert entry.engine == name and entry.version == version
        assert entry.profile.constants in cal.engine_by_name


def test_an_engine_with_no_registered_build_is_uncalibrated_not_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A newly added engine has documented defaults but no build until the next calibration.
    without_tgi = {k: v for k, v in engine_builds.PROFILES.items() if k != "tgi"}
    monkeypatch.setattr(engine_builds, "PROFILES", without_tgi)
    profile_registry.cache_clear()
    try:
        entry = resolve_profile("tgi")
        assert not entry.calibrated and entry.rows == 0 and entry.validation == ()
        assert entry.profile.constants in default_calibration().engine_by_name
        assert "unvalidated" in entry.note
        with pytest.raises(InvalidInput, match="unknown engine"):
            resolve_profile("no-such-engine")
    finally:
        profile_registry.cache_clear()


@pytest.mark.parametrize(
    ("given", "series"),
    [("0.11", "0.11"), ("0.11.2", "0.11"), ("v0.6", "0.6"), ("1.0.0rc3", "1.0")],
)
def test_a_patch_release_selects_its_minor_series(given: str, series: str) -> None:
    assert release_series(given) == series


@pytest.mark.usefixtures("synthetic")
def test_patch_releases_resolve_to_their_series_build() -> None:
    assert resolve_profile("vllm", "0.11.3").name == "vllm-0.11"


@pytest.mark.usefixtures("synthetic")
def test_the_accuracy_note_quotes_the_held_out_error_of_the_family_asked() -> None:
    note = accuracy_note(resolve_profile("vllm", "0.6"), "ampere-hbm")
    assert "vllm-0.6" in note and "40 measurements from 2 sources" in note
    assert "TTFT 10% (12 rows)" in note and "ampere-hbm" in note
    elsewhere = accuracy_note(resolve_profile("vllm", "0.6"), "hopper-hbm")
    assert "error there is unknown" in elsewhere and "validated on: ampere-hbm" in elsewhere
    unvalidated = accuracy_note(resolve_profile("tgi"), "hopper-hbm")
    assert "error is unknown" in unvalidated and "no usable tgi measurements" in unvalidated


@pytest.mark.usefixtures("synthetic")
def test_the_accuracy_note_names_the_headline_metrics_no_measurement_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A quoted error covers only the metrics measured on the family: the others of peak
    throughput, throughput at a fixed load, TTFT and TPOT are named as unchecked, so a TTFT
    error is never read as a throughput error. A build checked on all four names none."""
    note = accuracy_note(resolve_profile("vllm", "0.6"), "ampere-hbm")
    quoted, _, unchecked = note.partition("; not measured there (error unknown): ")
    assert "TTFT 10% (12 rows)" in quoted
    assert unchecked == "peak throughput, throughput at a fixed load, TPOT."
    full = dict.fromkeys(("peak_throughput", "throughput_at_load", "ttft", "tpot", "itl"), _CELL)
    entry = {**SYNTHETIC["vllm-0.6"], "validation": {"ampere-hbm": full}}
    monkeypatch.setattr(engine_builds, "PROFILES", {**SYNTHETIC, "vllm-0.6": entry})
    profile_registry.cache_clear()
    complete = accuracy_note(resolve_profile("vllm", "0.6"), "ampere-hbm")
    assert "not measured" not in complete and "inter-token latency 10% (12 rows)" in complete
    single = {**SYNTHETIC["vllm-0.6"], "sources": 1}
    monkeypatch.setattr(engine_builds, "PROFILES", {**SYNTHETIC, "vllm-0.6": single})
    profile_registry.cache_clear()
    assert "40 measurements from 1 source)" in accuracy_note(
        resolve_profile("vllm", "0.6"), "ampere-hbm"
    )


@pytest.mark.parametrize(
    ("card", "family"),
    [
        ("h100-sxm", "hopper-hbm"),
        ("l4", "ada-gddr"),
        ("mi300x", "cdna3-hbm"),
        ("gaudi3", "gaudi3-hbm"),
        ("a10g", "ampere-gddr"),
        ("t4", "turing-gddr"),
        ("v100-sxm2-32gb", "volta-hbm"),
    ],
)
def test_a_card_is_its_groups_accuracy_family_only_when_the_group_was_fitted_on_its_kind(
    card: str, family: str
) -> None:
    assert accuracy_family(GPUS[card]) == family
    borrowed = calibration_group(GPUS[card]).note != ""
    assert borrowed == (family not in CALIBRATED_GROUPS)


def test_an_estimate_on_borrowed_constants_says_its_error_there_is_unknown() -> None:
    """The default vllm build is validated on Hopper; an MI300X estimate runs on hopper-hbm
    efficiencies x 0.85 and must not quote the error measured on H100s and H200s."""
    shape = RequestShape(1024, 256)
    amd = estimate(
        resolve_model("llama-3.1-70b").arch,
        Deployment(GPUS["mi300x"], 1, "fp8", "fp8", "vllm"),
        shape,
    )
    hopper = estimate(
        resolve_model("llama-3.1-70b").arch,
        Deployment(GPUS["h100-sxm"], 4, "fp8", "fp8", "vllm"),
        shape,
    )
    amd_note = next(a for a in amd.assumptions if a.startswith("Performance profile"))
    hopper_note = next(a for a in hopper.assumptions if a.startswith("Performance profile"))
    assert "no measurements on cdna3-hbm GPUs" in amd_note and "unknown" in amd_note
    assert "median error on hopper-hbm GPUs" in hopper_note


def test_a_hybrid_models_answers_quote_the_error_measured_on_hybrid_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mamba-2 layers have no fitted constant: an estimate of a hybrid model says so, with the
    held-out error on published hybrid-model measurements of its engine, or that none exist;
    a transformer's estimate has no such note."""
    from service.domain.perfmodel import constants

    report = {**constants.FIT_REPORT, "loso_hybrid": {"vllm": {"tpot": _CELL, "ttft": _CELL}}}
    monkeypatch.setattr(constants, "FIT_REPORT", report)
    hybrid_validation.cache_clear()
    monkeypatch.setattr(constants, "FIT_REPORT", report)
    assert "TTFT 10% (12 rows), TPOT 10% (12 rows)" in hybrid_accuracy_note("vllm")
    assert "no published measurement" in hybrid_accuracy_note("sglang")
    nano = resolve_model("nemotron-3-nano-30b-a3b").arch
    dep = Deployment(GPUS["b200"], 2, "fp8", "fp8", "sglang")
    shape = RequestShape(2048, 512)
    assert hybrid_accuracy_note("sglang") in estimate_fresh(nano, dep, shape).assumptions
    llama = resolve_model("llama-3.1-8b").arch
    assert not any(
        "Mamba-2" in a for a in estimate_fresh(llama, dep, shape, concurrency=8).assumptions
    )
    hybrid_validation.cache_clear()
