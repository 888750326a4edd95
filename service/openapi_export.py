"""Write the OpenAPI document the app serves to ``openapi/openapi.json`` and ``.yaml``.

``python -m service.openapi_export`` (or ``make openapi``) regenerates both files; a test fails
when the committed files differ from what the app generates (``--check`` does the same here).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

OUT_DIR = Path(__file__).resolve().parents[1] / "openapi"


def openapi_document() -> dict[str, Any]:
    """The schema exactly as ``GET /docs/openapi.json`` serves it (no database is touched)."""
    from service.app import create_app
    from service.settings import Settings

    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    schema: dict[str, Any] = app.openapi_schema.to_schema()
    return schema


def render(document: dict[str, Any]) -> tuple[str, str]:
    as_json = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    as_yaml = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return as_json, as_yaml


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the files are out of date")
    args = parser.parse_args(argv)
    as_json, as_yaml = render(openapi_document())
    targets = {OUT_DIR / "openapi.json": as_json, OUT_DIR / "openapi.yaml": as_yaml}
    if args.check:
        stale = [p.name for p, text in targets.items() if not p.exists() or p.read_text() != text]
        if stale:
            print(f"out of date: {', '.join(stale)}; run `make openapi`", file=sys.stderr)
            return 1
        return 0
    OUT_DIR.mkdir(exist_ok=True)
    for path, text in targets.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(OUT_DIR.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
