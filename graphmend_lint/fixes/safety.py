"""Fix applicability, as ruff classes it (defined with the finding, in findings.py)."""
from __future__ import annotations

from ..findings import Safety

__all__ = ["Safety"]
