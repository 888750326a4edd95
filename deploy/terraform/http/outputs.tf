output "plan_id" {
  description = "gpuplan's id for this plan (keyed by request and catalog revision)."
  value       = local.plan.plan_id
}

output "status" {
  description = "optimal | over_budget | time_limit (infeasible and no_price fail the read)."
  value       = local.plan.status
}

output "usd_per_hour" {
  description = "Cost of the whole fleet per hour, USD."
  value       = local.plan.usd_per_hour
}

output "usd_per_month" {
  description = "Cost of the whole fleet per month, USD."
  value       = local.plan.usd_per_month
}

output "total_cards" {
  description = "GPU cards across the fleet."
  value       = local.plan.total_cards
}

output "fleet" {
  description = "One entry per fleet line: where to run how many replicas of which GPU."
  value = [
    for line in local.plan.fleet : {
      gpu             = line.gpu
      provider        = line.provider
      region          = line.region
      instance_type   = line.instance_type
      tensor_parallel = line.tensor_parallel
      replicas        = line.replicas
      cards           = line.cards
      buckets         = [for b in line.buckets : b.bucket]
    }
  ]
}

output "mixing" {
  description = "The mixing policy used and the rule that decided the number of GPU types (rule, saving_percent, mixed_fleet when the threshold kept a mix out)."
  value       = local.plan.mixing
}

output "redundancy" {
  description = "Replicas, lines, providers and regions, and the % of the load left after losing the worst line, provider or region."
  value       = local.plan.redundancy
}

output "routing" {
  description = "shared (every line serves the whole mix) or by_shape, with the prompt/output length cut-offs and each line's share per route."
  value       = local.plan.routing
}

output "plan" {
  description = "The whole decoded answer (predicted latencies, rejected alternatives ...)."
  value       = local.plan
}
