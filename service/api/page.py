"""The planning page at ``/``: a form for a plan request whose answer (fleet, cost, charts,
alternatives, rejections) is drawn by ``static/page/plan.js`` from the API itself.

The page's own URL is shareable: its query string is the ``GET /v1/plan`` query string, so
``/?model=llama-3.1-8b&qps=5&...`` opens the page with that plan. A request mix, which that query
string cannot carry, adds ``mix=share:prompt:output,...`` to the page's URL, and the page then
sends the ``POST /v1/plans`` body instead (each control names the body path it fills). Everything
it loads is served by gpuplan (no other host); errors the API answers are shown next to the
field a problem's ``field`` names.
"""

from __future__ import annotations

from html import escape
from typing import get_args

from litestar import Response, get
from litestar.datastructures import CacheControlHeader

from service.api.assets import STATIC_PATH
from service.api.schemas.plan_fields import PLAN_FIELDS
from service.domain.llm import preset_ids
from service.domain.vocabulary import Engine, Precision, PricingChoice

_PAGE_ASSETS = f"{STATIC_PATH}/page"
_FIELDS = {f.name: f for f in PLAN_FIELDS}


def _options(values: tuple[str, ...], selected: str, blank: str = "") -> str:
    """``<option>``s of ``values``; ``blank`` (when given) labels a first, empty one: the field
    left out of the request, so the server's default applies."""
    first = f'<option value=""{" selected" if not selected else ""}>{escape(blank)}</option>'
    return (first if blank else "") + "".join(
        f'<option value="{escape(v)}"{" selected" if v == selected else ""}>{escape(v)}</option>'
        for v in values
    )


def _field(
    name: str,
    label: str,
    control: str,
    hint: str = "",
) -> str:
    hint_html = f'<span class="hint" id="{name}-hint">{escape(hint)}</span>' if hint else ""
    described = f"{name}-hint {name}-error" if hint else f"{name}-error"
    field = _FIELDS[name]  # the body path a control fills, for the script and its errors
    control = control.replace("{described}", described).replace(
        f'id="{name}"', f'id="{name}" data-path="{field.path}" data-shape="{field.shape}"', 1
    )
    return (
        f'<div class="field" data-field="{name}">'
        f'<label for="{name}">{escape(label)}</label>{control}{hint_html}'
        f'<span class="error" id="{name}-error" role="alert" aria-live="polite"></span>'
        "</div>"
    )


def _number(
    name: str,
    label: str,
    *,
    step: str = "any",
    min_: str = "0",
    value: str = "",
    required: bool = False,
    hint: str = "",
) -> str:
    req = " required" if required else ""
    return _field(
        name,
        label,
        f'<input id="{name}" name="{name}" type="number" step="{step}" min="{min_}" '
        f'value="{escape(value)}" inputmode="decimal" aria-describedby="{{described}}"{req}>',
        hint,
    )


def _text(
    name: str,
    label: str,
    *,
    value: str = "",
    required: bool = False,
    hint: str = "",
    listing: str = "",
) -> str:
    req = " required" if required else ""
    data = f' list="{listing}"' if listing else ""
    return _field(
        name,
        label,
        f'<input id="{name}" name="{name}" type="text" value="{escape(value)}" '
        f'autocomplete="off" aria-describedby="{{described}}"{data}{req}>',
        hint,
    )


def _select(
    name: str,
    label: str,
    values: tuple[str, ...],
    selected: str,
    hint: str = "",
    blank: str = "",
) -> str:
    return _field(
        name,
        label,
        f'<select id="{name}" name="{name}" aria-describedby="{{described}}">'
        f"{_options(values, selected, blank)}</select>",
        hint,
    )


def render_page() -> str:
    """The page's HTML (the same for every visitor; the script fills it in)."""
    models = "".join(f'<option value="{escape(m)}"></option>' for m in preset_ids())
    form = "".join(
        [
            "<fieldset><legend>Model and load</legend>",
            _text(
                "model",
                "Model",
                value="llama-3.1-8b",
                required=True,
                listing="models",
                hint="A preset id or alias.",
            ),
            _number("qps", "Load (requests/s)", value="10", required=True),
            _number(
                "prompt_tokens",
                "Prompt tokens per request",
                step="1",
                min_="1",
                value="512",
                required=True,
            ),
            _number(
                "output_tokens",
                "Output tokens per request",
                step="1",
                min_="1",
                value="128",
                required=True,
            ),
            _text(
                "mix",
                "Request mix (optional)",
                hint="Several shapes as share:prompt:output, comma-separated, e.g. "
                "0.8:512:200,0.2:4000:300; it replaces the two token counts.",
            ),
            _select(
                "precision",
                "Weight precision",
                get_args(Precision),
                "",
                blank="checkpoint's format",
                hint="Left at the checkpoint's format: bf16 for most models, fp8 for "
                "DeepSeek-V3/R1, fp4 for gpt-oss.",
            ),
            _select("engine", "Serving engine", get_args(Engine), "vllm"),
            "</fieldset><fieldset><legend>Latency SLO</legend>",
            _number("ttft_ms", "TTFT limit (ms)", hint="Time to first token; empty: no limit."),
            _number(
                "tpot_ms",
                "TPOT limit (ms)",
                value="50",
                hint="Time per output token; empty: no limit.",
            ),
            _number("percentile", "Percentile", step="0.1", min_="50", value="95"),
            "</fieldset><fieldset><legend>Money and hardware</legend>",
            _number("budget_usd_per_hour", "Budget (USD/hour)", hint="Empty: no budget."),
            _select("pricing", "Pricing", get_args(PricingChoice), "on_demand"),
            _text("providers", "Providers", hint="Comma-separated, e.g. aws,gcp; empty: any."),
            _text("gpus", "GPUs", hint="Comma-separated ids or aliases; empty: any."),
            "</fieldset>",
        ]
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>gpuplan: plan a GPU fleet</title>
<link rel="stylesheet" href="{_PAGE_ASSETS}/page.css">
<script src="{_PAGE_ASSETS}/plan.js" defer></script>
</head>
<body>
<a class="skip" href="#answer">Skip to the plan</a>
<header><h1>gpuplan</h1><p>The cheapest GPU fleet for a model, a load, a latency SLO and a
budget. <a href="/docs">API documentation</a></p></header>
<main>
<form id="plan-form" novalidate aria-describedby="form-status">
<datalist id="models">{models}</datalist>
{form}
<div class="actions"><button type="submit">Plan the fleet</button>
<a id="share" href="/">Link to this plan</a></div>
<p id="form-status" role="status" aria-live="polite"></p>
</form>
<section id="answer" aria-live="polite" tabindex="-1" hidden>
<h2>Plan</h2>
<p id="summary"></p>
<p id="price-age" role="note" hidden></p>
<table id="fleet"><caption>Fleet</caption><thead><tr>
<th scope="col">GPU</th><th scope="col">Provider</th><th scope="col">Instance</th>
<th scope="col">Tensor parallel</th><th scope="col">Replicas</th><th scope="col">Cards</th>
<th scope="col">USD/hour</th><th scope="col">TTFT (ms)</th><th scope="col">TPOT (ms)</th>
</tr></thead><tbody></tbody></table>
<ul id="explanation"></ul>
<h2>Charts</h2>
<figure><img id="chart-load" alt="Cost vs load chart">
<figcaption>USD/hour of the cheapest fleet as the load grows, for this plan and for each GPU
alone.</figcaption></figure>
<figure><img id="chart-slo" alt="Cost vs latency SLO chart">
<figcaption>USD/hour as the TPOT and TTFT limits tighten or loosen.</figcaption></figure>
<figure><img id="chart-gpu" alt="Per GPU chart">
<figcaption>Cost per million output tokens and load per replica, per GPU.</figcaption></figure>
<h2>Alternatives: one GPU type alone</h2>
<table id="alternatives"><thead><tr><th scope="col">GPU</th><th scope="col">USD/hour</th>
<th scope="col">Cards</th></tr></thead><tbody></tbody></table>
<h2>Rejected GPUs</h2>
<table id="rejected"><thead><tr><th scope="col">GPU</th><th scope="col">Why</th></tr></thead>
<tbody></tbody></table>
</section>
</main>
</body>
</html>
"""


@get("/", include_in_schema=False, cache_control=CacheControlHeader(no_cache=True))
async def planning_page() -> Response[str]:
    """The planning page (HTML)."""
    return Response(render_page(), media_type="text/html; charset=utf-8")
