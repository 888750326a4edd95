"""Service settings: read once from ``GPUPLAN_*`` environment variables, typed and frozen.

``load_settings(environ)`` is the only place that reads the environment. A bad value raises
``SettingsError`` naming the variable and why, so the process stops before it serves anything.
Secrets (admin keys, passwords inside URLs) never appear in ``repr`` or logs.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from service.domain.planner.request import MixingPolicy, PlanDefaults, PlanPolicy
from service.domain.providers import DEFAULT_PROVIDERS

PREFIX = "GPUPLAN_"
MIN_ADMIN_KEY_LENGTH = 16

LogFormat = Literal["json", "text"]
T = TypeVar("T")


class SettingsError(ValueError):
    """A setting has a value the service cannot run with."""

    def __init__(self, variable: str, why: str) -> None:
        super().__init__(f"{variable}: {why}")
        self.variable = variable
        self.why = why


def redact_url(url: str) -> str:
    """Return ``url`` with any password replaced by ``***`` (for logs and /readyz)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


@dataclass(frozen=True, slots=True)
class Settings:
    """Typed, frozen service configuration. Build it with ``load_settings`` or directly in tests."""

    database_url: str
    data_dir: Path = Path(".")
    redis_url: str | None = None
    admin_keys: frozenset[str] = field(default_factory=frozenset, repr=False)
    plan_cache_ttl_s: int = 86_400
    plan_cache_max_entries: int = 2_000
    solver_workers: int = 2
    solver_queue: int = 32
    solver_helper_processes: bool = True
    solve_time_limit_s: float = 2.0
    max_body_bytes: int = 256 * 1024
    max_ingest_body_bytes: int = 8 * 1024 * 1024
    cors_origins: tuple[str, ...] = ()
    log_level: str = "INFO"
    log_format: LogFormat = "json"
    write_rate_limit_per_minute: int = 60
    trusted_proxies: tuple[str, ...] = ()
    service_role: str | None = None
    catalog_refresh_s: float = 1.0
    redis_timeout_ms: int = 100
    database_timeout_s: float = 2.0
    headroom: float | None = None
    max_gpu_types: int = 2
    min_mix_savings_percent: float = 10.0
    allow_mixed_vendors: bool = False
    default_providers: tuple[str, ...] = DEFAULT_PROVIDERS
    price_max_age_days: int | None = 180
    default_calibration: str | None = None
    settle_heap: bool = True

    @property
    def plan_defaults(self) -> PlanDefaults:
        """What a plan request leaves out of ``headroom`` and ``mixing`` (``headroom`` ``None``:
        derived from the performance model's validation error), and the provider and price-age
        policy."""
        return PlanDefaults(
            headroom=self.headroom,
            mixing=MixingPolicy(
                max_gpu_types=self.max_gpu_types,
                min_mix_savings_percent=self.min_mix_savings_percent,
                allow_mixed_vendors=self.allow_mixed_vendors,
            ),
            policy=PlanPolicy(self.default_providers, self.price_max_age_days),
        )

    @property
    def cache_backend(self) -> str:
        return "redis" if self.redis_url else "memory"

    @property
    def database_backend(self) -> str:
        return "postgresql" if self.database_url.startswith("postgresql") else "sqlite"


def default_data_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/gpuplan``, else ``~/.local/share/gpuplan``."""
    base = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME", ".")) / ".local" / "share")
    return Path(base) / "gpuplan"


def _int(name: str, raw: str, *, minimum: int, maximum: int) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingsError(name, f"expected an integer, got {raw!r}") from None
    if not minimum <= value <= maximum:
        raise SettingsError(name, f"must be between {minimum} and {maximum}, got {value}")
    return value


def _float(name: str, raw: str, *, minimum: float, maximum: float) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise SettingsError(name, f"expected a number, got {raw!r}") from None
    if not minimum <= value <= maximum:
        raise SettingsError(name, f"must be between {minimum} and {maximum}, got {value}")
    return value


def _database_url(name: str, raw: str) -> str:
    url = raw.strip()
    if url.startswith("postgresql+asyncpg://") or url.startswith("sqlite+aiosqlite:///"):
        return url
    if url.startswith(("postgres://", "postgresql://")):
        raise SettingsError(
            name, "use the asyncpg driver: postgresql+asyncpg://user:pass@host:5432/db"
        )
    raise SettingsError(
        name, "expected postgresql+asyncpg://... or sqlite+aiosqlite:///path/to/file.db"
    )


def _redis_url(name: str, raw: str) -> str:
    url = raw.strip()
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise SettingsError(name, "expected redis://host:port/db, rediss://... or unix://...")
    return url


def _admin_keys(name: str, raw: str) -> frozenset[str]:
    keys = [k.strip() for k in raw.split(",") if k.strip()]
    for index, key in enumerate(keys):
        if len(key) < MIN_ADMIN_KEY_LENGTH:
            raise SettingsError(
                name,
                f"key #{index + 1} is shorter than {MIN_ADMIN_KEY_LENGTH} characters "
                "(use long random keys, e.g. `openssl rand -hex 24`)",
            )
        if any(c.isspace() for c in key):
            raise SettingsError(name, f"key #{index + 1} contains whitespace")
    return frozenset(keys)


def _origins(name: str, raw: str) -> tuple[str, ...]:
    origins = tuple(o.strip() for o in raw.split(",") if o.strip())
    for origin in origins:
        if origin != "*" and not origin.startswith(("http://", "https://")):
            raise SettingsError(name, f"origin {origin!r} must start with http:// or https://")
    return origins


def _proxies(name: str, raw: str) -> tuple[str, ...]:
    """Comma-separated addresses or CIDR networks, normalised (``10.0.0.0/8``, ``::1/128``)."""
    networks = []
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        try:
            networks.append(str(ipaddress.ip_network(entry, strict=False)))
        except ValueError:
            raise SettingsError(
                name, f"{entry!r} is not an IP address or network (e.g. 10.0.0.0/8)"
            ) from None
    return tuple(networks)


def _role(name: str, raw: str) -> str:
    """A Postgres role name: lowercase letters, digits and underscores, at most 63."""
    role = raw.strip()
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
        raise SettingsError(name, f"expected a role name such as gpuplan_app, got {raw!r}")
    return role


def _choice(name: str, raw: str, choices: tuple[str, ...]) -> str:
    value = raw.strip()
    if value.upper() in choices:
        return value.upper()
    if value.lower() in choices:
        return value.lower()
    raise SettingsError(name, f"expected one of {', '.join(choices)}, got {raw!r}")


def _providers(name: str, raw: str) -> tuple[str, ...]:
    """Comma-separated provider kinds or provider ids (lowercase slugs), in the order given."""
    entries = tuple(dict.fromkeys(e.strip().lower() for e in raw.split(",") if e.strip()))
    for entry in entries:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", entry):
            raise SettingsError(name, f"{entry!r} is not a provider id or kind")
    if not entries:
        raise SettingsError(name, "name at least one provider kind or id")
    return entries


_DEFAULT_MAX_AGE_DAYS: int | None = 180


def _max_age_days(name: str, raw: str) -> int | None:
    """Days, or ``off``."""
    if raw.strip().lower() == "off":
        return None
    return _int(name, raw, minimum=1, maximum=36_500)


KNOWN = frozenset(
    {
        "DATABASE_URL",
        "DATA_DIR",
        "REDIS_URL",
        "ADMIN_KEYS",
        "PLAN_CACHE_TTL_S",
        "PLAN_CACHE_MAX_ENTRIES",
        "SOLVER_WORKERS",
        "SOLVER_QUEUE",
        "SOLVER_HELPER_PROCESSES",
        "SOLVE_TIME_LIMIT_S",
        "MAX_BODY_BYTES",
        "MAX_INGEST_BODY_BYTES",
        "CORS_ORIGINS",
        "LOG_LEVEL",
        "LOG_FORMAT",
        "WRITE_RATE_LIMIT_PER_MINUTE",
        "TRUSTED_PROXIES",
        "SERVICE_ROLE",
        "CATALOG_REFRESH_S",
        "REDIS_TIMEOUT_MS",
        "DATABASE_TIMEOUT_S",
        "HEADROOM",
        "MAX_GPU_TYPES",
        "MIN_MIX_SAVINGS_PERCENT",
        "ALLOW_MIXED_VENDORS",
        "DEFAULT_PROVIDERS",
        "PRICE_MAX_AGE_DAYS",
        "DEFAULT_CALIBRATION",
        "SETTLE_HEAP",
    }
)


# Kubernetes injects <SERVICE>_SERVICE_HOST, <SERVICE>_PORT, <SERVICE>_PORT_80_TCP... for every
# Service in the namespace; a Service named gpuplan(-anything) would otherwise look like typos.
_SERVICE_LINK = re.compile(
    r"^([A-Z0-9_]+_)?(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[A-Z0-9_]+)?)$"
)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read ``GPUPLAN_*`` variables from ``environ`` (default: the process environment).

    Unknown ``GPUPLAN_*`` names are rejected so that a typo cannot silently fall back to a
    default (``GPUPLAN_TEST_*`` variables belong to the test suite, and Kubernetes service-link
    variables such as ``GPUPLAN_SERVICE_HOST`` or ``GPUPLAN_PORT_80_TCP`` are ignored).
    """
    env = dict(os.environ if environ is None else environ)
    ours = {k[len(PREFIX) :]: v for k, v in env.items() if k.startswith(PREFIX)}
    for key in sorted(ours):
        if key not in KNOWN and not key.startswith("TEST_") and not _SERVICE_LINK.match(key):
            raise SettingsError(
                PREFIX + key, f"not a known setting (known: {', '.join(sorted(KNOWN))})"
            )

    def get(key: str, parse: Callable[[str, str], T], default: T) -> T:
        raw = ours.get(key)
        if raw is None or raw.strip() == "":
            return default
        return parse(PREFIX + key, raw)

    data_dir = get("DATA_DIR", lambda _n, raw: Path(raw).expanduser(), default_data_dir(env))
    database_url = get("DATABASE_URL", _database_url, "")
    if not database_url:  # the embedded default: a SQLite file under the data directory
        database_url = f"sqlite+aiosqlite:///{data_dir / 'gpuplan.db'}"

    return Settings(
        database_url=database_url,
        data_dir=data_dir,
        redis_url=get("REDIS_URL", _redis_url, None),
        admin_keys=get("ADMIN_KEYS", _admin_keys, frozenset()),
        plan_cache_ttl_s=get(
            "PLAN_CACHE_TTL_S", lambda n, r: _int(n, r, minimum=1, maximum=30 * 86_400), 86_400
        ),
        plan_cache_max_entries=get(
            "PLAN_CACHE_MAX_ENTRIES",
            lambda n, r: _int(n, r, minimum=1, maximum=1_000_000),
            2_000,
        ),
        solver_workers=get(
            "SOLVER_WORKERS",
            lambda n, r: _int(n, r, minimum=1, maximum=256),
            max(1, min(4, os.cpu_count() or 1)),
        ),
        solver_queue=get("SOLVER_QUEUE", lambda n, r: _int(n, r, minimum=0, maximum=10_000), 32),
        solver_helper_processes=get("SOLVER_HELPER_PROCESSES", _bool, True),
        solve_time_limit_s=get(
            "SOLVE_TIME_LIMIT_S", lambda n, r: _float(n, r, minimum=0.05, maximum=60.0), 2.0
        ),
        max_body_bytes=get(
            "MAX_BODY_BYTES",
            lambda n, r: _int(n, r, minimum=1024, maximum=64 * 1024 * 1024),
            256 * 1024,
        ),
        max_ingest_body_bytes=get(
            "MAX_INGEST_BODY_BYTES",
            lambda n, r: _int(n, r, minimum=1024, maximum=256 * 1024 * 1024),
            8 * 1024 * 1024,
        ),
        cors_origins=get("CORS_ORIGINS", _origins, ()),
        log_level=get(
            "LOG_LEVEL",
            lambda n, r: _choice(n, r, ("DEBUG", "INFO", "WARNING", "ERROR")),
            "INFO",
        ),
        log_format=get("LOG_FORMAT", _log_format, "json"),
        write_rate_limit_per_minute=get(
            "WRITE_RATE_LIMIT_PER_MINUTE",
            lambda n, r: _int(n, r, minimum=0, maximum=1_000_000),
            60,
        ),
        trusted_proxies=get("TRUSTED_PROXIES", _proxies, ()),
        service_role=get("SERVICE_ROLE", _role, None),
        catalog_refresh_s=get(
            "CATALOG_REFRESH_S", lambda n, r: _float(n, r, minimum=0.05, maximum=3600.0), 1.0
        ),
        redis_timeout_ms=get(
            "REDIS_TIMEOUT_MS", lambda n, r: _int(n, r, minimum=1, maximum=60_000), 100
        ),
        database_timeout_s=get(
            "DATABASE_TIMEOUT_S", lambda n, r: _float(n, r, minimum=0.05, maximum=300.0), 2.0
        ),
        headroom=get("HEADROOM", _headroom, None),
        max_gpu_types=get("MAX_GPU_TYPES", lambda n, r: _int(n, r, minimum=1, maximum=16), 2),
        min_mix_savings_percent=get(
            "MIN_MIX_SAVINGS_PERCENT", lambda n, r: _float(n, r, minimum=0.0, maximum=100.0), 10.0
        ),
        allow_mixed_vendors=get("ALLOW_MIXED_VENDORS", _bool, False),
        default_providers=get("DEFAULT_PROVIDERS", _providers, DEFAULT_PROVIDERS),
        price_max_age_days=get("PRICE_MAX_AGE_DAYS", _max_age_days, _DEFAULT_MAX_AGE_DAYS),
        default_calibration=get("DEFAULT_CALIBRATION", _calibration, None),
        settle_heap=get("SETTLE_HEAP", _bool, True),
    )


def _calibration(name: str, raw: str) -> str | None:
    """A calibration profile every request without one uses (``name`` or ``name@vN``);
    ``reference``: none."""
    from service.domain.errors import InvalidInput
    from service.domain.profiles.values import REFERENCE, parse_spec

    value = raw.strip()
    if value == REFERENCE:
        return None
    try:
        parse_spec(value)
    except InvalidInput as exc:
        raise SettingsError(name, exc.message) from None
    return value


def _headroom(name: str, raw: str) -> float | None:
    """``auto`` (derived from the model's validation error) or a fraction in [0, 10]."""
    if raw.strip().lower() == "auto":
        return None
    return _float(name, raw, minimum=0.0, maximum=10.0)


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise SettingsError(name, f"expected true or false, got {raw!r}")


def _log_format(name: str, raw: str) -> LogFormat:
    value = raw.strip().lower()
    if value == "json":
        return "json"
    if value == "text":
        return "text"
    raise SettingsError(name, f"expected json or text, got {raw!r}")
