"""When the LayerDrop p <= 0.0 guard would change nothing that Dynamo traces (issue 24).

The guard decides `draw < p` while tracing only when p <= 0.0. It is a no-op patch, and so no fix
is offered, where that case cannot reach the test:

- an enclosing test (or another conjunct of the same test) already excludes it:
  `if self.training and self.layerdrop > 0.0:` around the draw (transformers 5.x writes this);
- the probability's default is above 0.0: `self.p = p` with `p: float = 0.5` in `__init__`, or
  `self.p = 0.5` (torchvision's flips), where the short-circuit never fires unless the caller
  passes 0.0.
"""
from __future__ import annotations

import libcst as cst

from ...analysis import context
from ..syntax import code, flatten


def _number(node: cst.BaseExpression) -> float | None:
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.evaluated_value)
    return None


def _excludes(part: cst.BaseExpression, prob: str) -> bool:
    """`part` is true only when `prob` > 0.0: `p > 0`, `0 < p`, `p != 0`, `p` (truthy number), `p >= x` (x > 0)."""
    if code(part) == prob:
        return True
    if not isinstance(part, cst.Comparison) or len(part.comparisons) != 1:
        return False
    op, right, left = part.comparisons[0].operator, part.comparisons[0].comparator, part.left
    if code(left) == prob:
        n = _number(right)
        return n is not None and (isinstance(op, cst.GreaterThan) and n >= 0 or isinstance(op, cst.GreaterThanEqual) and n > 0
                                  or isinstance(op, cst.NotEqual) and n == 0)
    if code(right) == prob:
        n = _number(left)
        return n is not None and (isinstance(op, cst.LessThan) and n >= 0 or isinstance(op, cst.LessThanEqual) and n > 0
                                  or isinstance(op, cst.NotEqual) and n == 0)
    return False


def excluded_by_test(rule, node: cst.CSTNode, test: cst.BaseExpression, prob: str) -> str | None:
    """The test (an enclosing `if`'s, or a conjunct of `test` itself) that already keeps p <= 0.0 away."""
    for part in flatten(test, cst.And):
        if _excludes(part, prob):
            return code(part)
    for child, up in context.ancestors(node, rule.parent):
        if isinstance(up, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(up, (cst.If, cst.While)) and child is up.body:
            for part in flatten(up.test, cst.And):
                if _excludes(part, prob):
                    return code(up.test)
    return None


def _init(rule, node: cst.CSTNode) -> cst.FunctionDef | None:
    for _, up in context.ancestors(node, rule.parent):
        if isinstance(up, cst.ClassDef):
            for stmt in up.body.body:
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
                    return stmt
            return None
    return None


def default_above_zero(rule, node: cst.CSTNode, prob: str) -> str | None:
    """`self.x`'s value set in `__init__` when every store there is a number above 0.0, or a
    parameter whose default is one (the text of that default), else None."""
    if not prob.startswith("self.") or prob.count(".") != 1:
        return None
    init = _init(rule, node)
    if init is None:
        return None
    attr = prob.split(".", 1)[1]
    defaults = {p.name.value: p.default for p in [*init.params.posonly_params, *init.params.params,
                                                  *init.params.kwonly_params] if p.default is not None}
    stores: list[cst.BaseExpression] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is init

        def visit_Assign(self, n: cst.Assign) -> None:
            for t in n.targets:
                if code(t.target) == prob:
                    stores.append(n.value)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            if code(n.target) == prob and n.value is not None:
                stores.append(n.value)

    init.visit(V())
    if not stores:
        return None
    shown = []
    for value in stores:
        if isinstance(value, cst.Name) and value.value in defaults:
            value = defaults[value.value]
        n = _number(value)
        if n is None or n <= 0.0:
            return None
        shown.append(code(value))
    return ", ".join(shown)


def no_fix_reason(rule, node: cst.CSTNode, test: cst.BaseExpression, prob: str) -> str | None:
    """Why the p <= 0.0 guard would be a no-op patch here, or None."""
    by = excluded_by_test(rule, node, test, prob)
    if by is not None:
        return (f"the test `{by}` already keeps `{prob} <= 0.0` away, the only case the LayerDrop guard "
                f"decides while tracing; with `{prob}` > 0.0 the draw decides on every call, so the break stays")
    default = default_above_zero(rule, node, prob)
    if default is not None:
        return (f"`{prob}` defaults to {default} (`__init__`), where a guard deciding `{prob} <= 0.0` while "
                "tracing never fires; the draw decides on every call, so the break stays")
    return None
