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


def test_the_weight_format_defaults_to_the_checkpoints() -> None:
    # the blank option leaves `precision` out of the query: the server plans the format the
    # checkpoint stores (fp8 for DeepSeek-V3, fp4 for gpt-oss), not bf16 for every model
    html = render_page()
    select = re.search(r'<select id="precision".*?</select>', html, re.S)
    assert select is not None
    options = re.findall(r'<option value="([^"]*)"( selected)?>', select.group(0))
    assert options[0] == ("", " selected")
    assert [v for v, chosen in options[1:] if chosen] == []
    assert {v for v, _ in options[1:]} == {"bf16", "fp16", "fp8", "int8", "int4", "fp4"}
