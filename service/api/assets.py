"""Browser assets gpuplan serves itself: the pinned, vendored API documentation scripts
(``static/vendor/``, versions and licences in its README) and the planning page's own files.

Nothing a page of gpuplan loads comes from another host, so the documentation works on a
network without internet access and cannot change under us.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from litestar.datastructures import CacheControlHeader
from litestar.openapi.plugins import (
    OpenAPIRenderPlugin,
    ScalarRenderPlugin,
    SwaggerRenderPlugin,
)
from litestar.router import Router
from litestar.static_files import create_static_files_router

STATIC_PATH = "/static"
SCALAR_VERSION = "1.76.0"
SWAGGER_UI_VERSION = "5.35.0"

_SCALAR = f"{STATIC_PATH}/vendor/scalar-api-reference-{SCALAR_VERSION}"
_SWAGGER = f"{STATIC_PATH}/vendor/swagger-ui-dist-{SWAGGER_UI_VERSION}"
_FAVICON = f"<link rel='icon' type='image/png' href='{_SWAGGER}/favicon-32x32.png'>"

SCALAR_OPTIONS = {
    "withDefaultFonts": False,  # the system font stack: no font files from scalar.com
    "telemetry": False,
    "proxyUrl": "",  # the "try it" client calls this server directly (same origin)
}


def static_directory() -> Path:
    """The package's ``api/static`` directory (served under ``STATIC_PATH``)."""
    return Path(str(resources.files("service.api").joinpath("static")))


def static_router() -> Router:
    """``GET /static/...``: the vendored scripts and the page's files, cached by browsers for a
    day (a new version of a vendored package lands under a new directory name)."""
    return create_static_files_router(
        path=STATIC_PATH,
        directories=[static_directory()],
        name="static",
        cache_control=CacheControlHeader(public=True, max_age=86400),
        include_in_schema=False,
    )


def docs_render_plugins() -> list[OpenAPIRenderPlugin]:
    """Scalar at ``/docs`` and Swagger UI at ``/docs/swagger``, both from the vendored files."""
    return [
        ScalarRenderPlugin(
            path="/",
            js_url=f"{_SCALAR}/standalone.js",
            css_url=f"{STATIC_PATH}/docs.css",
            options=SCALAR_OPTIONS,
            favicon=_FAVICON,
        ),
        SwaggerRenderPlugin(
            path="/swagger",
            js_url=f"{_SWAGGER}/swagger-ui-bundle.js",
            css_url=f"{_SWAGGER}/swagger-ui.css",
            standalone_preset_js_url=f"{_SWAGGER}/swagger-ui-standalone-preset.js",
            favicon=_FAVICON,
        ),
    ]
