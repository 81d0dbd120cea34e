"""Rewrites of branch values for torch.where: the double-where guard of an op with an infinite
derivative somewhere, and a tensor index made valid where its branch is not taken."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ...analysis.bindings import dotted

if TYPE_CHECKING:
    from .proof import Prover


class _Rename(cst.CSTTransformer):
    def __init__(self, name: str, new: cst.BaseExpression) -> None:
        self.name, self.new = name, new

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.new if original.value == self.name else updated

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        return updated.with_changes(attr=original.attr)  # never rename attribute names

    def visit_Arg(self, node: cst.Arg) -> bool:
        return True

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)  # never rename keywords


def guarded(prover: Prover, value: cst.BaseExpression, base: str, cond: cst.BaseExpression,
            taken_when_true: bool) -> cst.BaseExpression:
    """`sqrt(h)` -> `sqrt(torch.where(c, h, 1.0))`: same values where taken, finite gradients elsewhere."""
    return guarded_arm(prover, value, base, [cond], 0 if taken_when_true else 1)


def guarded_arm(prover: Prover, value: cst.BaseExpression, base: str, conds: list[cst.BaseExpression],
                arm: int) -> cst.BaseExpression:
    """The double where for arm `arm` of `torch.where(c0, v0, torch.where(c1, v1, ... v_n))`: `base`
    -> `torch.where(c0, 1.0, torch.where(c1, base, 1.0))` for arm 1 (the arm's own test true, every
    earlier one false; the last arm has no test of its own). Where the arm is taken the value is
    `base` itself; elsewhere every op sees 1.0, and torch.where's backward drops whatever gradient
    the untaken arm computes there (it selects, it does not multiply), so no NaN reaches `base`."""
    one = cst.Float("1.0")
    inner: cst.BaseExpression = cst.Name(base)
    if arm < len(conds):
        inner = prover.call("torch.where", conds[arm], inner, one)
    for cond in reversed(conds[:arm]):
        inner = prover.call("torch.where", cond, one, inner)
    return value.visit(_Rename(base, inner))


class _IndexZero(cst.CSTTransformer):
    """In the subscripts of a branch value, tensor index `i` -> `torch.where(c, i, 0)` (or
    `torch.where(c, 0, i)` in the `else` branch): the value where taken, a valid index elsewhere."""

    def __init__(self, prover: Prover, cond: cst.BaseExpression, taken_when_true: bool) -> None:
        self.prover, self.cond, self.when_true = prover, cond, taken_when_true
        self.names: list[set[str]] = []

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        guard = self.prover.index_guard(node)
        self.names.append(set(guard[0]) if guard else set())
        return True

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.Subscript:
        names = self.names.pop()
        if not names:
            return updated
        elements = []
        for el in updated.slice:
            part = el.slice
            if isinstance(part, cst.Index) and dotted(part.value) in names:
                zero = cst.Integer("0")
                args = (self.cond, part.value, zero) if self.when_true else (self.cond, zero, part.value)
                part = part.with_changes(value=self.prover.call("torch.where", *args))
            elements.append(el.with_changes(slice=part))
        return updated.with_changes(slice=elements)


def index_guarded(prover: Prover, value: cst.BaseExpression, cond: cst.BaseExpression,
                  taken_when_true: bool) -> cst.BaseExpression:
    """`x[idx]` -> `x[torch.where(c, idx, 0)]`: the double-where idiom for an index that may be out
    of range where its branch is not taken (torch.where computes both branches)."""
    return value.visit(_IndexZero(prover, cond, taken_when_true))
