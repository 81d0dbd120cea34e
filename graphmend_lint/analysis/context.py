"""Where a node sits: enclosing function, compile guards, loops, no_grad, try."""
from __future__ import annotations

from typing import Callable, Iterator

import libcst as cst

from .bindings import Bindings

Parent = Callable[[cst.CSTNode], "cst.CSTNode | None"]

IS_COMPILING = {
    "torch.compiler.is_compiling",
    "torch._dynamo.is_compiling",
    "torch.compiler.is_dynamo_compiling",
    "torch._utils.is_compiling",
    "transformers.utils.is_torchdynamo_compiling",
    "transformers.utils.import_utils.is_torchdynamo_compiling",
}
# Bare names that are compile checks even when imported relatively (transformers' own code).
IS_COMPILING_NAMES = {"is_torchdynamo_compiling", "is_compiling"}
GRAD_OFF = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"}


def ancestors(node: cst.CSTNode, parent: Parent) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """(child, ancestor) pairs from `node` upwards."""
    child, up = node, parent(node)
    while up is not None:
        yield child, up
        child, up = up, parent(up)


def enclosing_function(node: cst.CSTNode, parent: Parent) -> cst.FunctionDef | None:
    for _, up in ancestors(node, parent):
        if isinstance(up, cst.FunctionDef):
            return up
    return None


def is_compiling_check(test: cst.BaseExpression, b: Bindings) -> bool:
    """`torch.compiler.is_compiling()` and its relatives (any spelling)."""
    if not isinstance(test, cst.Call):
        return False
    if b.qualify(test.func) in IS_COMPILING:
        return True
    return isinstance(test.func, cst.Name) and test.func.value in IS_COMPILING_NAMES


def _negated(test: cst.BaseExpression) -> cst.BaseExpression | None:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    return None


def runs_only_in_eager(node: cst.CSTNode, parent: Parent, b: Bindings) -> bool:
    """True when `node` is under `if not is_compiling():` (or the else of `if is_compiling():`)."""
    for child, up in ancestors(node, parent):
        if isinstance(up, cst.FunctionDef):
            return False
        if isinstance(up, (cst.If, cst.IfExp)):
            # `if not is_compiling() [and ...]:` body; `if is_compiling() [or ...]:` else
            if child is up.body and any(
                    (inner := _negated(t)) is not None and is_compiling_check(inner, b) for t in _operands(up.test, cst.And)):
                return True
            if child is up.orelse and any(is_compiling_check(t, b) for t in _operands(up.test, cst.Or)):
                return True
    return False


def _operands(test: cst.BaseExpression, op: type) -> list[cst.BaseExpression]:
    """`a and b and c` -> [a, b, c] for op=cst.And (parentheses kept out of the way)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, op):
        return _operands(test.left, op) + _operands(test.right, op)
    return [test]


def in_loop(node: cst.CSTNode, parent: Parent) -> bool:
    for child, up in ancestors(node, parent):
        if isinstance(up, (cst.FunctionDef, cst.Lambda)):
            return False
        if isinstance(up, (cst.For, cst.While)) and child is up.body:
            return True
        if isinstance(up, cst.CompFor):
            return True
    return False


def in_try(node: cst.CSTNode, parent: Parent) -> bool:
    for child, up in ancestors(node, parent):
        if isinstance(up, cst.FunctionDef):
            return False
        if isinstance(up, (cst.Try, cst.TryStar)) and child is up.body:
            return True
    return False


def grad_off_expr(expr: cst.BaseExpression, b: Bindings) -> bool:
    if isinstance(expr, cst.Call):
        q = b.qualify(expr.func)
        if q in GRAD_OFF:
            return True
        if q == "torch.set_grad_enabled" and expr.args:
            v = expr.args[0].value
            return isinstance(v, cst.Name) and v.value == "False"
        return False
    return b.qualify(expr) in GRAD_OFF


def grad_disabled(node: cst.CSTNode, parent: Parent, b: Bindings) -> bool:
    """Under `with torch.no_grad()/inference_mode()` or a function decorated with them."""
    for _, up in ancestors(node, parent):
        if isinstance(up, cst.With) and any(grad_off_expr(i.item, b) for i in up.items):
            return True
        if isinstance(up, cst.FunctionDef) and any(grad_off_expr(d.decorator, b) for d in up.decorators):
            return True
    return False
