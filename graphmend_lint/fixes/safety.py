"""Fix applicability, as ruff classes it."""
from __future__ import annotations

import enum


class Safety(str, enum.Enum):
    SAFE = "safe"  # keeps eager semantics, and the compiled path is proved or checked: applied by --fix
    UNSAFE = "unsafe"  # offered; applied only with --unsafe-fixes
    NONE = "none"  # no fix offered
