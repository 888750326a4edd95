variable "gpuplan_url" {
  description = "Base URL of the gpuplan API, e.g. https://gpuplan.internal.example.com (no /v1)."
  type        = string

  validation {
    condition     = can(regex("^https?://", var.gpuplan_url))
    error_message = "gpuplan_url must start with http:// or https://."
  }
}

variable "model" {
  description = "Model id or alias known to gpuplan, e.g. llama-3.1-70b."
  type        = string
}

variable "precision" {
  description = "Weight precision, e.g. fp8, bf16, int4. null lets gpuplan pick its default."
  type        = string
  default     = null
}

variable "engine" {
  description = "Serving engine, e.g. vllm. null lets gpuplan pick its default."
  type        = string
  default     = null
}

variable "workload" {
  description = <<-EOT
    Offered load: requests per second and either the mean prompt/output lengths in tokens or a
    mix of request shapes (each with its share of the load; shares sum to 1).
  EOT
  type = object({
    qps           = number
    prompt_tokens = optional(number)
    output_tokens = optional(number)
    mix = optional(list(object({
      share         = number
      prompt_tokens = number
      output_tokens = number
    })))
  })

  validation {
    condition     = var.workload.qps > 0
    error_message = "workload.qps must be positive."
  }
  validation {
    condition     = (var.workload.mix == null) != (var.workload.prompt_tokens == null && var.workload.output_tokens == null)
    error_message = "give workload.mix or prompt_tokens and output_tokens, not both."
  }
}

variable "slo" {
  description = "Latency SLO: time to first token and time per output token (ms) at a percentile."
  type = object({
    ttft_ms    = number
    tpot_ms    = number
    percentile = optional(number, 95)
  })
}

variable "budget" {
  description = "Spending cap. null usd_per_hour means no cap (the cheapest feasible fleet)."
  type = object({
    usd_per_hour = optional(number)
  })
  default = {}
}

variable "constraints" {
  description = <<-EOT
    Fleet constraints. Unset attributes are left out of the request, so gpuplan's defaults apply.
      pricing      on_demand | spot | reserved_1y | reserved_3y
      gpus         GPU ids or aliases to choose from (null: the whole catalog)
      exclude_gpus GPU ids or aliases never to use
      providers    provider ids to buy from, e.g. ["aws", "gcp"] (null: any)
      regions      regions to buy in (null: any)
      max_cards    availability cap in cards per GPU, e.g. { h100 = 16 }
      allow_mix    whether the fleet may mix GPU types
      headroom     spare capacity as a fraction of the load, e.g. 0.2 (null: the performance
                   model's validation error for each card's GPU family)
      min_replicas fewest replicas on every fleet line (for redundancy; default 1)
      spread       { min_providers, min_regions }: fewest providers / regions the fleet uses;
                   from 2 up it survives losing any one of them (default 1: no condition)
      allow_pcie_tensor_parallel  tensor parallelism over PCIe (gpuplan's default: true)
      mixing       { max_gpu_types (default 2), min_mix_savings_percent (default 10),
                     allow_mixed_vendors (default false) }
  EOT
  type = object({
    pricing                    = optional(string)
    gpus                       = optional(list(string))
    exclude_gpus               = optional(list(string))
    providers                  = optional(list(string))
    regions                    = optional(list(string))
    max_cards                  = optional(map(number))
    allow_mix                  = optional(bool)
    headroom                   = optional(number)
    min_replicas               = optional(number)
    allow_pcie_tensor_parallel = optional(bool)
    mixing = optional(object({
      max_gpu_types           = optional(number)
      min_mix_savings_percent = optional(number)
      allow_mixed_vendors     = optional(bool)
    }))
    spread = optional(object({
      min_providers = optional(number)
      min_regions   = optional(number)
    }))
  })
  default = {}
}

variable "routing" {
  description = <<-EOT
    How requests reach the fleet lines: "by_shape" (gpuplan's default) lets request shapes go to
    different lines when that is cheaper (the plan's routing output gives the gateway its length
    cut-offs); "shared" makes every line serve the whole mix, so any line may take any request.
  EOT
  type        = string
  default     = null

  validation {
    condition     = contains(["by_shape", "shared"], coalesce(var.routing, "by_shape"))
    error_message = "routing must be \"by_shape\" or \"shared\"."
  }
}

variable "request_timeout_ms" {
  description = "Timeout of the POST /v1/plans request, in milliseconds."
  type        = number
  default     = 30000
}

variable "retry_attempts" {
  description = "Retries of the request on connection errors and 5xx answers."
  type        = number
  default     = 2
}
