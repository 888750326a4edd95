# Ask gpuplan for the cheapest fleet that meets the SLO and budget (POST /v1/plans).
#
# A data source is read on every `terraform plan`/`apply`: the request is a read (plans are
# cached by gpuplan per catalog revision), and a catalog change between runs can change the
# answer, which then shows up as a diff in whatever consumes the outputs.

locals {
  base_url = trimsuffix(var.gpuplan_url, "/")

  # Leave unset (null) attributes out of the JSON instead of sending `null`, so gpuplan applies
  # its own defaults. `{ for ... }` over an object yields an object, so mixed types are fine.
  slo      = { for k, v in var.slo : k => v if v != null }
  budget   = { for k, v in var.budget : k => v if v != null }
  workload = { for k, v in var.workload : k => v if v != null }
  mixing   = try({ for k, v in var.constraints.mixing : k => v if v != null }, {})
  spread   = try({ for k, v in var.constraints.spread : k => v if v != null }, {})
  constraints = merge(
    { for k, v in var.constraints : k => v if v != null && !contains(["mixing", "spread"], k) },
    length(local.mixing) > 0 ? { mixing = local.mixing } : {},
    length(local.spread) > 0 ? { spread = local.spread } : {},
  )

  request = {
    for k, v in {
      model       = var.model
      precision   = var.precision
      engine      = var.engine
      workload    = local.workload
      slo         = local.slo
      budget      = length(local.budget) > 0 ? local.budget : null
      constraints = length(local.constraints) > 0 ? local.constraints : null
      routing     = var.routing
    } : k => v if v != null
  }
}

data "http" "plan" {
  url    = "${local.base_url}/v1/plans"
  method = "POST"

  request_headers = {
    Content-Type = "application/json"
    Accept       = "application/json"
  }
  request_body       = jsonencode(local.request)
  request_timeout_ms = var.request_timeout_ms

  retry {
    attempts     = var.retry_attempts
    min_delay_ms = 500
    max_delay_ms = 5000
  }

  lifecycle {
    # Errors are RFC 9457 problem documents naming the offending field: show them verbatim.
    postcondition {
      condition     = contains([200], self.status_code)
      error_message = "gpuplan answered HTTP ${self.status_code} to POST ${local.base_url}/v1/plans: ${self.response_body}"
    }
    # No fleet meets the SLO within the constraints: stop here rather than provision nothing.
    postcondition {
      condition     = try(jsondecode(self.response_body).status, null) != "infeasible"
      error_message = "gpuplan found no feasible fleet for ${var.model} (status infeasible): relax the SLO, the GPU list or the budget. Answer: ${self.response_body}"
    }
    # No allowed GPU has a price of the requested kind: nothing was sized.
    postcondition {
      condition     = try(jsondecode(self.response_body).status, null) != "no_price"
      error_message = "gpuplan has no price of the requested kind for the allowed GPUs (status no_price): choose another pricing or GPU list. Answer: ${self.response_body}"
    }
  }
}

locals {
  plan = jsondecode(data.http.plan.response_body)
}

# Feasible but not optimal within the budget, or the solver hit its time limit: a warning, not an
# error, so the plan still applies.
check "plan_is_optimal" {
  assert {
    condition     = local.plan.status == "optimal"
    error_message = "gpuplan plan ${local.plan.plan_id} has status ${local.plan.status} (over_budget: the cheapest fleet meeting the SLO costs more than the budget; time_limit: the best fleet found in time, possibly not the cheapest)."
  }
}
