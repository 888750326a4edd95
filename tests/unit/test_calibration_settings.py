"""``GPUPLAN_DEFAULT_CALIBRATION``: a profile name or pinned version, checked at startup."""

from __future__ import annotations

import pytest

from service.settings import SettingsError, load_settings


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("team-search", "team-search"), ("team-search@v3", "team-search@v3"), ("reference", None)],
)
def test_a_default_profile_is_read(raw: str, expected: str | None) -> None:
    settings = load_settings({"HOME": "/h", "GPUPLAN_DEFAULT_CALIBRATION": raw})
    assert settings.default_calibration == expected


def test_unset_means_the_reference_constants() -> None:
    assert load_settings({"HOME": "/h"}).default_calibration is None


@pytest.mark.parametrize("raw", ["Team Search", "team@3", "x" * 70])
def test_a_bad_default_stops_startup_naming_the_variable(raw: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"HOME": "/h", "GPUPLAN_DEFAULT_CALIBRATION": raw})
    assert caught.value.variable == "GPUPLAN_DEFAULT_CALIBRATION"
