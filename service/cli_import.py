"""``gpuplan catalog import --format skypilot``: read the file (or URL), say what was imported.

The import itself is ``usecases.price_import.import_price_catalog``, the same code
``POST /v1/prices/import`` runs.
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import PurePosixPath

from service.domain.price_import import ImportTally, PriceImportResult
from service.store.csv_format import format_timestamp

MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024
DOWNLOAD_TIMEOUT_S = 60
_URL = re.compile(r"^https?://", re.IGNORECASE)


def is_url(path_or_url: str) -> bool:
    return bool(_URL.match(path_or_url))


def read_text(path_or_url: str) -> str:
    """The file's text (UTF-8), from a path or an http(s) URL (at most ``MAX_DOWNLOAD_BYTES``).
    Raises ``OSError`` / ``ValueError`` with a readable message."""
    if is_url(path_or_url):
        # http(s) only (is_url), so no file: or custom scheme reaches urlopen
        request = urllib.request.Request(path_or_url, headers={"User-Agent": "gpuplan"})  # noqa: S310
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as response:  # noqa: S310
            data: bytes = response.read(MAX_DOWNLOAD_BYTES + 1)
        if len(data) > MAX_DOWNLOAD_BYTES:
            raise ValueError(f"{path_or_url}: larger than {MAX_DOWNLOAD_BYTES} bytes")
    else:
        with open(path_or_url, "rb") as f:
            data = f.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path_or_url}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None


def cloud_from_location(path_or_url: str, clouds: tuple[str, ...]) -> str | None:
    """The cloud a SkyPilot catalog location names (``.../aws/vms.csv``), if any."""
    location = path_or_url.split("?", 1)[0].rstrip("/")
    parent = PurePosixPath(location.replace("\\", "/")).parent.name.lower()
    return parent if parent in clouds else None


def summary(result: PriceImportResult, location: str) -> str:
    """What the command prints: what was read, what was written, and a table of every row or
    price left out or adjusted, by reason."""
    parsed = result.parsed
    offers = ", ".join(f"{kind} {count}" for kind, count in parsed.offers.items())
    when = format_timestamp(result.observed_at)
    if result.repeated:
        when += " (this file was imported before: its date is reused)"
    lines = [
        f"imported {parsed.provider} prices from {location} (sha256 {result.content_sha256[:16]})",
        f"observed_at {when}",
        f"rows {parsed.rows}; offers: {offers}",
        f"inserted {result.inserted}, already present {result.already_present}; "
        f"catalog revision {result.revision}",
    ]
    lines += _table("skipped", parsed.skipped)
    lines += _table("adjusted", parsed.adjusted)
    return "\n".join(lines)


def _table(title: str, tallies: tuple[ImportTally, ...]) -> list[str]:
    if not tallies:
        return ["", f"{title}: none"]
    width = max(len(t.reason) for t in tallies)
    lines = ["", f"{title:<{width}}  scope  {'count':>5}  why"]
    lines += [f"{t.reason:<{width}}  {t.scope:<5}  {t.count:>5}  {t.detail}" for t in tallies]
    return lines
