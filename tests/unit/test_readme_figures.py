"""The README's figures are current: the chart is what the service draws now (regenerated and
compared), and the page screenshot the browser test took is a PNG the README shows."""

from __future__ import annotations

import struct

from service import readme_figures
from service.readme_examples import README

SCREENSHOT = readme_figures.IMAGES / "planning-page.png"


def test_the_readme_chart_is_what_the_service_draws() -> None:
    said: list[str] = []
    assert readme_figures.main(["--check"], out=said.append) == 0, said


def test_the_readme_shows_the_chart_and_the_page_screenshot() -> None:
    text = README.read_text()
    assert "](docs/images/cost-vs-load.svg)" in text
    assert "](docs/images/planning-page.png)" in text
    png = SCREENSHOT.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width == 1200 and height > 900  # the browser test's viewport, the whole page
