"""Small libcst builders shared by fixes."""
from __future__ import annotations

import libcst as cst


def expr(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def guard_statement(line: cst.SimpleStatementLine, is_compiling: str) -> cst.If:
    """`stmt` -> `if not <is_compiling>():` + indented `stmt`, keeping comments above it."""
    inner = line.with_changes(leading_lines=())
    return cst.If(
        test=cst.UnaryOperation(cst.Not(), cst.Call(expr(is_compiling))),
        body=cst.IndentedBlock(body=[inner]),
        leading_lines=line.leading_lines,
    )


def sole_statement_line(node: cst.CSTNode, parent) -> cst.SimpleStatementLine | None:
    """The statement line holding `node` as its whole (and only) expression statement,
    when that line sits in an indented block (so it can be wrapped in an `if`)."""
    expr_stmt = parent(node)
    if not isinstance(expr_stmt, cst.Expr) or expr_stmt.value is not node:
        return None
    line = parent(expr_stmt)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if not isinstance(parent(line), cst.IndentedBlock):
        return None
    return line
