"""GM101: a guard that only skips a multiplication by ones. The hybrid (Mamba) layers of
transformers 5.x before `apply_mask_to_padding_states` (nemotron_h, zamba, zamba2):

    if attention_mask is not None and not torch.all(attention_mask == 1):
        dtype = hidden_states.dtype
        hidden_states = (hidden_states * attention_mask[:, :, None]).to(dtype)

Where the tensor test is False every element of `M` is 1, so is every element of `F` (`M`, `M`
with basic indexing, `M.unsqueeze(k)`: some of `M`'s elements), and `Y * F` is `Y` exactly (x * 1
is x for every integer and real float, NaN and the infinities included; the gradient, times 1, too).
So under compile the multiplication runs alone (no test, no break); eager keeps the `if`:

    if torch.compiler.is_compiling() and M is not None and <checks>:
        <the body>
    elif M is not None and not torch.all(M == 1):
        <the body>

The test: `not torch.all(M == 1)`, `not (M == 1).all()`, `torch.any(M != 1)`, `(M != 1).any()`,
after `M is not None` conjuncts. The body: `Y = Y * F` (or `F * Y`, or `(Y * F).to(D)`), after an
optional `D = Y.dtype`; `D` may be read elsewhere only before the `if` (outside loops) or after a
statement that binds it again (`_bound_before_read`: nemotron_h has two such guards in one function).
On transformers 5.4.0 these guards sit on the CUDA-kernel paths (`cuda_kernels_forward`), which
CPU runs do not take. Checked while tracing: that the product keeps `Y`'s shape (`F` broadcasts
into `Y`) and dtype (`M` bool, of `Y`'s dtype, or an integer `M` with a floating `Y`), `F`'s index
cannot raise, `Y` is not complex ((a + bi) * 1 is NaN where b is infinite), and `M` does not require
grad (it would get one). `Y` becomes a new tensor where
it stayed the same object: refused when `Y` is modified in place or its `grad_fn` is read later
(after.py). Measured on torch 2.13: the guard is 1 break; the fixed form 0, outputs and gradients
bitwise equal (tests/fixtures/GM101/invalid_ones_multiply*.py).
"""
from __future__ import annotations

import itertools

import libcst as cst
from libcst.metadata import PositionProvider

from ... import fastwalk
from ..fix import Fix
from ..safety import Safety
from ..syntax import body_statements, code, flatten, literal_int, names_in, strip_parens
from .after import after_of, rebind_proofs
from .branches import arms, without_logging
from .noop import runs_alone
from .proof import Prover
from .verdict import Verdict

TITLE = ("fix: under torch.compile the multiplication runs alone (where the test is False every element of "
         "`{m}` is 1, so it changes nothing), eager runs the `if` unchanged, checked while tracing (`{x}`)")


def _one(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Integer) and e.value == "1"


def _tested(prover: Prover, t: cst.BaseExpression) -> str | None:
    """`M` of `not torch.all(M == 1)`, `not (M == 1).all()`, `torch.any(M != 1)`, `(M != 1).any()`."""
    t = strip_parens(t)
    negated = isinstance(t, cst.UnaryOperation) and isinstance(t.operator, cst.Not)
    call = strip_parens(t.expression) if negated else t
    if not isinstance(call, cst.Call) or any(a.keyword or a.star for a in call.args):
        return None
    op, recv, rest = prover.op_name(call)
    if rest or recv is None or op != ("all" if negated else "any"):
        return None
    cmp = strip_parens(recv)
    if not (isinstance(cmp, cst.Comparison) and len(cmp.comparisons) == 1
            and isinstance(cmp.comparisons[0].operator, cst.Equal if negated else cst.NotEqual)):
        return None
    a, b = strip_parens(cmp.left), strip_parens(cmp.comparisons[0].comparator)
    if isinstance(a, cst.Name) and _one(b):
        return a.value
    if isinstance(b, cst.Name) and _one(a):
        return b.value
    return None


def _not_none(e: cst.BaseExpression, m: str) -> bool:
    e = strip_parens(e)
    return (isinstance(e, cst.Comparison) and len(e.comparisons) == 1 and isinstance(e.left, cst.Name)
            and e.left.value == m and isinstance(e.comparisons[0].operator, cst.IsNot)
            and isinstance(e.comparisons[0].comparator, cst.Name) and e.comparisons[0].comparator.value == "None")


def _factor_checks(prover: Prover, f: cst.BaseExpression, m: str) -> list[str] | None:
    """Checks under which `F` is some of `M`'s elements and cannot raise; None for other forms."""
    f = strip_parens(f)
    if isinstance(f, cst.Name):
        return [] if f.value == m else None
    if isinstance(f, cst.Subscript) and isinstance(f.value, cst.Name) and f.value.value == m:
        guard = prover.index_guard(f)
        return None if guard is None or guard[0] else guard[1]  # no tensor index
    if isinstance(f, cst.Call) and isinstance(f.func, cst.Attribute) and f.func.attr.value == "unsqueeze" \
            and isinstance(f.func.value, cst.Name) and f.func.value.value == m and len(f.args) == 1 \
            and not (f.args[0].keyword or f.args[0].star):
        k = literal_int(f.args[0].value)
        return None if k is None else [f"{m}.dim() >= {k if k >= 0 else -k - 1}"]
    return None


def _product(e: cst.BaseExpression, y: str, dtype: str | None) -> cst.BaseExpression | None:
    """`F` of `Y * F`, `F * Y`, or `(Y * F).to(D)` (`D` the name bound to `Y.dtype`)."""
    e = strip_parens(e)
    if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "to":
        if dtype is None or len(e.args) != 1 or e.args[0].keyword or e.args[0].star \
                or not (isinstance(e.args[0].value, cst.Name) and e.args[0].value.value == dtype):
            return None
        e = strip_parens(e.func.value)
    if not (isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Multiply)):
        return None
    left, right = strip_parens(e.left), strip_parens(e.right)
    if isinstance(left, cst.Name) and left.value == y:
        return right
    if isinstance(right, cst.Name) and right.value == y:
        return left
    return None


def _dtype_binding(stmt) -> tuple[str, str] | None:
    """(D, Y) of `D = Y.dtype`."""
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
        v = stmt.value
        if isinstance(v, cst.Attribute) and v.attr.value == "dtype" and isinstance(v.value, cst.Name):
            return stmt.targets[0].target.value, v.value.value
    return None


class _Reads(cst.CSTVisitor):
    """The Names that read `name` (not attribute or keyword names, not assignment targets or params)."""

    def __init__(self, name: str) -> None:
        self.name, self.nodes = name, []
        self._not_reads: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_reads.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._not_reads.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self._not_reads.add(id(node.name))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._not_reads.add(id(node.target))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and id(node) not in self._not_reads:
            self.nodes.append(node)


def _binds(stmt, name: str) -> bool:
    """`stmt` is a line `name = <value that does not read name>`."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                and small.targets[0].target.value == name:
            return name not in names_in(small.value)
    return False


def _bound_before_read(rule, func: cst.FunctionDef, node: cst.If, name: str) -> bool:
    """Every read of `name` in `func` outside `node`'s body is written before `node` (which no loop
    runs again), or comes after a statement that binds it, in a block around the read (so it runs
    before the read on every path) and written after `node` (so it runs after `node`): the binding
    the body makes under compile, where the `if` never made it, is never read."""
    pos = rule.get_metadata(PositionProvider, node)
    before_if, after_if = (pos.start.line, pos.start.column), (pos.end.line, pos.end.column)

    def rebinds(stmt) -> bool:
        start = rule.get_metadata(PositionProvider, stmt).start
        return (start.line, start.column) >= after_if and _binds(stmt, name)

    in_loop, up = False, rule.parent(node)
    while up is not None and up is not func:
        in_loop = in_loop or isinstance(up, (cst.For, cst.While))
        up = rule.parent(up)
    inside = _Reads(name)
    fastwalk.visit(node.body, inside)
    mine = {id(n) for n in inside.nodes}
    reads = _Reads(name)
    fastwalk.visit(func, reads)
    for read in reads.nodes:
        if id(read) in mine:
            continue
        at = rule.get_metadata(PositionProvider, read).start
        if not in_loop and (at.line, at.column) < before_if:
            continue  # it runs before the `if`, which no loop runs again
        child, up, ok = read, rule.parent(read), False
        while up is not None and child is not func and not ok:
            if isinstance(up, (cst.IndentedBlock, cst.Module)):
                ok = any(rebinds(stmt) for stmt in itertools.takewhile(lambda stmt: stmt is not child, up.body))
            child, up = up, rule.parent(up)
        if not ok:
            return False
    return True


def fix(rule, node: cst.If, func: cst.FunctionDef) -> Fix | None:
    """The compile-only multiplication-alone form, or None when `node` is not such a guard."""
    if len(arms(node)) != 1:
        return None
    prover = Prover(rule, node, func)
    parts = flatten(node.test, cst.And)
    m = _tested(prover, parts[-1])
    if m is None or not all(_not_none(p, m) for p in parts[:-1]):
        return None
    stmts = without_logging(prover, Verdict(), body_statements(node.body))
    dtype = _dtype_binding(stmts[0]) if stmts else None
    if dtype is not None:
        stmts_left = stmts[1:]
        if not _bound_before_read(rule, func, node, dtype[0]):
            return None  # the binding would be seen where the `if` never made it
    else:
        stmts_left = stmts
    if len(stmts_left) != 1:
        return None
    s = stmts_left[0]
    if not (isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name)):
        return None
    y = s.targets[0].target.value
    if y == m or dtype is not None and dtype[1] != y:
        return None
    f = _product(s.value, y, dtype[0] if dtype else None)
    checks = _factor_checks(prover, f, m) if f is not None else None
    if checks is None:
        return None
    if rebind_proofs(after_of(rule, node, func), y, {y}):
        return None  # `Y` would be a new tensor object where it stayed the same one
    tensor = code(prover.torch("torch.Tensor"))
    out = [f"isinstance({n}, {tensor})" for n in (m, y) if not prover.ff.value(cst.Name(n)).is_tensor]
    out += [c for c in checks if c not in out]
    shaped = code(strip_parens(f))
    out.append(f"{shaped}.dim() <= {y}.dim() and "
               f"all(a in (1, b) for a, b in zip({shaped}.shape[::-1], {y}.shape[::-1]))")
    bool_ = code(prover.torch("torch.bool"))
    out.append(f"({m}.dtype == {y}.dtype or {m}.dtype == {bool_} or {y}.is_floating_point() "
               f"and not {m}.is_floating_point() and not {m}.is_complex())")
    out.append(f"not {y}.is_complex()")
    out.append(f"not {m}.requires_grad")
    is_compiling, needs = rule.spell("torch.compiler.is_compiling")
    test = cst.parse_expression(" and ".join([f"{is_compiling}()", *(code(p) for p in parts[:-1]), *out]))
    return Fix(runs_alone(node, test, stmts), Safety.SAFE, TITLE.format(m=m, x=" and ".join(out)),
               needs or prover.imports)
