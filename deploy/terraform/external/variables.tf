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

variable "qps" {
  description = "Offered load, requests per second."
  type        = number
}

variable "prompt_tokens" {
  description = "Mean prompt length, tokens."
  type        = number
}

variable "output_tokens" {
  description = "Mean output length, tokens."
  type        = number
}

variable "ttft_ms" {
  description = "Time-to-first-token SLO, milliseconds."
  type        = number
}

variable "tpot_ms" {
  description = "Time-per-output-token SLO, milliseconds."
  type        = number
}

variable "percentile" {
  description = "Percentile at which the SLO must hold."
  type        = number
  default     = 95
}

variable "budget_usd_per_hour" {
  description = "Spending cap, USD per hour. null: no cap."
  type        = number
  default     = null
}

variable "gpus" {
  description = "GPU ids or aliases to choose from. Empty: the whole catalog."
  type        = list(string)
  default     = []
}

variable "pricing" {
  description = "on_demand | spot | reserved_1y | reserved_3y. null: gpuplan's default."
  type        = string
  default     = null
}

variable "headroom" {
  description = "Extra capacity to plan for, e.g. 0.2 for 20 %. null: gpuplan's default (0)."
  type        = number
  default     = null
}

variable "min_replicas" {
  description = "Fewest model replicas in the fleet (redundancy). null: gpuplan's default (1)."
  type        = number
  default     = null
}

variable "allow_mix" {
  description = "false restricts the fleet to one GPU type. null: gpuplan's default (true)."
  type        = bool
  default     = null
}

variable "timeout_s" {
  description = "Timeout of the GET /v1/plan request, in seconds."
  type        = number
  default     = 30
}
