"""GM101: a guard that only skips a no-op. `if <some element of X matches P>: X[P] = v` (or
`X.masked_fill_(P, v)`): where the test is False, `P` selects nothing and the update changes no
element, so under compile the update runs alone (no test, no break); eager keeps the `if`:

    if torch.compiler.is_compiling() and not X.requires_grad:
        X[X == 0] = 1
    elif (X == 0).sum() != 0:
        X[X == 0] = 1
        logger.warning("...")          # logging stays in eager (GM2xx guards it the same way)

`P` must be an elementwise test of `X` itself (`X == 0`, `X < 0`, `torch.isnan(X)`,
`X.isnan()`): its shape is X's, so indexing cannot raise. The test: `P.any()`, `torch.any(P)`,
`P.sum() != 0`, `P.sum() > 0` (also `.sum().item()`-free forms only). `v` is a number literal.
`not X.requires_grad` (a constant while tracing): an in-place update of a tensor that autograd
tracks would change its `grad_fn` (and raise on a leaf), even when it selects nothing.
Measured on torch 2.13 (graph_breaks log): visual_bert's guard is 1 break, the update alone 0.
"""
from __future__ import annotations

import libcst as cst

from ...analysis import tables as T
from ..fix import Fix
from ..safety import Safety
from ..syntax import body_statements, code, strip_parens
from .branches import arms, without_logging
from .proof import Prover
from .verdict import Verdict

TITLE = ("fix: under torch.compile the masked update runs alone (where the test is False it selects no "
         "element), eager runs the `if` unchanged, checked while tracing (`{x}`)")
COMPARE = (cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def _number(e: cst.BaseExpression) -> bool:
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
        e = e.expression
    return isinstance(e, (cst.Integer, cst.Float))


def _mask_of(prover: Prover, test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`P` of `P.any()`, `torch.any(P)`, `P.sum() != 0`, `P.sum() > 0`."""
    test = strip_parens(test)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        c = test.comparisons[0]
        zero = isinstance(c.comparator, cst.Integer) and c.comparator.value == "0"
        if not (zero and isinstance(c.operator, (cst.NotEqual, cst.GreaterThan))):
            return None
        test = strip_parens(test.left)
        want = "sum"
    else:
        want = "any"
    if not isinstance(test, cst.Call) or any(a.keyword or a.star for a in test.args):
        return None
    op, recv, rest = prover.op_name(test)
    if op != want or recv is None or rest:
        return None
    return strip_parens(recv)


def _tests_x(prover: Prover, mask: cst.BaseExpression) -> str | None:
    """The name `X` when `mask` is an elementwise test of `X` with a number (shape of `X`)."""
    if isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1 \
            and isinstance(mask.comparisons[0].operator, COMPARE):
        a, b = strip_parens(mask.left), strip_parens(mask.comparisons[0].comparator)
        if isinstance(a, cst.Name) and _number(b):
            return a.value
        if isinstance(b, cst.Name) and _number(a):
            return b.value
        return None
    if isinstance(mask, cst.Call) and not any(a.keyword or a.star for a in mask.args):
        op, recv, rest = prover.op_name(mask)
        if op in T.PREDICATES and op in ("isnan", "isinf", "isfinite", "isneginf", "isposinf", "signbit") \
                and isinstance(recv, cst.Name) and not rest:
            return recv.value
    return None


def _update(stmt, x: str, mask_code: str) -> bool:
    """`x[P] = v` or `x.masked_fill_(P, v)` with `v` a number literal."""
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        t = stmt.targets[0].target
        return (isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value == x
                and len(t.slice) == 1 and isinstance(t.slice[0].slice, cst.Index)
                and code(strip_parens(t.slice[0].slice.value)) == mask_code and _number(stmt.value))
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        f = call.func
        return (isinstance(f, cst.Attribute) and f.attr.value == "masked_fill_" and isinstance(f.value, cst.Name)
                and f.value.value == x and len(call.args) == 2 and not any(a.keyword or a.star for a in call.args)
                and code(strip_parens(call.args[0].value)) == mask_code and _number(call.args[1].value))
    return False


def fix(rule, node: cst.If, func: cst.FunctionDef) -> Fix | None:
    """The compile-only update-alone form, or None when `node` is not such a guard."""
    if len(arms(node)) != 1:
        return None
    prover = Prover(rule, node, func)
    mask = _mask_of(prover, node.test)
    if mask is None:
        return None
    x = _tests_x(prover, mask)
    if x is None:
        return None
    tensor = "" if prover.ff.value(cst.Name(x)).is_tensor else f"isinstance({x}, {code(prover.torch('torch.Tensor'))}) and "
    stmts = without_logging(prover, Verdict(), body_statements(node.body))
    mask_code = code(mask)
    if len(stmts) != 1 or not _update(stmts[0], x, mask_code):
        return None
    line = next(s for s in node.body.body if isinstance(s, cst.SimpleStatementLine) and stmts[0] in s.body)
    is_compiling, needs = rule.spell("torch.compiler.is_compiling")
    test = cst.parse_expression(f"{is_compiling}() and {tensor}not {x}.requires_grad")
    new = cst.If(test=test, body=cst.IndentedBlock(body=[line.with_changes(leading_lines=(), trailing_whitespace=cst.TrailingWhitespace())]),
                 orelse=node.with_changes(leading_lines=()), leading_lines=node.leading_lines)
    return Fix(new, Safety.SAFE, TITLE.format(x=f"{tensor}not {x}.requires_grad"), needs or prover.imports)
