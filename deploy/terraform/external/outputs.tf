output "plan_id" {
  description = "gpuplan's id for this plan."
  value       = local.flat.plan_id
}

output "status" {
  description = "optimal | over_budget | time_limit (infeasible fails the read)."
  value       = local.flat.status
}

output "usd_per_hour" {
  description = "Cost of the whole fleet per hour, USD."
  value       = try(tonumber(local.flat.usd_per_hour), null)
}

output "usd_per_month" {
  description = "Cost of the whole fleet per month, USD."
  value       = try(tonumber(local.flat.usd_per_month), null)
}

output "total_cards" {
  description = "GPU cards across the fleet."
  value       = try(tonumber(local.flat.total_cards), null)
}

output "fleet" {
  description = "One entry per fleet line: where to run how many replicas of which GPU."
  value       = local.fleet
}

output "result" {
  description = "The flat answer as returned (all values strings)."
  value       = local.flat
}
