"""Shared helpers of the GM9xx rules: graph breaks we explain (and rarely fix).

Graph-break ids (GBnnnn) are those of torch 2.13's torch/_dynamo/graph_break_registry.json;
each has a page at https://meta-pytorch.github.io/compile-graph-break-site/gb/gbNNNN.html.
"""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from .. import fastwalk
from . import context
from .bindings import dotted
from .tensors import Value


def value(rule, node: cst.CSTNode, expr: cst.BaseExpression) -> Value | None:
    """Tensor facts of `expr`, or None when `node` does not run under torch.compile."""
    func = rule.compiled_function(node)
    if func is None:
        return None
    return rule.facts.function(func).value(expr)


def in_branch_test(node: cst.CSTNode, parent, asserts: bool = True) -> bool:
    """Inside the test of an if/elif/while/assert/ternary: the GM1xx/GM3xx rules report those.
    `asserts=False`: an assert's test does not count (GM302 reports tensor tests only, not `.item()`)."""
    kinds = (cst.If, cst.While, cst.IfExp, cst.Assert) if asserts else (cst.If, cst.While, cst.IfExp)
    for child, up in context.ancestors(node, parent):
        if isinstance(up, kinds) and child is up.test:
            return True
        if isinstance(up, (cst.SimpleStatementLine, cst.BaseCompoundStatement, cst.Lambda)):
            return False
    return False


def method_call(node: cst.Call, *names: str) -> cst.Attribute | None:
    """`<recv>.<name>(...)` for one of `names`: the Attribute, else None."""
    func = node.func
    if func.__class__ is cst.Attribute and func.attr.value in names:  # libcst's isinstance: through ABCMeta
        return func
    return None


def chain_has(expr: cst.BaseExpression, method: str) -> bool:
    """`a.numpy().b()`-style chains: does a call of `.method()` appear in the receiver chain?"""
    while True:
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == method:
                return True
            expr = expr.func
        elif isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
        else:
            return False


def names_used_in_operations(func: cst.FunctionDef) -> set[str]:
    """Local names that appear as operands of arithmetic, comparisons or boolean operators."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def _add(self, *exprs: cst.BaseExpression) -> None:
            found.update(e.value for e in exprs if isinstance(e, cst.Name))

        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            self._add(node.left, node.right)

        def visit_Comparison(self, node: cst.Comparison) -> None:
            self._add(node.left, *(c.comparator for c in node.comparisons))

        def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
            self._add(node.left, node.right)

        def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
            self._add(node.expression)

        def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
            self._add(node.expression)

    fastwalk.visit(func.body, V())
    return found


def assigned_name(node: cst.CSTNode, parent) -> str | None:
    """`name = <node>`: the name, else None."""
    up = parent(node)
    if isinstance(up, cst.Assign) and len(up.targets) == 1 and isinstance(up.targets[0].target, cst.Name):
        return up.targets[0].target.value
    return None


def is_assign_target(node: cst.CSTNode, parent) -> bool:
    up = parent(node)
    if isinstance(up, cst.AssignTarget):
        return True
    return isinstance(up, (cst.AugAssign, cst.AnnAssign)) and up.target is node


def last_binding(rule, use: cst.CSTNode, name: cst.BaseExpression) -> cst.BaseExpression | None:
    """The value of `name = value` when that is the function's last binding of `name`, a top-level
    statement of the function body, and before `use`: then it is the only binding `use` can see."""
    func = rule.compiled_function(use)
    if not isinstance(name, cst.Name) or func is None:
        return None
    values = rule.facts.function(func).assigned.get(name.value) or [None]
    last = values[-1]
    if last is None:
        return None
    for stmt in func.body.body:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            assign = stmt.body[0]
            if isinstance(assign, cst.Assign) and assign.value is last and len(assign.targets) == 1 \
                    and isinstance(assign.targets[0].target, cst.Name):
                before = rule.get_metadata(PositionProvider, stmt).end.line < \
                    rule.get_metadata(PositionProvider, use).start.line
                return last if before else None
    return None


def qualified(rule, expr: cst.BaseExpression) -> str | None:
    return rule.facts.bindings.qualify(expr) if rule.facts is not None else None


__all__ = ["value", "in_branch_test", "method_call", "chain_has", "names_used_in_operations",
           "assigned_name", "is_assign_target", "last_binding", "qualified", "dotted"]
