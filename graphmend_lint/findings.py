"""A finding, and its fix's applicability as ruff classes it: the values the rules report and the
CLI prints, caches and compares. A base module (no libcst, no rules), so the CLI's cached path
reads stored findings without importing either."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst


class Safety(str, enum.Enum):
    SAFE = "safe"  # keeps eager semantics, and the compiled path is proved or checked: applied by --fix
    UNSAFE = "unsafe"  # offered; applied only with --unsafe-fixes
    NONE = "none"  # no fix offered


@dataclass
class Finding:
    code: str
    rule: str  # Fixit name (class name without "Rule")
    line: int
    col: int  # 0-based, as Fixit reports it
    end_line: int
    end_col: int
    message: str
    safety: Safety = Safety.NONE
    node: cst.CSTNode | None = field(default=None, repr=False, compare=False)
    replacement: object = field(default=None, repr=False, compare=False)
    needs_torch_import: bool = False
    fix_range: tuple[int, int, int, int] = (0, 0, 0, 0)  # span of `node`, the replaced node
    # The fix as text edits (engine.WANT_EDITS): [{"content", "location", "end_location"}], 1-based
    edits: list | None = field(default=None, compare=False)
    imports: tuple = field(default=(), compare=False)  # other modules the fix needs (`import math`)

    @property
    def sort_key(self) -> tuple:
        return (self.line, self.col, self.code, self.message)
