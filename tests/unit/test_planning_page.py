"""The planning page's form: each control is a GET /v1/plan query parameter (so the page's URL
is that query string) or, for a request mix, a POST /v1/plans body field, names the body path it
fills, is labelled, and has a place for the API's error about it."""

from __future__ import annotations

import re

from service.api.page import render_page
from service.api.schemas.plan_fields import PLAN_FIELDS


def test_every_form_control_is_a_plan_field_with_a_label_and_an_error_slot() -> None:
    html = render_page()
    names = re.findall(r'<(?:input|select) id="([a-z_]+)" data-path="[^"]*"', html)
    fields = {f.name: f for f in PLAN_FIELDS}
    assert names and set(names) <= set(fields)
    assert {n for n in names if not fields[n].query} == {"mix"}  # the one POST-only control
    required = {f.name for f in PLAN_FIELDS if f.query and f.required}
    assert required <= set(names)
    for name in names:
        assert f'id="{name}" data-path="{fields[name].path}"' in html, name
    for name in names:
        assert f'<label for="{name}">' in html, name
        assert f'id="{name}-error" role="alert"' in html, name
        assert re.search(rf'id="{name}"[^>]*aria-describedby="[^"]*{name}-error', html), name


def test_the_page_loads_its_script_and_styles_from_gpuplan() -> None:
    html = render_page()
    assert '<script src="/static/page/plan.js" defer></script>' in html
    assert 'href="/static/page/page.css"' in html
    assert "http://" not in html and "https://" not in html
