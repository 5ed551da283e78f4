"""Data package: the operator specs and the shared tables they refer to (no code lives here)."""

from importlib.resources import files
from pathlib import Path


def root() -> Path:
    """Folder holding products.yaml, dtypes.yaml, ..., ops/ and schema/ (installed or checkout)."""
    return Path(str(files(__name__)))
