"""The planning page's form: each control is a GET /v1/plan query parameter (so the page's URL
is that query string), labelled, with a place for the API's error about it."""

from __future__ import annotations

import re

from service.api.page import render_page
from service.api.schemas.plan_fields import PLAN_FIELDS


def test_every_form_control_is_a_plan_query_parameter_with_a_label_and_an_error_slot() -> None:
    html = render_page()
    names = re.findall(r'<(?:input|select) id="([a-z_]+)" name="\1"', html)
    query = {f.name for f in PLAN_FIELDS if f.query}
    assert names and set(names) <= query
    required = {f.name for f in PLAN_FIELDS if f.query and f.required}
    assert required <= set(names)
    for name in names:
        assert f'<label for="{name}">' in html, name
        assert f'id="{name}-error" role="alert"' in html, name
        assert re.search(rf'id="{name}"[^>]*aria-describedby="[^"]*{name}-error', html), name


def test_the_page_loads_its_script_and_styles_from_gpuplan() -> None:
    html = render_page()
    assert '<script src="/static/page/plan.js" defer></script>' in html
    assert 'href="/static/page/page.css"' in html
    assert "http://" not in html and "https://" not in html
