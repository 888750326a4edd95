terraform {
  # `check` blocks need 1.5; optional() object attributes with defaults need 1.3.
  required_version = ">= 1.5.0"

  required_providers {
    http = {
      source = "hashicorp/http"
      # 3.4 has method, request_body, request_timeout_ms and retry on the data source.
      version = "~> 3.4"
    }
  }
}
