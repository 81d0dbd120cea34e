"""Reading libcst trees: source text of a node, operands of `and`/`or`, names read, literals."""
from __future__ import annotations

import libcst as cst

from .. import fastwalk
from ..analysis.bindings import ReadNames


def code(node: cst.CSTNode) -> str:
    """The source text of `node` (default formatting of an empty module)."""
    return cst.Module([]).code_for_node(node)


def flatten(node: cst.BaseExpression, op: type) -> list[cst.BaseExpression]:
    """`a and b and c` -> [a, b, c] (for op=cst.And); `and`/`or` are associative."""
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, op):
        return flatten(node.left, op) + flatten(node.right, op)
    return [node]


def atoms(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of `and`/`or`/`not` in a test."""
    if isinstance(node, cst.BooleanOperation):
        return atoms(node.left) + atoms(node.right)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return atoms(node.expression)
    return [node]


def names_in(node: cst.CSTNode) -> set[str]:
    """Names `node` reads (not attribute names or keywords)."""
    v = ReadNames()
    fastwalk.visit(node, v)
    return {n.value for n in v.names}


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=[], rpar=[])
    return node


def literal_int(node: cst.BaseExpression | None) -> int | None:
    """The value of `3` or `-3`, else None."""
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer):
        return -int(node.expression.value, 0)
    return None


def body_statements(block: cst.BaseSuite) -> list[cst.BaseSmallStatement | cst.BaseCompoundStatement]:
    """Statements of a block, one per small statement (`a = 1; b = 2` counts two)."""
    out: list = []
    stmts = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for s in stmts:
        if isinstance(s, cst.SimpleStatementLine):
            out.extend(s.body)
        elif isinstance(s, cst.SimpleStatementSuite):
            out.extend(s.body)
        else:
            out.append(s)
    return out
