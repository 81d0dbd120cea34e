"""A fix as a value: what replaces which node, how safe it is, and what it does.

Fix code returns a `Fix` or a `NoFix` (why none is offered); the rule decides and reports
(`GraphMendRule.report(node, message, fix=...)`). The title says what the fix does, kept apart
from the finding's message (as ruff keeps a fix title beside the diagnostic).
"""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .safety import Safety


@dataclass(frozen=True)
class Fix:
    replacement: object  # a node, a FlattenSentinel or RemoveFromParent()
    applicability: Safety = Safety.SAFE
    title: str = ""
    needs_torch_import: bool = False
    node: cst.CSTNode | None = None  # the node replaced, when not the reported one
    imports: tuple[str, ...] = ()  # other modules the replacement names (`math`): added when missing


@dataclass(frozen=True)
class NoFix:
    reason: str  # what the user reads after "no fix: "


class Refused(Exception):
    """No fix: the argument says why (raised inside fix code, turned into a `NoFix` or a message)."""


@dataclass(frozen=True)
class Elsewhere:
    """No fix at this finding: its one fix is made at another site (the title says where)."""

    title: str
