"""Small libcst builders shared by fixes, and where a statement can be rewritten."""
from __future__ import annotations

import libcst as cst


def expr(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def line(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    """`small` on a line of its own."""
    return cst.SimpleStatementLine(body=[small])


def assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    """The line `name = value`."""
    return line(cst.Assign([cst.AssignTarget(cst.Name(name))], value))


def guard_statement(stmt: cst.SimpleStatementLine, is_compiling: str) -> cst.If:
    """`stmt` -> `if not <is_compiling>():` + indented `stmt`, keeping comments above it."""
    inner = stmt.with_changes(leading_lines=())
    return cst.If(
        test=cst.UnaryOperation(cst.Not(), cst.Call(expr(is_compiling))),
        body=cst.IndentedBlock(body=[inner]),
        leading_lines=stmt.leading_lines,
    )


def sole_line(small: cst.BaseSmallStatement, parent) -> cst.SimpleStatementLine | None:
    """The line holding the statement `small` alone, when it sits in an indented block (so it
    can be wrapped in an `if`)."""
    up = parent(small)
    if not isinstance(up, cst.SimpleStatementLine) or len(up.body) != 1:
        return None
    return up if isinstance(parent(up), cst.IndentedBlock) else None


def sole_statement_line(node: cst.CSTNode, parent) -> cst.SimpleStatementLine | None:
    """The line holding `node` as its whole (and only) expression statement, in an indented block."""
    expr_stmt = parent(node)
    if not isinstance(expr_stmt, cst.Expr) or expr_stmt.value is not node:
        return None
    return sole_line(expr_stmt, parent)
