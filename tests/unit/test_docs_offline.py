"""Pages work with no internet: every script, style sheet, icon and link of the planning page
and the API documentation is served by gpuplan itself, the documentation's from pinned,
vendored files with their licences."""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from service.api.assets import SCALAR_VERSION, SWAGGER_UI_VERSION, static_directory
from service.app import create_app
from service.settings import Settings

PAGES = ("/", "/docs", "/docs/swagger")
VENDOR = static_directory() / "vendor"


class _References(HTMLParser):
    """Every URL an element of a page loads or links to (``src``, ``href``, ``data-url``)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in {"src", "href", "data-url"} and value is not None:
                self.urls.append((tag, value))


def references(html: str) -> list[tuple[str, str]]:
    parser = _References()
    parser.feed(html)
    return parser.urls


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient[Litestar]]:
    db = tmp_path_factory.mktemp("docs") / "x.db"
    with TestClient(create_app(Settings(database_url=f"sqlite+aiosqlite:///{db}"))) as c:
        yield c


@pytest.mark.parametrize("page", PAGES)
def test_a_page_loads_only_what_gpuplan_serves(client: TestClient[Litestar], page: str) -> None:
    response = client.get(page)
    assert response.status_code == 200
    found = references(response.text)
    scripts = [url for tag, url in found if tag == "script"]
    assert scripts, "the page loads its renderer"
    for tag, url in found:
        if url.startswith("#"):
            continue  # a place on the same page
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{page}: <{tag}> references {url}"
        assert url.startswith("/"), url
        loaded = client.get(url)
        assert loaded.status_code == 200, f"{page}: {url} answers {loaded.status_code}"
        assert loaded.content, url
    assert "cdn." not in response.text and "jsdelivr" not in response.text


def test_the_renderers_are_the_pinned_versions(client: TestClient[Litestar]) -> None:
    scalar = references(client.get("/docs").text)
    swagger = references(client.get("/docs/swagger").text)
    assert any(f"scalar-api-reference-{SCALAR_VERSION}/" in url for _, url in scalar)
    assert any(f"swagger-ui-dist-{SWAGGER_UI_VERSION}/" in url for _, url in swagger)
    served = client.get(f"/static/vendor/scalar-api-reference-{SCALAR_VERSION}/standalone.js")
    assert served.headers["content-type"].startswith(("text/javascript", "application/javascript"))
    assert "max-age=86400" in served.headers["cache-control"]


def test_the_scalar_page_asks_for_no_fonts_telemetry_or_proxy(
    client: TestClient[Litestar],
) -> None:
    html = client.get("/docs").text
    assert '"withDefaultFonts":false' in html
    assert '"telemetry":false' in html
    assert '"proxyUrl":""' in html


def test_each_vendored_package_carries_its_licence_and_is_recorded() -> None:
    readme = (VENDOR / "README.md").read_text()
    packages = sorted(p for p in VENDOR.iterdir() if p.is_dir())
    assert [p.name for p in packages] == [
        f"scalar-api-reference-{SCALAR_VERSION}",
        f"swagger-ui-dist-{SWAGGER_UI_VERSION}",
    ]
    for package in packages:
        assert (package / "LICENSE").read_text().strip(), package.name
        assert f"`{package.name}/`" in readme
    assert (
        "Apache License" in (VENDOR / f"swagger-ui-dist-{SWAGGER_UI_VERSION}/LICENSE").read_text()
    )
    assert "MIT License" in (VENDOR / f"scalar-api-reference-{SCALAR_VERSION}/LICENSE").read_text()
