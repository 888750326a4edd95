"""gpuplan: capacity planning for LLM-serving GPU fleets."""

__version__ = "0.1.0"
