"""GM101: a guard that only skips a no-op. `if <some element of P is True>: Y[Q] = v` (or
`Y.masked_fill_(Q, v)`): where the test is False, `Q` selects nothing and the update changes no
element, so under compile the update runs alone (no test, no break); eager keeps the `if`:

    if torch.compiler.is_compiling() and not X.requires_grad:
        X[X == 0] = 1
    elif (X == 0).sum() != 0:
        X[X == 0] = 1
        logger.warning("...")          # logging stays in eager (GM2xx guards it the same way)

The test: `P.any()`, `torch.any(P)`, `P.sum() != 0`, `P.sum() > 0`. `P` is bool, so the test is
False exactly when no element of `P` is True (`.sum()` counts the Trues): an elementwise test of a
name `X` (`X == 0`, `X < 0`, `torch.isnan(X)`, `X.isnan()`: X's shape), or a name `M` whose dtype
is checked while tracing (a float `M` may sum to 0 with nonzero elements). `Q` is `P` itself, or,
for a name, `M[idx]` with basic indexing (slices, integers, `None`, `...`): a view of some of `M`'s
elements (repeated along new dims), so no True either. `Y` may be another tensor than `X`. What
would make the update raise where the `if` never ran it is checked while tracing (constants
there): `M`'s dims for the index, `Q`'s shape against `Y`'s (`Y[Q]` needs `Q.shape ==
Y.shape[:Q.dim()]`, `masked_fill_` a broadcast that keeps `Y`'s shape), the value in `Y`'s dtype
(0 and 1 fit every dtype; others need a floating `Y`, and `masked_fill_` raises on a float16
overflow). `v` is a number literal. `not Y.requires_grad` (a constant while tracing): an in-place
update of a tensor that autograd tracks would change its `grad_fn` (and raise on a leaf), even
when it selects nothing. Measured on torch 2.13 (graph_breaks log): visual_bert's guard is 1
break, the update alone 0.
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


def _tested(prover: Prover, mask: cst.BaseExpression) -> tuple[str, bool] | None:
    """(the name `P` reads, whether `P` is bool by construction): `X == 0`, `torch.isnan(X)`,
    `X.isnan()` (bool, X's shape), or a name `M` itself (its dtype is checked while tracing: for a
    float mask `M.sum() != 0` can be False while elements are nonzero)."""
    if isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1 \
            and isinstance(mask.comparisons[0].operator, COMPARE):
        a, b = strip_parens(mask.left), strip_parens(mask.comparisons[0].comparator)
        if isinstance(a, cst.Name) and _number(b):
            return a.value, True
        if isinstance(b, cst.Name) and _number(a):
            return b.value, True
        return None
    if isinstance(mask, cst.Call) and not any(a.keyword or a.star for a in mask.args):
        op, recv, rest = prover.op_name(mask)
        if op in T.PREDICATES and op in ("isnan", "isinf", "isfinite", "isneginf", "isposinf", "signbit") \
                and isinstance(recv, cst.Name) and not rest:
            return recv.value, True
        return None
    if isinstance(mask, cst.Name):
        return mask.value, False
    return None


def _update(stmt) -> tuple[str, cst.BaseExpression, cst.BaseExpression, bool] | None:
    """(target `Y`, mask `Q`, value `v`, whether it is `masked_fill_`) of `Y[Q] = v` or
    `Y.masked_fill_(Q, v)` with `v` a number literal; None for other statements."""
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        t = stmt.targets[0].target
        if (isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and len(t.slice) == 1
                and isinstance(t.slice[0].slice, cst.Index) and _number(stmt.value)):
            return t.value.value, strip_parens(t.slice[0].slice.value), stmt.value, False
        return None
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        f = call.func
        if (isinstance(f, cst.Attribute) and f.attr.value == "masked_fill_" and isinstance(f.value, cst.Name)
                and len(call.args) == 2 and not any(a.keyword or a.star for a in call.args)
                and _number(call.args[1].value)):
            return f.value.value, strip_parens(call.args[0].value), call.args[1].value, True
    return None


def _value(e: cst.BaseExpression) -> float:
    text = code(e).replace(" ", "")
    try:
        return float(text)
    except ValueError:  # `1_000`, `0x10`
        return float(int(text.lstrip("-"), 0)) * (-1 if text.startswith("-") else 1)


def _checks(prover: Prover, x: str, bool_mask: bool, mask: cst.BaseExpression, update) -> list[str] | None:
    """What must hold while tracing for the update to select nothing, and raise nothing, where the
    test is False; None when it cannot be checked. The test False means no element of the mask `P` is
    True (`P` bool: `.sum()` counts the Trues); `Q` is `P` or `P[idx]` with basic indexing (slices,
    integers, `None`, `...`), which picks some of `P`'s elements, so no True either. Raising: the
    index (`index_guard`), `Q`'s shape against `Y`'s (`Y[Q]` needs `Q.shape == Y.shape[:Q.dim()]`,
    `masked_fill_` a broadcast that keeps `Y`'s shape), the value in `Y`'s dtype."""
    y, q, v, fill = update
    tensor = code(prover.torch("torch.Tensor"))
    out = [] if prover.ff.value(cst.Name(y)).is_tensor else [f"isinstance({y}, {tensor})"]
    if code(q) == code(mask):
        shaped = x  # `P` has the shape of the name it reads
    elif isinstance(q, cst.Subscript) and code(strip_parens(q.value)) == code(mask) and not bool_mask:
        guard = prover.index_guard(q)
        if guard is None or guard[0]:
            return None  # not basic indexing (a tensor index)
        shaped = code(q)
        out += [c for c in guard[1] if c not in out]
    else:
        return None
    if not bool_mask or x != y:
        if not prover.ff.value(cst.Name(x)).is_tensor and f"isinstance({x}, {tensor})" not in out:
            out.append(f"isinstance({x}, {tensor})")
    if not bool_mask:
        out.append(f"{x}.dtype == {code(prover.torch('torch.bool'))}")
    if shaped != y:
        if fill:
            out.append(f"{shaped}.dim() <= {y}.dim() and all(a in (1, b) for a, b in zip({shaped}.shape[::-1], {y}.shape[::-1]))")
        else:
            out.append(f"{shaped}.dim() <= {y}.dim() and {shaped}.shape == {y}.shape[:{shaped}.dim()]")
    value = _value(v)
    if abs(value) > 3e38:
        return None
    if value not in (0.0, 1.0) and not prover.is_float(cst.Name(y)):
        out.append(f"{y}.is_floating_point()")  # an integer dtype may not hold it (raises)
    if fill and abs(value) > 65504:
        out.append(f"{y}.dtype != {code(prover.torch('torch.float16'))}")  # masked_fill_ raises on overflow
    out.append(f"not {y}.requires_grad")
    return out


def fix(rule, node: cst.If, func: cst.FunctionDef) -> Fix | None:
    """The compile-only update-alone form, or None when `node` is not such a guard."""
    if len(arms(node)) != 1:
        return None
    prover = Prover(rule, node, func)
    mask = _mask_of(prover, node.test)
    tested = _tested(prover, mask) if mask is not None else None
    if tested is None:
        return None
    stmts = without_logging(prover, Verdict(), body_statements(node.body))
    update = _update(stmts[0]) if len(stmts) == 1 else None
    checks = _checks(prover, tested[0], tested[1], mask, update) if update is not None else None
    if checks is None:
        return None
    line = next(s for s in node.body.body if isinstance(s, cst.SimpleStatementLine) and stmts[0] in s.body)
    is_compiling, needs = rule.spell("torch.compiler.is_compiling")
    test = cst.parse_expression(f"{is_compiling}() and {' and '.join(checks)}")
    new = cst.If(test=test, body=cst.IndentedBlock(body=[line.with_changes(leading_lines=(), trailing_whitespace=cst.TrailingWhitespace())]),
                 orelse=node.with_changes(leading_lines=()), leading_lines=node.leading_lines)
    return Fix(new, Safety.SAFE, TITLE.format(x=" and ".join(checks)), needs or prover.imports)
