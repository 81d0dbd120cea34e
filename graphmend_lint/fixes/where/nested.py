"""GM102 compile-only form for a tensor ternary nested in a larger expression of a simple statement.

    y = self.proj(x) + (h if h.norm() > 1 else h * 0.5)

becomes (eager keeps the line verbatim, as the `else:` block):

    if torch.compiler.is_compiling() and <trace-time checks>:
        y = self.proj(x) + (torch.where(h.norm() > 1, h, h * 0.5))
    else:
        y = self.proj(x) + (h if h.norm() > 1 else h * 0.5)

The compiled line evaluates every other part of the statement once, in the original order: the
ternary is replaced where it stands. When the branch values must be compared while tracing, they are
bound before the statement; so is everything the statement evaluates before the ternary that is not
a local or imported name or a constant, up to the last part that may have effects, in order. A module
call such as `self.proj(x)` may draw random numbers (dropout), run hooks or change state the test
reads: it must still run before the test and the branch values do.

    y = self.proj(x) + (h if h.norm() > 1 else h.mean(0, keepdim=True))

    if torch.compiler.is_compiling():
        y_part = self.proj(x)
        cond = h.norm() > 1
        y_else = h.mean(0, keepdim=True)
        if h.shape == y_else.shape and h.dtype == y_else.dtype:
            y = y_part + (torch.where(cond, h, y_else))
        else:
            y = y_part + (h if cond else y_else)
    else:
        y = self.proj(x) + (h if h.norm() > 1 else h.mean(0, keepdim=True))

Pure parts after the last one with effects stay in place when the test is pure too (GM102 proved
both branch values pure and total, as torch.where computes both), so they commute; a test that may
have effects (`self.tick(h).sum() > 0`) binds every such part first.

Refused (no compile-only form; the fix stays the unsafe in-place torch.where): a ternary in a
short-circuit or deferred context (`and`/`or`, another ternary, a lambda or comprehension, a chained
comparison), in an assignment target or an `if`/`while` test, a statement with a walrus, `yield`,
`await` or a second ternary, star arguments before it, `is`/`in` on its value, and a branch value
that is a tensor object itself (`h`) reaching code that could keep or change that very object (an
in-place method, `out=`, a view, a module or user function, a container assigned to names).
"""
from __future__ import annotations

import libcst as cst

from ... import fastwalk
from ...analysis import tables as T
from ...analysis.bindings import dotted
from ..build import line, sole_line
from ..fix import Fix, NoFix, Refused
from ..safety import Safety
from ..syntax import code, strip_parens
from .after import alias_of
from .compiled import (
    SHAPE_ONLY,
    assign,
    build,
    checked_note,
    conjunction,
    fresh,
    one_sided,
    proved_note,
)
from .proof import Prover
from .verdict import EAGER_ONLY, GRAD_OFF, SHAPES, Verdict

_STATEMENTS = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)
_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)
# functions/methods whose result is a new tensor, never their argument itself or a view of it
_COPYING_FUNCS = {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.where"}
_NOT_COPYING = {"contiguous", "detach"}  # may return the very tensor, or share its storage


def _deferred(node: cst.CSTNode) -> str | None:
    """Why a ternary under `node` is not evaluated exactly once, in place, with the statement."""
    if isinstance(node, cst.BooleanOperation):
        return "it sits in an `and`/`or` operand (evaluated only sometimes)"
    if isinstance(node, cst.IfExp):
        return "it sits in another conditional expression (evaluated only sometimes)"
    if isinstance(node, cst.Lambda):
        return "it sits in a lambda"
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.CompFor)):
        return "it sits in a comprehension"
    if isinstance(node, (cst.FormattedString, cst.FormattedStringExpression)):
        return "it is formatted in an f-string (its grad_fn would show WhereBackward0)"
    return None


class Site:
    """Where the ternary sits: its statement, and the path of (parent, child) steps up to it."""

    def __init__(self, rule, node: cst.IfExp) -> None:
        self.rule, self.node = rule, node
        self.steps: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        child, up = node, rule.parent(node)
        while up is not None and not isinstance(up, _STATEMENTS):
            why = _deferred(up)
            if why:
                raise Refused(why)
            if isinstance(up, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.BaseSuite)):
                raise Refused("it is not in the value of an assignment or a `return`"
                              + (" (an `if`/`while` test)" if isinstance(up, (cst.If, cst.While)) else ""))
            self._step(up, child)
            self.steps.append((up, child))
            child, up = up, rule.parent(up)
        if up is None:
            raise Refused("it is not in a statement")
        if getattr(up, "value", None) is not child:
            raise Refused("it is in an assignment target")
        if isinstance(up, cst.AugAssign) and not isinstance(up.target, cst.Name):
            raise Refused("the augmented assignment's target is evaluated before it and is not a plain name")
        self.small = up
        self.line = sole_line(up, rule.parent)

    @staticmethod
    def _step(up: cst.CSTNode, child: cst.CSTNode) -> None:
        if isinstance(up, cst.UnaryOperation) and isinstance(up.operator, cst.Not):
            raise Refused("`not` on its value")
        if isinstance(up, cst.Comparison):
            if len(up.comparisons) > 1:
                raise Refused("it sits in a chained comparison (later operands are evaluated only sometimes)")
            if isinstance(up.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
                raise Refused("its value is compared by identity or membership")
        for kind, text in ((cst.NamedExpr, "a walrus (`:=`)"), (cst.Await, "`await`"), (cst.Yield, "`yield`"),
                           (cst.StarredElement, "a starred element"), (cst.Slice, "a slice"),
                           ((cst.Set, cst.Dict, cst.DictElement, cst.StarredDictElement), "a set or dict display")):
            if isinstance(up, kind):
                raise Refused(f"it sits in {text}")
        if isinstance(up, cst.Arg) and (up.star or (up.keyword is not None and up.keyword.value == "out")):
            raise Refused("it is a star or `out=` argument")
        if isinstance(up, cst.Call) and child is up.func and not isinstance(child, cst.Attribute):
            raise Refused("it is called")
        if isinstance(up, cst.Subscript) and child is not up.value:
            raise Refused("it is used as an index")
        if isinstance(up, cst.Attribute) and up.attr.value.endswith("_") and not up.attr.value.endswith("__"):
            raise Refused(f"an in-place method (`.{up.attr.value}`) is called on its value")
        if isinstance(up, cst.Attribute) and up.attr.value == "grad_fn":
            raise Refused("its `.grad_fn` is read")

    def check_statement(self) -> None:
        found = {"ifexp": 0}

        class V(cst.CSTVisitor):
            def visit_IfExp(self, n: cst.IfExp) -> None:
                found["ifexp"] += 1

            def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
                found["walrus"] = 1

            def visit_Yield(self, n: cst.Yield) -> None:
                found["yield"] = 1

            def visit_Await(self, n: cst.Await) -> None:
                found["await"] = 1

        fastwalk.visit(self.small, V())
        if found["ifexp"] > 1:
            raise Refused("the statement holds another conditional expression")
        for k, text in (("walrus", "a walrus (`:=`)"), ("yield", "`yield`"), ("await", "`await`")):
            if k in found:
                raise Refused(f"the statement holds {text}")

    def consumer(self, prover: Prover) -> None:
        """A branch value that is a tensor object itself (`h`, `self.buf`): the statement gets that very
        tensor where torch.where gives a new one. Only code that makes a new tensor from it may see it."""
        aliases = [a for a in (alias_of(self.node.body), alias_of(self.node.orelse),
                               dotted(self.node.body), dotted(self.node.orelse)) if a]
        if not aliases:
            return
        name = aliases[0]
        boxed = False  # in a list or tuple: what takes the container decides
        for up, child in self.steps:
            if isinstance(up, (cst.Arg, cst.Element, cst.ComparisonTarget)):
                continue  # look at what takes the argument or the element
            if isinstance(up, (cst.Tuple, cst.List)):
                boxed = True
                continue
            if isinstance(up, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)) and not boxed:
                return  # arithmetic makes a new tensor (on a list, `[h] * 2` would hold `h` itself)
            if isinstance(up, cst.Call):
                q = prover.b.qualify(up.func)
                op = q.rsplit(".", 1)[-1] if q else None
                inplace = any(a.keyword is not None and a.keyword.value == "inplace" for a in up.args)
                copying = q in _COPYING_FUNCS if boxed else q is not None and q.startswith(
                    ("torch.", "torch.nn.functional.")) and op not in _NOT_COPYING and \
                    (op in T.ELEMENTWISE or op in T.REDUCTIONS or q in _COPYING_FUNCS)
                if copying and not inplace:
                    return
                raise Refused(f"`{name}` itself is passed to `{code(up.func)}(...)`, which could keep or change "
                              "that very tensor; torch.where gives a new one")
            if isinstance(up, cst.Attribute) and not boxed:
                method = up.attr.value
                if method not in _NOT_COPYING and (method in T.ELEMENTWISE or method in T.REDUCTIONS):
                    return
                raise Refused(f"`.{method}` is taken of `{name}` itself (maybe a view); torch.where gives a new tensor")
            raise Refused(f"`{name}` itself reaches `{code(up)}`; torch.where gives a new tensor")
        if isinstance(self.small, cst.Return):
            return  # handed to the caller, as `return h if c else g` is
        if isinstance(self.small, cst.AugAssign) and not boxed:
            return  # `y += h if c else g` makes the new tensor or changes `y`, not `h`
        raise Refused(f"`{name}` itself would be assigned{' in a container' if boxed else ''}; "
                      "torch.where gives a new tensor")

    def evaluated_before(self) -> list[cst.BaseExpression]:
        """What the statement evaluates before the ternary, in Python's order, as whole operands."""
        out: list[cst.BaseExpression] = []
        for up, child in reversed(self.steps):  # from the statement down
            if isinstance(up, cst.BinaryOperation) and child is up.right:
                out.append(up.left)
            elif isinstance(up, cst.Comparison) and child is not up.left:
                out.append(up.left)
            elif isinstance(up, (cst.Tuple, cst.List)):
                for el in up.elements:
                    if el is child:
                        break
                    if isinstance(el, cst.StarredElement):
                        raise Refused("a starred element is evaluated before it")
                    out.append(el.value)
            elif isinstance(up, cst.Call) and child is not up.func:  # `(<ternary>).sum()`: nothing before
                f = up.func
                while isinstance(f, cst.Attribute):
                    f = f.value
                if isinstance(up.func, cst.Attribute) and not isinstance(f, cst.Name):
                    out.append(up.func.value)  # the receiver: `self.proj(x).add(<ternary>)`
                for a in up.args:
                    if a is child:
                        break
                    if a.star:
                        raise Refused("a star argument is evaluated before it")
                    out.append(a.value)
        if isinstance(self.small, cst.AugAssign):
            out.insert(0, self.small.target)
        return out


def _trivial(prover: Prover, e: cst.BaseExpression) -> bool:
    """Evaluating `e` earlier or later gives the same object: a constant, a local name (nothing in an
    expression without `:=` rebinds it; a global could be rebound by a call) or an imported name
    (`torch.float32`)."""
    if isinstance(e, _LITERALS):
        return True
    if isinstance(e, cst.Name):
        return e.value in prover.ff.params or e.value in prover.ff.assigned or e.value in ("True", "False", "None") \
            or prover.b.qualify(e) is not None
    if isinstance(e, cst.UnaryOperation) and isinstance(e.expression, _LITERALS):
        return True
    return isinstance(e, cst.Attribute) and prover.b.qualify(e) is not None


def _reads_attribute(prover: Prover, check: str) -> bool:
    """The check reads some object's attribute (`isinstance(self.limit, (int, float))`), not only a
    dtype-like fact of a tensor (`h.is_floating_point()`)."""
    found = []

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> bool:
            if prover.b.qualify(n) is None and n.attr.value not in SHAPE_ONLY:
                found.append(n)
            return True

    cst.parse_expression(check).visit(V())
    return bool(found)


class _Replace(cst.CSTTransformer):
    def __init__(self, table: dict[int, cst.BaseExpression]) -> None:
        self.table = table

    def on_leave(self, original, updated):
        return self.table.get(id(original), updated)


def fix(rule, node: cst.IfExp, func: cst.FunctionDef, prover: Prover, verdict: Verdict,
        replacement: cst.Call) -> Fix | NoFix:
    """The nested compile-only form of the ternary `node`, or why it does not fit."""
    try:
        site = Site(rule, node)
        site.check_statement()
        if site.line is None:
            raise Refused("the statement does not stand alone on its line in a block")
        site.consumer(prover)
        before = site.evaluated_before()
    except Refused as why:
        return NoFix(str(why))
    pure = Prover(rule, node, func)  # a scratch prover: its checks must not reach the verdict

    def is_pure(e):
        v = pure.total(e)
        return v.refuse is None and not v.missing

    impure = [i for i, e in enumerate(before) if not _trivial(prover, e) and not is_pure(e)]
    last = impure[-1] if impure else -1
    if not is_pure(node.test):  # the bound test may change what a pure part before it reads
        last = len(before) - 1
    bind = [e for i, e in enumerate(before) if i <= last and not _trivial(prover, e)]
    # the trace-time checks of the head run before the statement: an attribute they read could be
    # changed by a call the statement makes before the ternary
    heads = [prover.checks.get(m) for m in verdict.missing]
    if impure and any(h not in (None, SHAPES, EAGER_ONLY, GRAD_OFF) and _reads_attribute(prover, h)
                      for h in heads):
        return NoFix("a trace-time check reads an attribute that a call before the ternary could change")
    small = site.small.visit(_Replace({id(node): replacement}))
    bound = _Bound(prover, site, bind, replacement)
    sp = build(prover, site.line, verdict, [line(small)], shape_form=bound.form)
    if sp.node is None:
        return NoFix("no compile-only form fits")
    note = ""
    if sp.shapes_checked and bind:
        note = f"; {', '.join(f'`{code(e)}`' for e in bind)} evaluated first, in order, as before the ternary"
    title = (f"fix: torch.where{proved_note(verdict)} under torch.compile only (eager runs the line unchanged)"
             f"{checked_note(sp)}{note}")
    safety = Safety.UNSAFE if sp.unchecked else Safety.SAFE
    if sp.unchecked:
        title = f"{title}; unsafe: {'; '.join(sp.unchecked)}"
    return Fix(sp.node, safety, title, prover.imports, node=site.line)


class _Bound:
    """The shape form of a nested ternary: the parts evaluated before it, the test and the branch
    values bound in order, then the statement with torch.where, or the ternary when shapes differ."""

    def __init__(self, prover: Prover, site: Site, bind: list, replacement: cst.Call) -> None:
        self.prover, self.site, self.bind = prover, site, bind
        self.cond, self.a, self.b = (arg.value for arg in replacement.args)
        small = site.small
        target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 \
            else getattr(small, "target", None)
        self.stem = target.value if isinstance(target, cst.Name) else "out"

    def form(self, _prover, _stmts, taken, stmt, missing) -> list:
        prover, stem, node = self.prover, self.stem, self.site.node
        body: list = []
        table: dict[int, cst.BaseExpression] = {}
        for e in self.bind:
            n = fresh(taken, f"{stem}_part")
            body.append(assign(n, strip_parens(e)))
            table[id(e)] = cst.Name(n)
        missing.extend(m for m in one_sided(prover, stmt, self.a, self.b) if m not in missing)
        cond_name = fresh(taken, "cond")
        body.append(assign(cond_name, self.cond))
        names = self._bind_values(body, taken)
        x, y = names
        checks = [f"isinstance({n}, {code(prover.torch('torch.Tensor'))})"
                  for n, v in zip(names, (self.a, self.b)) if not prover.is_tensor(v)]
        checks.append(f"{x}.shape == {y}.shape and {x}.dtype == {y}.dtype")
        parens = dict(lpar=node.lpar, rpar=node.rpar)
        w = prover.call("torch.where", cst.Name(cond_name), cst.Name(x), cst.Name(y)).with_changes(**parens)
        f = cst.parse_expression(f"{x} if {cond_name} else {y}").with_changes(**parens)
        on_where = self.site.small.visit(_Replace({**table, id(node): w}))
        on_fallback = self.site.small.visit(_Replace({**table, id(node): f}))
        test = cst.parse_expression(conjunction(list(dict.fromkeys(checks))))
        body.append(cst.If(test=test, body=cst.IndentedBlock(body=[line(on_where)]),
                           orelse=cst.Else(body=cst.IndentedBlock(body=[line(on_fallback)]))))
        return body

    def _bind_values(self, body: list, taken: set[str]) -> list[str]:
        """Names of the branch values: a name as is, else a fresh one bound in `body`."""
        names = []
        for side, v in (("if", self.a), ("else", self.b)):
            if isinstance(v, cst.Name):
                names.append(v.value)
                continue
            n = fresh(taken, f"{self.stem}_{side}")
            body.append(assign(n, v))
            names.append(n)
        return names
