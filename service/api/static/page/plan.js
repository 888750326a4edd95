// The planning page: the form's fields are the GET /v1/plan query parameters; the answer is
// drawn from the API's JSON, the charts are the server's SVG pictures. No other host is used.
"use strict";

// The form's named controls, in page order: each is a GET /v1/plan query parameter (but `mix`,
// which only the POST /v1/plans body takes) and names the body path it fills (data-path).
let FIELDS = [];
const CHARTS = { "chart-load": "cost-vs-load", "chart-slo": "cost-vs-slo", "chart-gpu": "per-gpu" };

const $ = (id) => document.getElementById(id);
const usd = (n) => n.toLocaleString("en-US", { style: "currency", currency: "USD" });

function query(form) {
  const params = new URLSearchParams();
  for (const name of FIELDS) {
    const value = form.elements[name].value.trim();
    if (value !== "") params.set(name, value);
  }
  return params;
}

// The POST /v1/plans body the form stands for (used when it gives a request mix).
function requestBody(form) {
  const out = {};
  for (const name of FIELDS) {
    const input = form.elements[name];
    const raw = input.value.trim();
    if (raw === "" || name === "prompt_tokens" || name === "output_tokens") continue;
    let value = raw;
    if (input.dataset.shape === "names") value = raw.split(",").map((s) => s.trim()).filter(Boolean);
    else if (input.dataset.shape === "mix") {
      value = raw.split(",").map((item) => {
        const [share, prompt, output] = item.split(":").map((s) => Number(s.trim()));
        return { share, prompt_tokens: prompt, output_tokens: output };
      });
    } else if (input.type === "number") value = Number(raw);
    const steps = input.dataset.path.split(".");
    let node = out;
    for (const step of steps.slice(0, -1)) node = node[step] = node[step] || {};
    node[steps[steps.length - 1]] = value;
  }
  return out;
}

// The control a problem's field names: a query parameter, or a body path (or a path inside one).
function control(form, field) {
  if (!field) return null;
  if (FIELDS.includes(field)) return form.elements[field];
  const path = field.replace(/\[\d+\]/g, "");
  let best = null;
  for (const name of FIELDS) {
    const own = form.elements[name].dataset.path;
    if (path === own || path.startsWith(`${own}.`)) {
      if (!best || own.length > best.dataset.path.length) best = form.elements[name];
    }
  }
  return best;
}

function fill(form, params) {
  for (const name of FIELDS) {
    if (params.has(name)) form.elements[name].value = params.get(name);
  }
}

function clearErrors(form) {
  for (const name of FIELDS) {
    form.elements[name].removeAttribute("aria-invalid");
    $(`${name}-error`).textContent = "";
  }
  $("form-status").textContent = "";
}

function showProblem(form, problem) {
  const items = problem.errors && problem.errors.length
    ? problem.errors
    : [{ field: problem.field, message: problem.detail }];
  let first = null;
  const elsewhere = [];
  for (const item of items) {
    const input = control(form, item.field);
    if (input) {
      input.setAttribute("aria-invalid", "true");
      $(`${input.name}-error`).textContent = item.message;
      first = first || input;
    } else {
      elsewhere.push(item.message);
    }
  }
  $("form-status").textContent = elsewhere.length
    ? elsewhere.join(" ")
    : `The plan was refused: ${problem.title}. Fix the marked field.`;
  if (first) first.focus();
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text;
  row.appendChild(td);
}

function rows(table, items, columns) {
  const body = $(table).querySelector("tbody");
  body.replaceChildren();
  for (const item of items) {
    const row = document.createElement("tr");
    for (const column of columns) cell(row, column(item));
    body.appendChild(row);
  }
}

function list(id, items) {
  const ul = $(id);
  ul.replaceChildren();
  for (const text of items) {
    const li = document.createElement("li");
    li.textContent = text;
    ul.appendChild(li);
  }
}

function theme() {
  return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches
    ? "dark" : "light";
}

function draw(plan) {
  const fleet = plan.fleet || [];
  $("summary").textContent = plan.status === "infeasible"
    ? "No fleet meets this request (see the rejected GPUs and the explanation)."
    : `${plan.status}: ${usd(plan.usd_per_hour)}/hour (${usd(plan.usd_per_month)}/month), `
      + `${plan.total_cards} cards. Plan id ${plan.plan_id}.`;
  rows("fleet", fleet, [
    (l) => l.gpu, (l) => `${l.provider} ${l.region}`, (l) => l.instance_type,
    (l) => l.tensor_parallel, (l) => l.replicas, (l) => l.cards, (l) => l.usd_per_hour.toFixed(2),
    (l) => l.ttft_ms, (l) => l.tpot_ms,
  ]);
  list("explanation", plan.explanation || []);
  rows("alternatives", plan.alternatives || [], [
    (a) => a.gpu, (a) => a.usd_per_hour.toFixed(2), (a) => a.total_cards,
  ]);
  rows("rejected", plan.rejected || [], [(r) => r.gpu, (r) => r.reason]);
  for (const [id, curve] of Object.entries(CHARTS)) {
    const img = $(id);
    img.closest("figure").hidden = false;
    img.onerror = () => { img.closest("figure").hidden = true; };
    img.src = `/v1/plans/${plan.plan_id}/curves/${curve}.svg?theme=${theme()}`;
  }
  const answer = $("answer");
  answer.hidden = false;
}

// How old the plan's prices are today travels beside the plan, in headers (the plan is the same
// on every day): a warning when the service's limit is passed.
function priceAge(response) {
  const note = $("price-age");
  const days = response.headers.get("X-Prices-Age-Days");
  const stale = response.headers.get("X-Prices-Stale") === "true";
  note.hidden = !stale;
  note.textContent = stale
    ? `Warning: the oldest price this fleet is costed at was observed ${days} days ago, `
      + "beyond the service's limit; import a current catalog before buying."
    : "";
}

async function submit(form, { focus = true } = {}) {
  clearErrors(form);
  const params = query(form);
  $("form-status").textContent = "Planning…";
  const mixed = params.has("mix");
  if (mixed) {
    params.delete("prompt_tokens");
    params.delete("output_tokens");
  }
  let response;
  try {
    response = mixed
      ? await fetch("/v1/plans", {
        method: "POST",
        headers: { Accept: "application/json", "Content-Type": "application/json" },
        body: JSON.stringify(requestBody(form)),
      })
      : await fetch(`/v1/plan?${params}`, { headers: { Accept: "application/json" } });
  } catch (error) {
    $("form-status").textContent = `The service did not answer: ${error}`;
    return;
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    showProblem(form, body);
    return;
  }
  const link = `/?${params}`;
  $("share").href = link;
  window.history.replaceState(null, "", link);
  draw(body);
  priceAge(response);
  $("form-status").textContent = "Plan ready.";
  if (focus) $("answer").focus();
}

document.addEventListener("DOMContentLoaded", () => {
  const form = $("plan-form");
  FIELDS = Array.from(form.elements).filter((e) => e.name).map((e) => e.name);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(form);
  });
  const params = new URLSearchParams(window.location.search);
  if (params.has("model")) {
    fill(form, params);
    submit(form, { focus: false });
  }
});
