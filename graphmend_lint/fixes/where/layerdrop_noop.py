"""When the LayerDrop p <= 0.0 guard would change nothing that Dynamo traces (issue 24).

The guard decides `draw < p` while tracing only when p <= 0.0. It is a no-op patch, and so no fix
is offered, where that case cannot reach the test:

- an enclosing test (or another conjunct of the same test) already excludes it:
  `if self.training and self.layerdrop > 0.0:` around the draw (transformers 5.x writes this);
- every store of the probability in its class is a number literal above 0.0, one of them
  unconditional in `__init__` (`self.p = 0.5`): the class never sets it to 0.0.

Not a proof, so the fix is offered (its title names the default): a parameter default above 0.0
(`def __init__(self, p: float = 0.5): self.p = p`, torchvision's flips) or a config value
(`self.layerdrop = config.layerdrop`). A caller may pass 0.0 (`RandomHorizontalFlip(p=0.0)`, a
config with `layerdrop=0.0`), the very case the guard decides while tracing; with p > 0.0 the
guard costs nothing (a constant while tracing, False in eager).
"""
from __future__ import annotations

import libcst as cst

from ... import fastwalk
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


def _class(rule, node: cst.CSTNode) -> cst.ClassDef | None:
    for _, up in context.ancestors(node, rule.parent):
        if isinstance(up, cst.ClassDef):
            return up
    return None


def _init(cls: cst.ClassDef) -> cst.FunctionDef | None:
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
            return stmt
    return None


class _Stores(cst.CSTVisitor):
    """Every store of `prob` (`self.p`) in the methods of `cls` (a class-level `p = ...` is shadowed
    once `__init__` stores it); `unknown` when one is not a plain assignment (`+=`, `del`, a tuple
    target)."""

    def __init__(self, cls: cst.ClassDef, prob: str) -> None:
        self.cls, self.prob = cls, prob
        self.values: list[cst.BaseExpression] = []
        self.unknown = False

    def visit_ClassDef(self, n: cst.ClassDef) -> bool:
        return n is self.cls  # a nested class has its own `self`

    def _store(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if code(target) == self.prob and value is not None:
            self.values.append(value)
        elif self.prob in _attributes(target):
            self.unknown = True

    def visit_Assign(self, n: cst.Assign) -> None:
        for t in n.targets:
            self._store(t.target, n.value)

    def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
        self._store(n.target, n.value)

    def visit_AugAssign(self, n: cst.AugAssign) -> None:
        self.unknown = self.unknown or self.prob in _attributes(n.target)

    def visit_Del(self, n: cst.Del) -> None:
        self.unknown = self.unknown or self.prob in _attributes(n.target)


def _attributes(target: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> None:
            found.add(code(n))

    fastwalk.visit(target, V())
    return found


def _targets(assign: cst.Assign | cst.AnnAssign) -> list[cst.BaseExpression]:
    return [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]


def _top_level(func: cst.FunctionDef) -> list[cst.Assign | cst.AnnAssign]:
    """The assignments that are statements of the body itself (not inside an `if`, a loop, ...)."""
    body = func.body
    lines = body.body if isinstance(body, cst.IndentedBlock) else []
    return [small for line in lines if isinstance(line, cst.SimpleStatementLine)
            for small in line.body if isinstance(small, (cst.Assign, cst.AnnAssign))]


def constant_above_zero(rule, node: cst.CSTNode, prob: str) -> str | None:
    """The numbers `self.x` is ever set to, as source, when each store of it in its class is a number
    literal above 0.0 and `__init__` makes one unconditionally (`self.p = 0.5`), else None.

    Provable from the class: a parameter default (`def __init__(self, p=0.5): self.p = p`) or a
    config value is not, since a caller may pass 0.0 (`RandomHorizontalFlip(p=0.0)`), which is the
    very case the guard decides while tracing. Not seen: stores from outside the class (`flip.p =
    0.0`), subclasses and bases, and `setattr`."""
    if not prob.startswith("self.") or prob.count(".") != 1:
        return None
    cls = _class(rule, node)
    init = _init(cls) if cls is not None else None
    if init is None or not any(code(t) == prob for small in _top_level(init) for t in _targets(small)):
        return None  # no unconditional store in `__init__`: the value may come from elsewhere
    stores = _Stores(cls, prob)
    fastwalk.visit(cls, stores)
    if stores.unknown or not stores.values:
        return None
    for value in stores.values:
        n = _number(value)
        if n is None or n <= 0.0:
            return None
    return ", ".join(dict.fromkeys(code(v) for v in stores.values))


def parameter_default(rule, node: cst.CSTNode, prob: str) -> str | None:
    """The default of the `__init__` parameter that `self.x = x` stores, as source, else None: what
    a default-constructed module runs with (no proof: a caller may pass another value)."""
    if not prob.startswith("self.") or prob.count(".") != 1:
        return None
    cls = _class(rule, node)
    init = _init(cls) if cls is not None else None
    if init is None:
        return None
    defaults = {p.name.value: p.default for p in [*init.params.posonly_params, *init.params.params,
                                                  *init.params.kwonly_params] if p.default is not None}
    stores = _Stores(cls, prob)
    fastwalk.visit(init, stores)
    names = {v.value for v in stores.values if isinstance(v, cst.Name)}
    if len(stores.values) != 1 or len(names) != 1 or next(iter(names)) not in defaults:
        return None
    return code(defaults[next(iter(names))])


def no_fix_reason(rule, node: cst.CSTNode, test: cst.BaseExpression, prob: str) -> str | None:
    """Why the p <= 0.0 guard would be a no-op patch here, or None."""
    by = excluded_by_test(rule, node, test, prob)
    if by is not None:
        return (f"the test `{by}` already keeps `{prob} <= 0.0` away, the only case the LayerDrop guard "
                f"decides while tracing; with `{prob}` > 0.0 the draw decides on every call, so the break stays")
    value = constant_above_zero(rule, node, prob)
    if value is not None:
        return (f"`{prob}` is only ever set to {value} in its class, where a guard deciding `{prob} <= 0.0` while "
                "tracing never fires; the draw decides on every call, so the break stays")
    return None


def default_note(rule, node: cst.CSTNode, prob: str) -> str:
    """For the fix title: the probability's `__init__` default, when above 0.0 (the guard then fires
    only for callers that pass 0.0 or less), else ""."""
    default = parameter_default(rule, node, prob)
    n = _number(cst.parse_expression(default)) if default is not None else None
    if n is None or n <= 0.0:
        return ""
    return (f"; `{prob}` defaults to {default} (`__init__`), so the guard decides the test only where a caller "
            "passes 0.0 or less (a default is no proof, so the fix is offered)")
