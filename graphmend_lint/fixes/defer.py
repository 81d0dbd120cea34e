"""`log-strategy = "defer"` for print(): emit under compile after the graph, values at call time.

Fixed code (torch + stdlib only):

    @torch.compiler.disable
    def _graphmend_print(*args):
        print(*args)


    torch._dynamo.config.reorderable_logging_functions.add(_graphmend_print)
    ...
            if not torch.compiler.is_compiling():
                print("mean", h)
            else:
                _graphmend_print("mean", h.detach().clone())

Only the helper is registered (not `print` itself), so no other code is reordered.
Measured on torch 2.13 (see rules/GM201.md): reordering replays positional arguments
only, tensors are read at the end of the graph (hence the clone), and the helper runs
under `torch.compiler.disable` so that Dynamo does not trace it when it is replayed.
"""
from __future__ import annotations

import libcst as cst

from . import build
from .syntax import code

HELPER = "_graphmend_print"


def _fstring_static(node: cst.FormattedString, value) -> bool:
    for part in node.parts:
        if isinstance(part, cst.FormattedStringExpression):
            if value(part.expression).kind != "static" or _calls_item(part.expression):
                return False
            if part.format_spec and not all(isinstance(p, cst.FormattedStringText) for p in part.format_spec):
                return False
    return True


def _calls_item(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("item", "tolist"):
        return True
    return any(_calls_item(c) for c in node.children)


def _snapshot(expr: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(cst.Call(cst.Attribute(expr, cst.Name("detach"))), cst.Name("clone")))


def _pure_read(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) or (isinstance(expr, cst.Attribute) and _pure_read(expr.value))


def deferred_args(call: cst.Call, value, tensor_type: str) -> list[cst.Arg] | None:
    """Arguments for the helper (tensors cloned), or None when the call cannot be deferred:
    keywords and `*`/`**` (the reordering drops them), computed values that are neither
    tensors nor known at trace time, and anything reading tensor data (`.item()` breaks
    anyway). A plain name or attribute of unknown type is cloned only if it is a tensor."""
    out = []
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            return None
        expr = arg.value
        if _calls_item(expr):
            return None
        if isinstance(expr, cst.FormattedString):
            if not _fstring_static(expr, value):
                return None
            out.append(cst.Arg(expr))
            continue
        kind = value(expr).kind
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
            out.append(cst.Arg(expr))
        elif kind == "static":
            # `x.shape` reaches the reordering as a SizeVariable, which it refuses; an
            # f-string is accepted and prints the same text (format(v, "") == str(v)).
            text = code(expr)
            if "'" in text or '"' in text:
                return None
            out.append(cst.Arg(cst.FormattedString([cst.FormattedStringExpression(expr)])))
        elif kind == "tensor":
            out.append(cst.Arg(_snapshot(expr)))
        elif _pure_read(expr):  # a tensor or not: decided at trace time, where isinstance is static
            test = cst.Call(cst.Name("isinstance"), [cst.Arg(expr), cst.Arg(build.expr(tensor_type))])
            out.append(cst.Arg(cst.IfExp(test=test, body=_snapshot(expr), orelse=expr)))
        else:
            return None
    return out


def site(line: cst.SimpleStatementLine, args: list[cst.Arg], is_compiling: str) -> cst.If:
    """`if not is_compiling(): <line>` + `else: _graphmend_print(<args>)`."""
    guarded = build.guard_statement(line, is_compiling)
    deferred = cst.SimpleStatementLine([cst.Expr(cst.Call(cst.Name(HELPER), args=_commas(args)))])
    return guarded.with_changes(orelse=cst.Else(body=cst.IndentedBlock(body=[deferred])))


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    return [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]


def helper(disable: str, reorderable: str) -> list[cst.BaseStatement]:
    code = (
        f"@{disable}\n"
        f"def {HELPER}(*args):\n"
        f'    """print() deferred by graphmend-lint: torch.compile runs it after the graph."""\n'
        f"    print(*args)\n"
        f"\n\n"
        f"{reorderable}.add({HELPER})\n"
    )
    body = list(cst.parse_module(code).body)
    two_blank = [cst.EmptyLine(), cst.EmptyLine()]
    body[1] = body[1].with_changes(leading_lines=two_blank)
    return body


class ReplaceLines(cst.CSTTransformer):
    """Replace statement lines (by identity) inside one top-level statement."""

    def __init__(self, replacements: dict) -> None:
        self.replacements = replacements

    def leave_SimpleStatementLine(self, original, updated):  # type: ignore[override]
        return self.replacements.get(original, updated)
