"""The README's chart: ``docs/images/cost-vs-load.svg``.

``python -m service.readme_figures`` (run by ``make readme``) starts gpuplan in-process on a fresh
embedded catalog, asks it for the cost-vs-load chart of the README's example request and writes
the file; ``--check`` writes nothing and exits 1 when the committed file differs (a test runs
it). The chart is deterministic for a given catalog and code.

The README's screenshot of the planning page (``docs/images/planning-page.png``) is the one the
browser test (``tests/integration/test_planning_page.py``) takes: ``make screenshot`` runs that
test with its artifacts written to ``docs/images/``. A screenshot depends on the machine's
fonts, so it is not compared byte for byte.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

from service.native_stdout import divert_native_stdout

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
CHART = IMAGES / "cost-vs-load.svg"
QUERY = (
    "model=llama-3.1-70b&precision=fp8&qps=40&prompt_tokens=1024&output_tokens=256"
    "&ttft_ms=1500&tpot_ms=60&budget_usd_per_hour=150"
)
"""The README's curl examples' request."""


def chart_svg() -> bytes:
    """The cost-vs-load chart of :data:`QUERY` from a fresh embedded service."""
    from litestar.testing import TestClient

    from service.app import create_app
    from service.settings import load_settings

    with tempfile.TemporaryDirectory(prefix="gpuplan-figures-") as data_dir:
        settings = load_settings({"HOME": data_dir, "GPUPLAN_DATA_DIR": data_dir})
        with TestClient(create_app(settings)) as client:
            answer = client.get(f"/v1/curves/cost-vs-load.svg?{QUERY}")
            answer.raise_for_status()
            return answer.content


def main(argv: list[str] | None = None, *, out: Callable[[str], object] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the chart is out of date")
    args = parser.parse_args(argv)
    svg = chart_svg()
    if args.check:
        if not CHART.exists() or CHART.read_bytes() != svg:
            out(f"{CHART.relative_to(ROOT)} is out of date: run `make readme`")
            return 1
        return 0
    IMAGES.mkdir(parents=True, exist_ok=True)
    CHART.write_bytes(svg)
    out(f"wrote {CHART.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    divert_native_stdout()  # HiGHS' stray printf stays off the terminal (service.native_stdout)
    raise SystemExit(main())
