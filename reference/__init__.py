"""The CPU reference engine: `evaluate(call) -> Outcome` for any loaded operator spec."""

from .engine import compute, evaluate

__all__ = ["compute", "evaluate"]
