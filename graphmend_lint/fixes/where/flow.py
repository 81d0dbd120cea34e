"""Data flow around an `if` in one function: is a name read after it, bound before it, None there."""
from __future__ import annotations

import libcst as cst

from ... import fastwalk
from ...analysis import context
from ..syntax import flatten, names_in


def _statements(block: cst.BaseSuite) -> list:
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=block.body)]
    return list(block.body)


def _effect_seq(stmts: list, name: str) -> str | None:
    for stmt in stmts:
        effect = _effect(stmt, name)
        if effect:
            return effect
    return None


def _effect(stmt: cst.CSTNode, name: str) -> str | None:
    """What running `stmt` does to `name` first: "read", "kill" (rebound or flow ends), or None."""
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                if name in names_in(small.value):
                    return "read"
                for t in small.targets:
                    if isinstance(t.target, cst.Name) and t.target.value == name:
                        return "kill"
                    if name in names_in(t.target):
                        return "read"
            elif isinstance(small, (cst.Return, cst.Raise)):
                return "read" if name in names_in(small) else "kill"
            elif name in names_in(small):
                return "read"
        return None
    if isinstance(stmt, cst.If):
        if name in names_in(stmt.test):
            return "read"
        body = _effect_seq(_statements(stmt.body), name)
        orelse = None
        if isinstance(stmt.orelse, cst.If):
            orelse = _effect(stmt.orelse, name)
        elif isinstance(stmt.orelse, cst.Else):
            orelse = _effect_seq(_statements(stmt.orelse.body), name)
        if "read" in (body, orelse):
            return "read"
        return "kill" if body == orelse == "kill" else None
    return "read" if name in names_in(stmt) else None  # loops, with, try: conservative


def live_after(rule, node: cst.If, name: str) -> bool:
    """Can the value of `name` after `node` be read later in the function?"""
    child: cst.CSTNode = node
    for up in (u for _, u in context.ancestors(node, rule.parent)):
        if isinstance(up, cst.FunctionDef):
            return False
        if isinstance(up, (cst.For, cst.While)):
            return name in names_in(up)
        if isinstance(up, cst.IndentedBlock):
            stmts = list(up.body)
            effect = _effect_seq(stmts[stmts.index(child) + 1:], name) if child in stmts else "read"
            if effect:
                return effect == "read"
        child = up
    return False


def bound_before(rule, node: cst.If, func: cst.FunctionDef, name: str) -> bool:
    ff = rule.facts.function(func)
    if name in ff.params:
        return True
    child: cst.CSTNode = node
    for up in (u for _, u in context.ancestors(node, rule.parent)):
        if isinstance(up, cst.IndentedBlock):
            for stmt in up.body:
                if stmt is child:
                    break
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        targets = []
                        if isinstance(small, cst.Assign):
                            targets = [t.target for t in small.targets]
                        elif isinstance(small, cst.AnnAssign) and small.value is not None:
                            targets = [small.target]
                        for t in targets:
                            if name in names_in(t) and not isinstance(t, (cst.Subscript, cst.Attribute)):
                                return True
        if up is func:
            return False
        child = up
    return False


def _is_none_test(test: cst.BaseExpression, name: str, negated: bool) -> bool:
    """`test` proves `name is None` when it holds (negated: when it fails, as `name is not None or ...`)."""
    op = cst.Or if negated else cst.And
    for part in flatten(test, op):
        if isinstance(part, cst.Comparison) and len(part.comparisons) == 1 and \
                isinstance(part.left, cst.Name) and part.left.value == name:
            cmp = part.comparisons[0]
            if isinstance(cmp.comparator, cst.Name) and cmp.comparator.value == "None" and \
                    isinstance(cmp.operator, cst.IsNot if negated else cst.Is):
                return True
    return False


def none_here(rule, node: cst.CSTNode, name: str) -> bool:
    """An enclosing test proves `name is None` at `node` (`if name is None and ...:` around it), or the
    statement before it in its block is `name = None` (or `name: T = None`)."""
    for child, up in context.ancestors(node, rule.parent):
        if isinstance(up, cst.FunctionDef):
            return False
        if isinstance(up, cst.If) and child is up.body and _is_none_test(up.test, name, False):
            return True
        if isinstance(up, cst.If) and child is up.orelse and _is_none_test(up.test, name, True):
            return True
        if isinstance(up, cst.IndentedBlock) and child in up.body:
            before = list(up.body)[:list(up.body).index(child)]
            for stmt in reversed(before):
                if name in names_in(stmt):
                    small = stmt.body[-1] if isinstance(stmt, cst.SimpleStatementLine) else None
                    target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        else small.target if isinstance(small, cst.AnnAssign) else None  # `mask: T = None` too
                    if isinstance(target, cst.Name) and target.value == name:
                        return isinstance(small.value, cst.Name) and small.value.value == "None"
                    if _rebinds(stmt, name):
                        return False
                    break
    return False


def _rebinds(stmt: cst.CSTNode, name: str) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            if name in names_in(n.target):
                found.append(n)

    fastwalk.visit(stmt, V())
    return bool(found)
