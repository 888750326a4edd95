from __future__ import annotations

from pathlib import Path

import pytest

from service.settings import SettingsError, load_settings, redact_url

KEY = "k" * 24


def test_defaults_use_an_embedded_sqlite_file_under_the_data_dir() -> None:
    settings = load_settings({"HOME": "/home/u"})
    assert settings.database_backend == "sqlite"
    assert settings.database_url == "sqlite+aiosqlite:////home/u/.local/share/gpuplan/gpuplan.db"
    assert settings.redis_url is None and settings.cache_backend == "memory"
    assert settings.admin_keys == frozenset()


def test_data_dir_and_urls_are_read() -> None:
    settings = load_settings(
        {
            "GPUPLAN_DATA_DIR": "/srv/gp",
            "GPUPLAN_REDIS_URL": "redis://cache:6379/0",
            "GPUPLAN_ADMIN_KEYS": f"{KEY}, {KEY}x ,",
            "GPUPLAN_CORS_ORIGINS": "https://portal.example.com",
        }
    )
    assert settings.data_dir == Path("/srv/gp")
    assert settings.database_url.endswith("/srv/gp/gpuplan.db")
    assert settings.cache_backend == "redis"
    assert settings.admin_keys == frozenset({KEY, KEY + "x"})
    assert settings.cors_origins == ("https://portal.example.com",)


def test_postgres_url_is_used_as_given() -> None:
    url = "postgresql+asyncpg://u:secret@db:5432/gpuplan"
    settings = load_settings({"GPUPLAN_DATABASE_URL": url})
    assert settings.database_url == url
    assert settings.database_backend == "postgresql"


@pytest.mark.parametrize(
    ("env", "variable", "why"),
    [
        ({"GPUPLAN_DATABASE_URL": "postgresql://u@db/x"}, "GPUPLAN_DATABASE_URL", "asyncpg"),
        ({"GPUPLAN_DATABASE_URL": "mysql://x"}, "GPUPLAN_DATABASE_URL", "expected"),
        ({"GPUPLAN_REDIS_URL": "localhost:6379"}, "GPUPLAN_REDIS_URL", "redis://"),
        ({"GPUPLAN_ADMIN_KEYS": "short"}, "GPUPLAN_ADMIN_KEYS", "shorter than 16"),
        ({"GPUPLAN_SOLVER_WORKERS": "many"}, "GPUPLAN_SOLVER_WORKERS", "integer"),
        ({"GPUPLAN_SOLVER_WORKERS": "0"}, "GPUPLAN_SOLVER_WORKERS", "between"),
        (
            {"GPUPLAN_SOLVER_HELPER_PROCESSES": "some"},
            "GPUPLAN_SOLVER_HELPER_PROCESSES",
            "true or false",
        ),
        ({"GPUPLAN_SOLVE_TIME_LIMIT_S": "nan"}, "GPUPLAN_SOLVE_TIME_LIMIT_S", "between"),
        ({"GPUPLAN_LOG_FORMAT": "xml"}, "GPUPLAN_LOG_FORMAT", "json or text"),
        ({"GPUPLAN_CORS_ORIGINS": "portal.example.com"}, "GPUPLAN_CORS_ORIGINS", "http"),
        ({"GPUPLAN_REDIS_ULR": "redis://x"}, "GPUPLAN_REDIS_ULR", "not a known setting"),
        ({"GPUPLAN_TRUSTED_PROXIES": "10.0.0.0/8, proxy"}, "GPUPLAN_TRUSTED_PROXIES", "proxy"),
        ({"GPUPLAN_SERVICE_ROLE": "app; DROP"}, "GPUPLAN_SERVICE_ROLE", "role name"),
        ({"GPUPLAN_HEADROOM": "some"}, "GPUPLAN_HEADROOM", "expected a number"),
        ({"GPUPLAN_HEADROOM": "-0.1"}, "GPUPLAN_HEADROOM", "between 0.0 and 10.0"),
        ({"GPUPLAN_MAX_GPU_TYPES": "0"}, "GPUPLAN_MAX_GPU_TYPES", "between 1 and 16"),
        (
            {"GPUPLAN_MIN_MIX_SAVINGS_PERCENT": "120"},
            "GPUPLAN_MIN_MIX_SAVINGS_PERCENT",
            "between 0.0 and 100.0",
        ),
        ({"GPUPLAN_ALLOW_MIXED_VENDORS": "maybe"}, "GPUPLAN_ALLOW_MIXED_VENDORS", "true or false"),
    ],
)
def test_a_bad_value_names_the_variable_and_why(
    env: dict[str, str], variable: str, why: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(env)
    assert raised.value.variable == variable
    assert why in str(raised.value)


def test_solver_helpers_are_processes_unless_turned_off() -> None:
    assert load_settings({}).solver_helper_processes is True
    assert load_settings({"GPUPLAN_SOLVER_HELPER_PROCESSES": "false"}).solver_helper_processes is (
        False
    )


def test_trusted_proxies_default_to_none_and_are_normalised() -> None:
    assert load_settings({}).trusted_proxies == ()
    settings = load_settings({"GPUPLAN_TRUSTED_PROXIES": "10.1.0.0/16, 192.0.2.7 ,::1"})
    assert settings.trusted_proxies == ("10.1.0.0/16", "192.0.2.7/32", "::1/128")


def test_the_service_role_is_read() -> None:
    assert load_settings({}).service_role is None
    assert load_settings({"GPUPLAN_SERVICE_ROLE": " gpuplan_app "}).service_role == "gpuplan_app"


def test_test_only_variables_are_ignored() -> None:
    load_settings({"GPUPLAN_TEST_DATABASE_URL": "anything"})


def test_settings_are_frozen_and_keys_hidden_from_repr() -> None:
    settings = load_settings({"GPUPLAN_ADMIN_KEYS": KEY})
    with pytest.raises(AttributeError):
        settings.redis_url = "redis://x"  # type: ignore[misc]  # the frozen write under test
    assert KEY not in repr(settings)


def test_redact_url() -> None:
    assert redact_url("postgresql+asyncpg://u:secret@db/x") == "postgresql+asyncpg://u:***@db/x"
    assert redact_url("redis://cache:6379/0") == "redis://cache:6379/0"


def test_kubernetes_service_link_variables_are_ignored() -> None:
    load_settings(
        {
            "GPUPLAN_SERVICE_HOST": "10.0.0.1",
            "GPUPLAN_SERVICE_PORT": "80",
            "GPUPLAN_SERVICE_PORT_HTTP": "80",
            "GPUPLAN_PORT": "tcp://10.0.0.1:80",
            "GPUPLAN_PORT_80_TCP_ADDR": "10.0.0.1",
            "GPUPLAN_API_SERVICE_HOST": "10.0.0.2",
        }
    )


def test_plan_defaults_are_built_in_unless_set() -> None:
    built_in = load_settings({}).plan_defaults
    assert built_in.headroom is None  # derived from the model's validation error
    assert built_in.mixing.max_gpu_types == 2
    assert built_in.mixing.min_mix_savings_percent == 10.0
    assert built_in.mixing.allow_mixed_vendors is False
    set_ = load_settings(
        {
            "GPUPLAN_HEADROOM": "0.3",
            "GPUPLAN_MAX_GPU_TYPES": "1",
            "GPUPLAN_MIN_MIX_SAVINGS_PERCENT": "5",
            "GPUPLAN_ALLOW_MIXED_VENDORS": "true",
        }
    ).plan_defaults
    assert set_.headroom == 0.3
    assert (set_.mixing.max_gpu_types, set_.mixing.min_mix_savings_percent) == (1, 5.0)
    assert set_.mixing.allow_mixed_vendors is True
    assert load_settings({"GPUPLAN_HEADROOM": "auto"}).plan_defaults.headroom is None
