"""GM1xx compile-only form: eager runs the user's `if` verbatim, Dynamo traces torch.where.

    if torch.compiler.is_compiling() and <trace-time checks>:
        <the torch.where form>
    elif <the original test>:      # the original if/elif/else, unchanged
        ...

The checks are Python constants while Dynamo traces (`h.is_floating_point()`,
`isinstance(self.limit, (int, float))`), so they add no graph break; under dynamic shapes a
shape comparison becomes a guard. When the branch values are not provably of one shape and dtype,
they are bound first and compared; a mismatch runs the original choice (a graph break, as before):

    if torch.compiler.is_compiling():
        y_if = <value of the `if` branch>
        y_else = <value of the `else` branch>
        if y_if.shape == y_else.shape and y_if.dtype == y_else.dtype:
            y = torch.where(<test>, y_if, y_else)
        else:
            y = y_if if <test> else y_else
    elif ...
"""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import PositionProvider

from ... import fastwalk
from ...analysis import context
from ...analysis import tables as T
from ...analysis.bindings import dotted
from ..build import assign
from ..syntax import code, flatten, names_in, strip_parens
from .proof import Prover
from .verdict import EAGER_ONLY, GRAD_OFF, SHAPES, Verdict

# EAGER_VERBATIM, the rule that picks the form (issue 24): every GM1xx torch.where fix is this
# compile-only form, also where the source proves torch.where exact. The "short form" (torch.where
# in place of the `if`, eager too) gives the same values but was slower in eager in every case
# measured: perf/eager_short_form.py, torch 2.13 CPU, one thread, the 12 fixtures that had it plus
# two names `a if c else b`, both outcomes, 32x128 and 4x256x768 tensors: 54 of 54 rows slower,
# by 1.3x to 400x, median 2.1x (32x128) and 7.2x (4x256x768): torch.where computes every branch,
# the `if` one branch and a sync. Under torch.compile both forms trace the same graph. The short
# form is left only where no compile-only form fits (a ternary as an `and`/`or` operand, in a
# test, ...: fixes/where/nested.py), as an unsafe fix whose title says why (`SHORT_FORM_IN_EAGER`).
SHORT_FORM_IN_EAGER = ("torch.where replaces the ternary in eager too, where it computes both branches "
                       "(slower than the ternary: perf/eager_short_form.py)")


def proved_note(verdict: Verdict) -> str:
    """How a form that needs no check keeps gradients exact, for the fix title."""
    return " (double where: exact gradients)" if verdict.guard else ""


@dataclass
class Split:
    node: cst.If | None = None  # the replacement, None when no compile-only form fits
    unchecked: list[str] = field(default_factory=list)  # missing proofs no trace-time check covers
    checked: list[str] = field(default_factory=list)  # the trace-time checks, as source
    grad_only: list[str] = field(default_factory=list)  # why the compiled form waits for gradients off
    shapes_checked: bool = False  # the branch values are bound and compared while tracing


def fresh(taken: set[str], base: str) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name


def _where_parts(prover: Prover, e: cst.BaseExpression) -> tuple | None:
    """(cond, a, b) of `torch.where(cond, a, b)` whose values are no torch.where themselves (an elif)."""
    if not (isinstance(e, cst.Call) and len(e.args) == 3 and prover.b.qualify(e.func) == "torch.where"):
        return None
    c, a, b = (arg.value for arg in e.args)
    if any(isinstance(v, cst.Call) and prover.b.qualify(v.func) == "torch.where" for v in (a, b)):
        return None
    return c, a, b


SHAPE_ONLY = {"shape", "dtype", "device", "size", "dim", "ndim", "numel", "is_floating_point"}


def _reads(prover: Prover, e: cst.CSTNode) -> dict[str, int]:
    """Names (and `self.x` chains) whose values `e` reads, not counting the data argument of a
    constructor (`torch.tensor(self.factors)` copies it, with no autograd link), the mask of
    `masked_fill` or the condition of `torch.where` (bool), comparisons (bool) or `.shape`-like reads."""
    found: dict[str, int] = {}

    class V(cst.CSTVisitor):
        def visit_Comparison(self, n: cst.Comparison) -> bool:
            return False  # a bool: no gradient reaches what it compares

        def visit_Call(self, n: cst.Call) -> bool:
            func = prover.b.qualify(n.func)
            if func == "torch.where" and len(n.args) == 3 and not n.args[0].keyword:
                fastwalk.visit(n.func, self)
                for a in n.args[1:]:
                    fastwalk.visit(a.value, self)
                return False
            if func in T.CONSTRUCTORS:
                for a in n.args[1:]:
                    fastwalk.visit(a.value, self)
                return False
            if isinstance(n.func, cst.Name) and n.func.value in T.PURE_BUILTINS:  # `float("-inf")`
                for a in n.args:
                    fastwalk.visit(a.value, self)
                return False
            op, _, rest = prover.op_name(n)
            if op == "masked_fill" and rest:  # its mask is a bool tensor: never differentiable
                fastwalk.visit(n.func, self)
                for a in n.args:
                    if a is not rest[0]:
                        fastwalk.visit(a.value, self)
                return False
            return True

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            if n.attr.value in SHAPE_ONLY:
                return False
            name = dotted(n)
            if name is not None and name.startswith("self."):
                found[name] = found.get(name, 0) + 1
            else:
                fastwalk.visit(n.value, self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            fastwalk.visit(n.value, self)  # not the keyword
            return False

        def visit_SubscriptElement(self, n: cst.SubscriptElement) -> bool:
            return False  # an index: an integer tensor or number, never differentiable

        def visit_Name(self, n: cst.Name) -> None:
            if n.value not in ("self", "True", "False", "None") and prover.b.qualify(n) is None:
                found[n.value] = found.get(n.value, 0) + 1

    fastwalk.visit(e, V())
    return found


def _reach(prover: Prover, reads: dict[str, int], skip: frozenset[str] = frozenset(),
           node: cst.CSTNode | None = None) -> set[str]:
    """`reads` and, through the assignments of the function (in any order), what those names were
    computed from; names in `skip` are not followed. With `node` (the `if`), a branch's setup names
    are followed to their own values and no other assignment inside `node` is: a branch reads the
    value a name had before the `if`, not what the other branch assigns it."""
    lines = None
    if node is not None:
        pos = prover.rule.get_metadata(PositionProvider, node, None)
        lines = (pos.start.line, pos.end.line) if pos is not None else None

    def values(name: str) -> list:
        if node is not None and name in prover.local:
            return [prover.local[name]]
        out = []
        for v in prover.ff.assigned.get(name, []):
            p = prover.rule.get_metadata(PositionProvider, v, None) if lines and v is not None else None
            if p is None or not lines[0] <= p.start.line <= lines[1]:
                out.append(v)
        return out

    found = set(reads)
    todo = [n for n in found if "." not in n and n not in skip]
    seen = set(todo)
    while todo:
        for value in values(todo.pop()):
            for name in _reads(prover, value) if value is not None else ():
                found.add(name)
                if "." not in name and name not in seen and name not in skip:
                    seen.add(name)
                    todo.append(name)
    return found


def _after(prover: Prover, node: cst.CSTNode) -> tuple[dict[str, int], frozenset[str]]:
    """What the function reads after `node` (statements and headers that start below it, not the
    lines that are its `else` arm), and the names `node` and those lines assign."""
    pos = prover.rule.get_metadata(PositionProvider, node, None)
    end = pos.end.line if pos is not None else 10 ** 9
    tail = {id(st) for st in prover.tail}
    found: dict[str, int] = {}
    targets: set[str] = set()

    def add(e: cst.CSTNode) -> None:
        for name, k in _reads(prover, e).items():
            found[name] = found.get(name, 0) + k

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is prover.func

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            return False

        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            if isinstance(n.target, cst.Name) and inside[-1]:
                targets.add(n.target.value)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:  # refused in a branch today; counted all the same
            if isinstance(n.target, cst.Name) and inside[-1]:
                targets.add(n.target.value)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            if isinstance(n.target, cst.Name) and inside[-1]:
                targets.add(n.target.value)

        def _below(self, n: cst.CSTNode) -> bool:
            p = prover.rule.get_metadata(PositionProvider, n, None)
            return p is not None and p.start.line > end

        def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> bool:
            inside.append(id(n) in tail or inside[-1])
            if id(n) not in tail and not inside[-2] and self._below(n):
                add(n)
            return True

        def leave_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> None:
            inside.pop()

        def visit_If(self, n: cst.If) -> bool:
            inside.append(n is node or inside[-1])
            if not inside[-1] and self._below(n):
                add(n.test)
            return True

        def leave_If(self, n: cst.If) -> None:
            inside.pop()

        def visit_While(self, n: cst.While) -> None:
            if self._below(n):
                add(n.test)

        def visit_For(self, n: cst.For) -> None:
            if self._below(n):
                add(n.iter)

    inside = [False]
    prover.func.body.visit(V())
    return found, frozenset(targets)


def one_sided(prover: Prover, node: cst.If, a: cst.BaseExpression, b: cst.BaseExpression) -> list[str]:
    """torch.where gives a zero gradient to what only the untaken branch reads, where `if` gave none
    (`.grad` stays None; optimizers with weight decay or momentum treat the two differently). A
    branch value reads what its names were computed from too (`t = torch.zeros_like(h)` reads
    nothing differentiable), and a name still counts as read in both where the code after the `if`
    reads it (not through what the `if` assigns). The values are read through the assignments
    after the `if` that are its `else` arm."""
    if prover.grad_off:
        return []
    ra = _reach(prover, _reads(prover, prover.inlined(a)), node=node)
    rb = _reach(prover, _reads(prover, prover.inlined(b)), node=node)
    after, assigned = _after(prover, node)
    outside = _reach(prover, after, assigned)
    out = []
    for name in sorted(ra ^ rb):
        if name not in outside and prover.ff.value(cst.parse_expression(name)).kind != "static":  # a number has no gradient
            out.append(f"`{name}` is read in one branch only: torch.where gives it a zero gradient when that "
                       "branch is not taken, where `if` gave none (optimizers with momentum or weight decay "
                       "then move it)")
    return out


def _test(parts: list[str], prover: Prover, node: cst.CSTNode) -> cst.BaseExpression:
    """`a and b and c`, wrapped one operand a line in parentheses (as ruff format does) when
    `if <test>:` would pass 88 columns."""
    module = node
    while module is not None and not isinstance(module, cst.Module):
        module = prover.rule.parent(module)
    step = module.default_indent if module is not None else "    "  # tabs in a tab-indented file
    pos = prover.rule.get_metadata(PositionProvider, node, None)
    col = 4 * (pos.start.column // max(len(step), 1)) if pos is not None else 0  # as if indented by 4 spaces
    flat = conjunction(parts)
    if col + len(flat) + 4 <= 88 or len(parts) < 2:
        return cst.parse_expression(flat)
    parts = [q for p in parts for q in p.split(" and ")]  # the checks hold no nested `and`
    text = "(\n" + "".join(f"{step}{'and ' if i else ''}{p}\n" for i, p in enumerate(parts)) + ")"
    return cst.parse_expression(text)


def conjunction(parts: list[str]) -> str:
    """`a and b and c`, as source."""
    return " and ".join(parts)


class _Named(cst.CSTTransformer):
    """The condition's source, wherever a branch value repeats it (a double-where guard), -> its name."""

    def __init__(self, text: str, name: str) -> None:
        self.text, self.name = text, name

    def on_leave(self, original, updated):
        if isinstance(original, cst.BaseExpression) and code(strip_parens(original)) == self.text:
            return cst.Name(self.name)
        return updated


def _tensor_rooted(v: cst.BaseExpression, known: set[str]) -> bool:
    """`v` is a name the head checked with isinstance(..., torch.Tensor), or indexes one."""
    while isinstance(v, cst.Subscript):
        v = v.value
    return dotted(v) in known


def _where_pairs(prover: Prover, node: cst.CSTNode, results: list, grad: list[str]) -> tuple[list, bool] | None:
    """(target or None, a, b, cond) of each torch.where the final statements assign or return, and
    whether they return a tuple; None for other forms. `grad` as in `_shape_form`."""
    pairs: list[tuple[str | None, cst.BaseExpression, cst.BaseExpression, cst.BaseExpression]] = []
    ret_tuple = False
    for st in results:
        small = st.body[0]
        if isinstance(small, cst.Assign):
            target = small.targets[0].target.value
            values = [(target, small.value)]
        elif isinstance(small, cst.Return) and isinstance(small.value, cst.Tuple):
            ret_tuple = True
            values = [(None, el.value) for el in small.value.elements]
        elif isinstance(small, cst.Return):
            values = [(None, small.value)]
        else:
            return None
        for target, value in values:
            parts = _where_parts(prover, value)
            if parts is None:
                return None
            c, a, b = parts
            pairs.append((target, a, b, c))
            grad.extend(m for m in one_sided(prover, node, a, b) if m not in grad)
    return pairs, ret_tuple


def _shape_form(prover: Prover, stmts: list, taken: set[str], node: cst.If, grad: list[str],
                known: set[str] = frozenset()) -> list | None:
    """Bind the branch values of the final torch.where statements and compare them while tracing.
    `grad` collects what holds only with gradients off (names read in one branch only)."""
    body: list = []
    for st in stmts:
        small = st.body[0] if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 else None
        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and \
                prover.b.qualify(small.value.func) == "torch.where":
            break
        if isinstance(small, cst.Return):
            break
        body.append(st)
    found = _where_pairs(prover, node, stmts[len(body):], grad)
    if found is None:
        return None
    pairs, ret_tuple = found
    if not pairs:
        return None
    conds = {code(c) for *_, c in pairs}
    if len(conds) != 1:
        return None
    cond = pairs[0][3]
    cond_name = fresh(taken, "cond")
    body.append(assign(cond_name, cond))
    named = _Named(code(strip_parens(cond)), cond_name)
    checks, where_stmts, fallback, outs_where, outs_fallback = [], [], [], [], []
    for i, (target, a, b, _) in enumerate(pairs):
        stem = target or "out"
        names = []
        for side, v in (("if", a), ("else", b)):
            if isinstance(v, cst.Name):
                names.append(v.value)
                continue
            n = fresh(taken, f"{stem}_{side}")
            body.append(assign(n, v.visit(named)))
            names.append(n)
        x, y = names
        for n, v in zip(names, (a, b)):
            if not prover.is_tensor(v) and not _tensor_rooted(v, known):
                checks.append(f"isinstance({n}, {code(prover.torch('torch.Tensor'))})")
        checks.append(f"{x}.shape == {y}.shape and {x}.dtype == {y}.dtype")
        w = f"{code(prover.torch('torch.where'))}({cond_name}, {x}, {y})"
        f = f"{x} if {cond_name} else {y}"
        if target is not None:
            where_stmts.append(f"{target} = {w}")
            fallback.append(f"{target} = {f}")
        else:
            outs_where.append(w)
            outs_fallback.append(f"({f})" if ret_tuple else f)
    if outs_where:
        sep = ", "
        where_stmts.append(f"return {sep.join(outs_where)}")
        fallback.append(f"return {sep.join(outs_fallback)}")
    text = f"if {conjunction(dict.fromkeys(checks))}:\n" + "".join(f"    {s}\n" for s in where_stmts) + "else:\n" + \
        "".join(f"    {s}\n" for s in fallback)
    body.append(cst.parse_statement(text).visit(_ModuleIndent()))
    return body


class _ModuleIndent(cst.CSTTransformer):
    """Parsed blocks take the file's own indentation (tabs, two spaces), not the four spaces parsed."""

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        return updated.with_changes(indent=None)


def build(prover: Prover, node: cst.If | cst.SimpleStatementLine, verdict: Verdict, replacement,
          shape_form=None) -> Split:
    """The compile-only form of the planned torch.where `replacement` for the `if` statement `node`
    (or a statement line holding a ternary: it becomes the `else:` block). `shape_form` binds and
    compares the branch values when that is needed (default: `_shape_form`, for statements whose
    value is the torch.where)."""
    out = Split()
    setup_names = set(prover.local)
    pre: list[str] = []
    shapes = False
    grad_off: list[str] = []
    for why in verdict.missing:
        check = prover.checks.get(why)
        if check == EAGER_ONLY:
            continue
        if check == GRAD_OFF:
            grad_off.append(why)
            continue
        if check is None or check != SHAPES and names_in(cst.parse_expression(check)) & setup_names:
            out.unchecked.append(why)
        elif check == SHAPES:
            shapes = True
        elif check not in pre:
            pre.append(check)
    pre.sort(key=lambda c: not c.startswith("isinstance("))  # a type test before `.is_floating_point()`
    is_compiling, needs = prover.rule.spell("torch.compiler.is_compiling")
    prover.imports = prover.imports or needs
    if isinstance(replacement, cst.If):  # a static leading conjunct: `if <prefix>: <fix>`
        stmts, prefix = list(replacement.body.body), replacement
    else:
        stmts, prefix = list(replacement), None
    stmts = [s.with_changes(leading_lines=()) for s in stmts]  # the comments stay with the original
    if shapes:
        taken = set(prover.ff.assigned) | set(prover.ff.params) | names_in(prover.func)
        tensor = code(prover.torch("torch.Tensor"))
        parts = [p for check in pre for p in check.split(" and ")]
        known = {p[len("isinstance("):-len(f", {tensor})")] for p in parts
                 if p.startswith("isinstance(") and p.endswith(f", {tensor})")}
        if shape_form is None:
            bound = _shape_form(prover, stmts, taken, node, grad_off, known)
        else:
            bound = shape_form(prover, stmts, taken, node, grad_off)  # what holds only with gradients off
        if bound is None:
            out.unchecked.append("the branch values are not provably of the same shape and dtype, and this form "
                                 "(an `elif` chain) cannot compare them while tracing")
        else:
            stmts = bound
            out.checked.append("equal shapes and dtypes of the branch values")
            out.shapes_checked = True
    if grad_off:  # a Python constant while tracing (Dynamo guards on the grad mode)
        grad_on, needs = prover.rule.spell("torch.is_grad_enabled")
        prover.imports = prover.imports or needs
        pre.append(f"not {grad_on}()")
        out.grad_only = grad_off
        for name, side in prover.passed_on.items():  # under no_grad torch.where's result never requires grad
            if names_in(side) & setup_names:
                out.unchecked.append(f"`{name}` is handed on unchanged where its branch is taken; under no_grad "
                                     "torch.where gives a new tensor that does not require grad")
                continue
            tensor = code(prover.torch("torch.Tensor"))
            if prover.ff.value(side).is_tensor or f"isinstance({name}, {tensor})" in pre:
                pre.append(f"not {name}.requires_grad")
            else:
                pre.append(f"not (isinstance({name}, {tensor}) and {name}.requires_grad)")
    out.checked = pre + out.checked
    if prefix is not None:
        stmts = [prefix.with_changes(body=cst.IndentedBlock(body=stmts), leading_lines=())]
    test = _test([f"{is_compiling}()", *pre], prover, node)
    original = node.with_changes(leading_lines=())
    if not isinstance(original, cst.If):
        original = cst.Else(body=cst.IndentedBlock(body=[original]))
    out.node = cst.If(test=test, body=cst.IndentedBlock(body=stmts), orelse=original,
                      leading_lines=node.leading_lines)
    return out


def _compiling_head(test: cst.BaseExpression, b) -> bool:
    """`is_compiling()` or `is_compiling() and ...`: the head of a compile-only form."""
    head = flatten(test, cst.And)[0]
    return context.is_compiling_check(head, b)


def is_fallback(rule, node: cst.CSTNode) -> bool:
    """`node` is the original code kept by a compile-only form (`elif` after `if is_compiling() and
    <checks>:`), or the choice it falls back to when the traced shapes differ: not reported again."""
    b = rule.facts.bindings
    if isinstance(node, cst.If) and node.orelse is not None and _compiling_head(node.test, b):
        return True  # its `elif`/`else` arms run only when the head is False
    shape_else = False
    for child, up in context.ancestors(node, rule.parent):
        if isinstance(up, cst.FunctionDef):
            return False
        if not isinstance(up, cst.If):
            continue
        if child is up.orelse and _compiling_head(up.test, b):
            return True
        if child is up.orelse and ".shape == " in code(up.test):
            shape_else = True
        elif shape_else and child is up.body and _compiling_head(up.test, b):
            return True
    return False


def checked_note(sp: Split) -> str:
    """`, checked while tracing (`a`, `b`)`, or "" when nothing is checked."""
    if not sp.checked:
        return ""
    return f", checked while tracing ({', '.join(f'`{c}`' if '`' not in c else c for c in sp.checked)})"
