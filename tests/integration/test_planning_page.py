"""The planning page in a real headless Chromium (Debian's ``chromium``, driven by Playwright;
no browser download): fill the form, submit, see the fleet table and rendered charts, share the
page's URL, trigger a validation error and see it by its field; the API docs render too. Every
request any page makes goes to gpuplan itself. A screenshot of the answered page is kept.

Chromium missing: skipped with the reason, except under ``CI=true`` (``.ci/run`` installs it),
where that is a failure."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from service.app import create_app
from service.cache.memory import MemoryPlanCache
from service.settings import Settings
from tests.support.server import live_server

pytestmark = pytest.mark.integration

CHROMIUM = os.environ.get("GPUPLAN_TEST_CHROMIUM", "/usr/bin/chromium")
TIMEOUT_MS = 120_000  # the first charts solve their sweeps on a busy 2-core machine


def _chromium() -> str:
    found = shutil.which(CHROMIUM) or (CHROMIUM if Path(CHROMIUM).exists() else None)
    if found is None:
        reason = f"chromium not found at {CHROMIUM} (apt-get install -y chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("page") / "x.db"
    app = create_app(
        Settings(database_url=f"sqlite+aiosqlite:///{db}"), plan_cache=MemoryPlanCache()
    )
    with live_server(app) as url:
        yield url


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("GPUPLAN_TEST_ARTIFACTS")
    path = Path(where) if where else tmp_path_factory.mktemp("artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_the_planning_page_plans_draws_and_shows_errors_by_field(
    base_url: str, artifacts: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    executable = _chromium()
    requested: list[str] = []
    own = urlsplit(base_url).netloc
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("request", lambda r: requested.append(r.url))
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(f"{base_url}/")
            expect(page.get_by_role("heading", name="gpuplan")).to_be_visible()

            page.get_by_label("Model").fill("llama-3.1-8b")
            page.get_by_label("Load (requests/s)").fill("5")
            page.get_by_label("Prompt tokens per request").fill("512")
            page.get_by_label("Output tokens per request").fill("128")
            page.get_by_label("TPOT limit (ms)").fill("50")
            page.get_by_label("GPUs").fill("h100-sxm,l40s,a10g")
            page.get_by_label("GPUs").press("Enter")  # keyboard submission

            fleet_rows = page.locator("#fleet tbody tr")
            expect(fleet_rows.first).to_be_visible()
            assert fleet_rows.first.locator("td").first.inner_text() in {"h100-sxm", "l40s", "a10g"}
            expect(page.locator("#summary")).to_contain_text("/hour")
            # How old the prices are today comes in the answer's headers (the plan is the same
            # on every day); the page warns exactly when the service says they are stale.
            answer = httpx.get(
                f"{base_url}/v1/plan",
                params={"model": "llama-3.1-8b", "qps": 5, "prompt_tokens": 512,
                        "output_tokens": 128, "tpot_ms": 50, "gpus": "h100-sxm,l40s,a10g"},
            )  # fmt: skip
            warning = page.locator("#price-age")
            if answer.headers.get("x-prices-stale") == "true":
                days = answer.headers["x-prices-age-days"]
                expect(warning).to_be_visible()
                expect(warning).to_contain_text(f"observed {days} days ago")
            else:
                expect(warning).to_be_hidden()
            for chart in ("#chart-gpu", "#chart-load", "#chart-slo"):
                page.wait_for_function(
                    "id => { const i = document.querySelector(id);"
                    " return i.complete && i.naturalWidth > 0; }",
                    arg=chart,
                )
            assert "qps=5" in page.url and "model=llama-3.1-8b" in page.url
            shot = artifacts / "planning-page.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"\nplanning page screenshot: {shot}")
            assert shot.stat().st_size > 10_000

            shared = browser.new_page()
            shared.on("request", lambda r: requested.append(r.url))
            shared.set_default_timeout(TIMEOUT_MS)
            shared.goto(page.url)  # the shareable URL opens the same plan
            expect(shared.locator("#fleet tbody tr").first).to_be_visible()
            assert shared.locator("#summary").inner_text() == page.locator("#summary").inner_text()

            page.get_by_label("Load (requests/s)").fill("-3")
            page.get_by_role("button", name="Plan the fleet").click()
            error = page.locator("#qps-error")
            expect(error).not_to_be_empty()
            expect(page.get_by_label("Load (requests/s)")).to_have_attribute("aria-invalid", "true")
            expect(page.get_by_label("Load (requests/s)")).to_be_focused()
            assert page.locator("#model-error").inner_text() == ""

            page.get_by_label("Load (requests/s)").fill("5")
            page.get_by_label("Request mix (optional)").fill("0.8:512:200,0.2:4000:300")
            page.get_by_role("button", name="Plan the fleet").click()
            expect(page.locator("#form-status")).to_have_text("Plan ready.")
            expect(page.locator("#fleet tbody tr").first).to_be_visible()
            assert "mix=0.8" in page.url
            page.get_by_label("Request mix (optional)").fill("0.9:512:200,0.2:4000:300")
            page.get_by_role("button", name="Plan the fleet").click()
            expect(page.locator("#mix-error")).not_to_be_empty()  # shares must sum to 1
            expect(page.get_by_label("Request mix (optional)")).to_be_focused()

            for docs in ("/docs", "/docs/swagger"):
                page.goto(f"{base_url}{docs}")
                page.wait_for_load_state("networkidle")
            expect(page.locator("#swagger-container .info .title").first).to_contain_text("gpuplan")
        finally:
            browser.close()
    others = sorted({u for u in requested if urlsplit(u).netloc not in {own, ""}})
    assert not [u for u in others if not u.startswith(("data:", "blob:"))], others
