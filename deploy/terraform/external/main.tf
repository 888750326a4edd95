# Ask gpuplan for a plan through the `external` data source and the flat endpoint
# (GET /v1/plan?...&format=flat), whose answer is one JSON object of string values: exactly what
# the external protocol requires. plan.sh builds the URL from the query and calls it with curl.
#
# Needs `sh`, `python3` and `curl` wherever Terraform runs. Read on every `terraform plan`.

locals {
  # The external protocol passes string values only; empty strings are left out of the URL
  # by plan.sh, so gpuplan's defaults apply.
  query = {
    gpuplan_url         = trimsuffix(var.gpuplan_url, "/")
    timeout_s           = tostring(var.timeout_s)
    model               = var.model
    precision           = var.precision == null ? "" : var.precision
    qps                 = tostring(var.qps)
    prompt_tokens       = tostring(var.prompt_tokens)
    output_tokens       = tostring(var.output_tokens)
    ttft_ms             = tostring(var.ttft_ms)
    tpot_ms             = tostring(var.tpot_ms)
    percentile          = tostring(var.percentile)
    budget_usd_per_hour = var.budget_usd_per_hour == null ? "" : tostring(var.budget_usd_per_hour)
    gpus                = join(",", var.gpus)
    pricing             = var.pricing == null ? "" : var.pricing
    headroom            = var.headroom == null ? "" : tostring(var.headroom)
    min_replicas        = var.min_replicas == null ? "" : tostring(var.min_replicas)
    allow_mix           = var.allow_mix == null ? "" : tostring(var.allow_mix)
  }
}

data "external" "plan" {
  program = ["sh", "${path.module}/plan.sh"]
  query   = local.query

  lifecycle {
    # No fleet meets the SLO within the constraints: stop here rather than provision nothing.
    postcondition {
      condition     = self.result.status != "infeasible"
      error_message = "gpuplan found no feasible fleet for ${var.model} (plan ${self.result.plan_id}, status infeasible): relax the SLO, the GPU list or the budget."
    }
    # No allowed GPU has a price of the requested kind: nothing was sized.
    postcondition {
      condition     = self.result.status != "no_price"
      error_message = "gpuplan has no price of the requested kind for the allowed GPUs (plan ${self.result.plan_id}, status no_price)."
    }
  }
}

locals {
  flat  = data.external.plan.result
  lines = try(tonumber(local.flat.fleet_lines), 0)

  # Flat keys per fleet line i: gpu_i, provider_i, region_i, instance_type_i,
  # tensor_parallel_i, replicas_i, cards_i.
  fleet = [
    for i in range(local.lines) : {
      gpu             = local.flat["gpu_${i}"]
      provider        = local.flat["provider_${i}"]
      region          = local.flat["region_${i}"]
      instance_type   = local.flat["instance_type_${i}"]
      tensor_parallel = tonumber(local.flat["tensor_parallel_${i}"])
      replicas        = tonumber(local.flat["replicas_${i}"])
      cards           = tonumber(local.flat["cards_${i}"])
    }
  ]
}

# over_budget / time_limit: a warning, not an error.
check "plan_is_optimal" {
  assert {
    condition     = local.flat.status == "optimal"
    error_message = "gpuplan plan ${local.flat.plan_id} has status ${local.flat.status} (over_budget: the cheapest fleet meeting the SLO costs more than the budget; time_limit: the best fleet found in time, possibly not the cheapest)."
  }
}
