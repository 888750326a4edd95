#!/bin/sh
# Terraform `external` program: read the query (a JSON object of strings) on stdin, call
# gpuplan's flat plan endpoint, and print its answer (a JSON object of strings) on stdout.
#
#   query: gpuplan_url, timeout_s, and the GET /v1/plan parameters (model, qps, prompt_tokens,
#          output_tokens, ttft_ms, tpot_ms, percentile, budget_usd_per_hour, gpus, pricing,
#          precision, headroom, min_replicas, allow_mix); empty values are left out so
#          gpuplan's defaults apply.
#
# On failure it exits non-zero with one line on stderr, which Terraform shows.
# Needs python3 (URL encoding, since the query values are free text) and curl.
set -eu

query=$(cat)

url=$(printf '%s' "$query" | python3 -c '
import json, sys, urllib.parse

query = json.load(sys.stdin)
base = query.pop("gpuplan_url").rstrip("/")
query.pop("timeout_s", None)
params = {key: value for key, value in query.items() if value != ""}
params["format"] = "flat"
print(f"{base}/v1/plan?{urllib.parse.urlencode(params)}")
')
timeout=$(printf '%s' "$query" | python3 -c '
import json, sys

print(json.load(sys.stdin).get("timeout_s") or "30")
')

body=$(mktemp)
trap 'rm -f "$body"' EXIT

# curl prints its own error (DNS, refused, timeout) on stderr with --show-error.
code=$(curl --silent --show-error --max-time "$timeout" \
    --header 'Accept: application/json' \
    --output "$body" --write-out '%{http_code}' "$url") || exit 1

if [ "$code" != "200" ]; then
    # Errors are RFC 9457 problem documents that name the offending parameter.
    printf 'gpuplan answered HTTP %s to GET %s: %s\n' "$code" "$url" "$(cat "$body")" >&2
    exit 1
fi

cat "$body"
