"""GM101: a guard that only skips a no-op. `if <some element of P is True>: Y[Q] = v` (or
`Y.masked_fill_(Q, v)`, or several such updates): where the test is False, `Q` selects nothing and
the updates change no element, so under compile they run alone (no test, no break); eager keeps
the `if`:

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
(0 and 1 fit every dtype; others need a floating `Y`, and `masked_fill_` raises on a finite float16
overflow). `v` is a number literal or `float("-inf")`-like; `Y` a name or a view of one with basic
indexing (`logits[1:]`, its index checked like `Q`'s). `not Y.requires_grad` (a constant while tracing): an in-place
update of a tensor that autograd tracks would change its `grad_fn` (and raise on a leaf), even
when it selects nothing; where `Y` comes from the caller (a parameter, `self.`), also gradients off
(`not torch.is_grad_enabled()`): an op there may have saved it for backward (`y = w * Y`), and
an update, even of no element, bumps its version, so that backward raises (found by an audit).
`Z.is_contiguous()` (`Z`: `Y` or the tensor `Y` views): an update of
a tensor whose elements share memory (an `expand`ed input) raises under compile even when it
selects nothing ("more than one element of the written-to tensor refers to a single memory
location", found by an audit), where the `if` never ran it. Measured on torch 2.13 (graph_breaks log): visual_bert's guard is 1
break, the update alone 0; the same for rag's two fills and wav2vec2's `logits[1:][neg_is_pos]`.
"""
from __future__ import annotations

import math

import libcst as cst

from ...analysis import tables as T
from ..fix import Fix
from ..safety import Safety
from ..syntax import body_statements, code, strip_parens
from .branches import arms, without_logging
from .checks import float_literal
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


def _fill(e: cst.BaseExpression) -> float | None:
    """The number `v` stands for: a literal (`1`, `-1e4`) or `float("-inf")`-like; None otherwise."""
    if _number(e):
        return _value(e)
    minus = isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus)
    inner = e.expression if minus else e
    value = float_literal(inner) if isinstance(inner, cst.Call) else None
    return None if value is None else -value if minus else value


def _target(e: cst.BaseExpression) -> cst.BaseExpression | None:
    """`Y`: a name, or a name with one subscript (`logits[1:]`, a view whose index `index_guard` checks)."""
    e = strip_parens(e)
    if isinstance(e, cst.Name) or isinstance(e, cst.Subscript) and isinstance(e.value, cst.Name):
        return e
    return None


def _update(stmt) -> tuple[cst.BaseExpression, cst.BaseExpression, float, bool] | None:
    """(target `Y`, mask `Q`, the number `v` stands for, whether it is `masked_fill_`) of `Y[Q] = v`
    or `Y.masked_fill_(Q, v)` with `v` a number; None for other statements."""
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        t = stmt.targets[0].target
        if isinstance(t, cst.Subscript) and len(t.slice) == 1 and isinstance(t.slice[0].slice, cst.Index):
            y, v = _target(t.value), _fill(stmt.value)
            if y is not None and v is not None:
                return y, strip_parens(t.slice[0].slice.value), v, False
        return None
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        f = call.func
        if (isinstance(f, cst.Attribute) and f.attr.value == "masked_fill_"
                and len(call.args) == 2 and not any(a.keyword or a.star for a in call.args)):
            y, v = _target(f.value), _fill(call.args[1].value)
            if y is not None and v is not None:
                return y, strip_parens(call.args[0].value), v, True
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
    `masked_fill_` a broadcast that keeps `Y`'s shape), the value in `Y`'s dtype. `Y` may be a view
    `Z[idx]` with basic indexing: its index is checked like `Q`'s, first."""
    target, q, value, fill = update
    y = code(target)
    tensor = code(prover.torch("torch.Tensor"))
    if isinstance(target, cst.Subscript):
        guard = prover.index_guard(target)
        if guard is None or guard[0]:
            return None  # not basic indexing (a tensor index)
        out = list(guard[1])
    else:
        out = [] if prover.ff.value(target).is_tensor else [f"isinstance({y}, {tensor})"]
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
            out.append(f"{shaped}.dim() <= {y}.dim() and {shaped}.shape == {y}.shape[: {shaped}.dim()]")
    if math.isfinite(value) and abs(value) > 3e38:
        return None
    if value not in (0.0, 1.0) and not prover.is_float(target):
        out.append(f"{y}.is_floating_point()")  # an integer dtype may not hold it (raises)
    if fill and math.isfinite(value) and abs(value) > 65504:
        out.append(f"{y}.dtype != {code(prover.torch('torch.float16'))}")  # masked_fill_ raises on overflow
    out.append(f"not {y}.requires_grad")
    root = (code(target.value) if isinstance(target, cst.Subscript) else y).split(".")[0].split("[")[0]
    if root in prover.ff.params and not prover.grad_off:
        # a tensor from the caller may be saved for backward by an op there (`y = w * t`): an update,
        # even of no element, bumps its version and that backward raises, where the `if` never ran it
        out.append(f"not {code(prover.torch('torch.is_grad_enabled'))}()")
    # an update of a tensor whose elements share memory (an `expand`ed input) raises even when it
    # selects nothing; a contiguous tensor, and a basic-indexing view of one, has none that do
    base = code(target.value) if isinstance(target, cst.Subscript) else y
    out.append(f"{base}.is_contiguous()")
    return out


def _lines(block: cst.BaseSuite, kept: list) -> list[cst.SimpleStatementLine]:
    """The lines of `block` that hold the statements `kept`, without their comments (the `elif` keeps
    those); a line that also holds a log call, or a one-line body, is written with `kept`'s alone."""
    def line(stmts: list) -> cst.SimpleStatementLine:
        return cst.SimpleStatementLine(body=[s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in stmts])

    if isinstance(block, cst.SimpleStatementSuite):
        return [line([s for s in block.body if any(s is k for k in kept)])]
    out = []
    for s in block.body:
        if not isinstance(s, cst.SimpleStatementLine):
            continue  # a guard that does not run under compile
        mine = [t for t in s.body if any(t is k for k in kept)]
        if len(mine) == len(s.body):
            out.append(s.with_changes(leading_lines=(), trailing_whitespace=cst.TrailingWhitespace()))
        elif mine:
            out.append(line(mine))
    return out


def runs_alone(node: cst.If, test: cst.BaseExpression, kept: list) -> cst.If:
    """`if <test>: <kept>` then `elif` the original `if`: the statements `kept` of its body run alone
    where `test` (the compile-only one) holds (ones.py writes its form the same way)."""
    return cst.If(test=test, body=cst.IndentedBlock(body=_lines(node.body, kept)),
                  orelse=node.with_changes(leading_lines=()), leading_lines=node.leading_lines)


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
    if not stmts:
        return None
    checks: list[str] = []
    for stmt in stmts:  # each update selects nothing where the test is False, so all of them together
        update = _update(stmt)
        more = _checks(prover, tested[0], tested[1], mask, update) if update is not None else None
        if more is None:
            return None
        checks += [c for c in more if c not in checks]
    is_compiling, needs = rule.spell("torch.compiler.is_compiling")
    test = cst.parse_expression(f"{is_compiling}() and {' and '.join(checks)}")
    title = TITLE.format(x=" and ".join(checks))
    if f"not {code(prover.torch('torch.is_grad_enabled'))}()" in checks:
        title += ("; with gradients on, the `if` runs as before (the updated tensor comes from the caller, "
                  "where an op may have saved it for backward)")
    return Fix(runs_alone(node, test, stmts), Safety.SAFE, title, needs or prover.imports)
