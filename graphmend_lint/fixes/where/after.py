"""What the code after a statement does with a name: modifies it in place, or shows it (print,
logging, formatting, `.grad_fn`), where torch.where's new tensor would differ from the branch's."""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ... import fastwalk
from ...analysis import context, effects
from ..syntax import code, literal_int
from .verdict import Gap, GapKind

# Builtins whose output shows a tensor's grad_fn (`tensor(..., grad_fn=<WhereBackward0>)`).
_SHOWING = {"print": "printed", "str": "formatted", "repr": "formatted", "format": "formatted"}


class After(cst.CSTVisitor):
    """Names mutated in place, or observed (printed, logged, formatted, `.grad_fn` read),
    textually after a position in one function."""

    def __init__(self, rule, after: tuple[int, int], func: cst.FunctionDef | None = None) -> None:
        self.rule, self.after, self.func = rule, after, func
        self.mutated: dict[str, str] = {}
        self.observed: dict[str, str] = {}  # name -> "printed later (`print(...)`)"
        self.grad_fn_read: set[str] = set()  # names first observed by reading their `.grad_fn`
        self.escaped: dict[str, str] = {}  # name -> how its very object leaves the function (`return h`)
        self.node: cst.CSTNode | None = None  # the statement (after_of sets it)

    def _observe(self, node: cst.BaseExpression, how: str) -> None:
        for name in self._shown(node):
            self.observed.setdefault(name, how)

    def _shown(self, e: cst.BaseExpression) -> set[str]:
        """Names whose tensor object itself is shown when `e` is printed (`h`, `(h, x)`, `f"{h}"`);
        not `h.shape` or `h.sum()`, which show the same either way."""
        if isinstance(e, cst.Name):
            return {e.value}
        parts: list = []
        if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
            parts = [el.value for el in e.elements]
        elif isinstance(e, cst.Dict):
            parts = [x for el in e.elements for x in ((el.key, el.value) if isinstance(el, cst.DictElement) else (el.value,))]
        elif isinstance(e, cst.IfExp):
            parts = [e.body, e.orelse]
        elif isinstance(e, cst.BooleanOperation):
            parts = [e.left, e.right]
        elif isinstance(e, cst.FormattedString):
            parts = [p.expression for p in e.parts if isinstance(p, cst.FormattedStringExpression)]
        elif isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Modulo):
            parts = [e.right]  # "%s" % h
        elif isinstance(e, cst.Call):
            f = e.func
            method = isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value not in ("self", "cls")
            if not method and not (self.rule.facts.bindings.qualify(f) or "").startswith("torch"):
                parts = [a.value for a in e.args]  # a user function may show its argument
        return set().union(set(), *(self._shown(x) for x in parts))

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        if self._late(node):
            self._observe(node.expression, "formatted later (in an f-string)")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "grad_fn" and isinstance(node.value, cst.Name) and self._late(node):
            if node.value.value not in self.observed:
                self.observed[node.value.value] = f"read later as `{code(node)}`"
                self.grad_fn_read.add(node.value.value)

    def _late(self, node: cst.CSTNode) -> bool:
        pos = self.rule.get_metadata(PositionProvider, node, None)
        return pos is not None and (pos.start.line, pos.start.column) >= self.after

    def visit_Call(self, node: cst.Call) -> None:
        shown = self.shows(node) if self._late(node) else None
        if shown:
            for a in node.args:
                self._observe(a.value, shown)
        f = node.func
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and self._late(node):
            m = f.attr.value
            if m.endswith("_") and not m.startswith("_"):
                self.mutated.setdefault(f.value.value, code(node))
        for a in node.args:
            if a.keyword is not None and a.keyword.value == "out" and isinstance(a.value, cst.Name) and self._late(node):
                self.mutated.setdefault(a.value.value, code(node))

    def shows(self, call: cst.Call) -> str | None:
        """How `call` shows its arguments (print, logging, warnings, str/repr/format), or None."""
        shown = self.showing(call)
        return shown[1] if shown else None

    def showing(self, call: cst.Call) -> tuple[bool, str] | None:
        """(whether `call` only formats its arguments into text, outputting nothing; how it shows
        them), or None when it does not show them."""
        f = call.func
        b = self.rule.facts.bindings
        if isinstance(f, cst.Name) and f.value in _SHOWING:
            return _SHOWING[f.value] == "formatted", f"{_SHOWING[f.value]} later (`{f.value}(...)`)"
        qual = b.qualify(f) or ""
        if qual in effects.LOGGING_FUNCS or qual in effects.WARN_FUNCS:
            return False, f"{'logged' if qual.startswith('logging') else 'warned about'} later (`{code(f)}(...)`)"
        if isinstance(f, cst.Attribute):
            m = f.attr.value
            if m == "format" and isinstance(f.value, (cst.SimpleString, cst.ConcatenatedString)):
                return True, "formatted later (`str.format(...)`)"
            # only on a known logger, as GM202 reports it: `x.info(...)` of any other object may do
            # anything (and `.log` is also a tensor method)
            if m in effects.LOGGER_METHODS and self.func is not None and effects.LoggerFinder(
                    self.rule.facts).is_logger(f.value, self.func):
                return False, f"logged later (`{code(f)}(...)`)"
        return None

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        t = node.target.value if isinstance(node.target, cst.Subscript) else node.target
        if isinstance(t, cst.Name) and self._late(node):
            self.mutated.setdefault(t.value, code(node).strip())

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        t = node.target
        if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and self._late(node):
            self.mutated.setdefault(t.value.value, code(t) + " = ...")

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(isinstance(t.target, (cst.Attribute, cst.Subscript)) for t in node.targets) and self._late(node):
            self._escape(node.value, "stored later (`" + code(node.targets[0].target) + " = ...`)")

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and self._late(node):
            self._escape(node.value, "returned")

    def visit_Yield(self, node: cst.Yield) -> None:
        if isinstance(node.value, cst.BaseExpression) and self._late(node):
            self._escape(node.value, "yielded")

    def _escape(self, e: cst.BaseExpression, how: str) -> None:
        parts = [el.value for el in e.elements] if isinstance(e, (cst.Tuple, cst.List)) else [e]
        for p in parts:
            name = alias_of(p)
            if name is not None:
                self.escaped.setdefault(name, how)

    def callers_object(self, name: str) -> bool:
        """`name` is a parameter of the function (not self/cls) that nothing binds before the
        statement: its tensor there is the very object the caller handed in."""
        if self.func is None or self.node is None or name in ("self", "cls"):
            return False
        return name in self.rule.facts.function(self.func).params and \
            not context.binds_before(self.node, name, self.rule.parent)


def later_than(rule, node: cst.CSTNode, func: cst.FunctionDef) -> tuple[int, int]:
    """Where the code that runs after `node` starts: its end, or, inside a loop, the start of the
    outermost loop around it (the loop body before it runs again on the next iteration)."""
    pos = rule.get_metadata(PositionProvider, node)
    start = (pos.end.line, pos.end.column)
    for _, up in context.ancestors(node, rule.parent):
        if up is func:
            break
        if isinstance(up, (cst.For, cst.While)):
            p = rule.get_metadata(PositionProvider, up)
            start = (p.start.line, p.start.column)
    return start


def after_of(rule, node: cst.CSTNode, func: cst.FunctionDef) -> After:
    """What `func` does to names in the code that runs after `node` (`later_than`)."""
    found = After(rule, later_than(rule, node, func), func)
    found.node = node
    fastwalk.visit(func, found)
    return found


def alias_of(expr: cst.BaseExpression) -> str | None:
    """The name whose very tensor object `expr` is (`x`, `(x)`, `x.contiguous()`), else None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value == "contiguous":
        return alias_of(expr.func.value)
    if isinstance(expr, cst.Subscript) and all(
            isinstance(el.slice, cst.Slice) or literal_int(el.slice.value) is not None for el in expr.slice):
        return alias_of(expr.value)  # basic indexing: a view, it shares the storage
    return None


def rebind_proofs(after: After, name: str, sources: set[str], check_name: bool = True) -> list[Gap]:
    """Missing proofs when `name` becomes a new `torch.where` tensor where it was one of the branch
    values, some of them the very tensors `sources` (tests/fuzz_regressions/GM101_1.py, GM101_3.py)."""
    missing = []
    if name in after.observed:
        kind = GapKind.GRAD_FN_READ if name in after.grad_fn_read else GapKind.SHOWN
        missing.append(Gap(f"`{name}` is {after.observed[name]}: its grad_fn would show WhereBackward0 "
                           "instead of the branch's", kind))
    if check_name and name in after.mutated:
        missing.append(Gap(f"`{name}` is modified in place later (`{after.mutated[name]}`): the branch kept the "
                           "very same tensor object, torch.where makes a new one", GapKind.MUTATED))
    for src in sorted(sources - {name}):
        if src in after.mutated:
            missing.append(Gap(f"`{name}` is the very tensor `{src}` when that branch runs, and `{src}` is modified "
                               f"in place later (`{after.mutated[src]}`): the change reached `{name}` through the "
                               "branch, not through the new tensor torch.where makes", GapKind.MUTATED))
    for src in sorted(sources | {name}):
        if name in after.escaped and after.callers_object(src):
            missing.append(Gap(f"`{name}` is {after.escaped[name]} and may be the very tensor the caller passed as "
                               f"`{src}`: a caller that modifies one of them in place changes the other too, "
                               "not the new tensor torch.where makes", GapKind.MUTATED))
            break
    if after.func is not None and after.mutated:
        roots = {name} | sources
        for other in sorted(aliases(after.func, roots) - roots):
            if other in after.mutated:
                missing.append(Gap(f"`{other}` may be the very tensor `{name}` kept by a branch, or share its storage "
                                   f"(a view, an unpacked chunk or row), and `{other}` is modified in place later "
                                   f"(`{after.mutated[other]}`): the change reached `{name}` through that alias, not "
                                   "the new tensor torch.where makes", GapKind.MUTATED))
                break
    return missing


# Methods whose result may share the receiver's storage (a view, or the tensor itself).
VIEW_METHODS = frozenset({"chunk", "split", "unbind", "tensor_split", "view", "view_as", "reshape", "reshape_as",
                          "transpose", "permute", "t", "expand", "expand_as", "narrow", "select", "squeeze",
                          "unsqueeze", "flatten", "unflatten", "movedim", "diagonal", "detach", "unfold",
                          "swapaxes", "swapdims", "as_strided", "split_with_sizes", "hsplit", "vsplit"})


def view_source(expr: cst.BaseExpression) -> str | None:
    """The name whose storage `expr` may share: `alias_of`, or a chain of view methods on it
    (`x.chunk(2)`, `x.view(n, -1).transpose(0, 1)`)."""
    got = alias_of(expr)
    if got is None and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in VIEW_METHODS:
        return view_source(expr.func.value)
    return got


class _Binds(cst.CSTVisitor):
    """(target, name whose tensor's storage the value may share) of a function's `a = b` statements,
    unpackings of views (`a, b = x.chunk(2)`) and loops over a tensor or its views (`for h, w in
    shapes`: each row is a view)."""

    def __init__(self, func: cst.FunctionDef) -> None:
        super().__init__()
        self.func, self.pairs = func, []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.func

    def visit_Assign(self, node: cst.Assign) -> None:
        src = view_source(node.value)
        if src is not None:
            for t in node.targets:
                self.pairs.extend((n, src) for n in context.target_names(t.target))

    def visit_For(self, node: cst.For) -> None:
        src = view_source(node.iter)
        if src is not None:
            self.pairs.extend((n, src) for n in context.target_names(node.target))


def aliases(func: cst.FunctionDef, roots: set[str]) -> set[str]:
    """`roots` and the names that some `a = b` (a view or the same object) in `func` may bind to one of
    their tensors, either way, to a fixpoint (`keep = h` before an `if` that rebinds `h`: fuzz)."""
    v = _Binds(func)
    fastwalk.visit(func, v)
    out = set(roots)
    changed = True
    while changed:
        changed = False
        for a, b in v.pairs:
            if (a in out) != (b in out):
                out |= {a, b}
                changed = True
    return out
