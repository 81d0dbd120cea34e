"""GM101: turn a tensor-valued `if` statement into `torch.where` assignments or a `torch.where` return.

`plan(prover, node)` -> (Verdict, replacement or None). Accepted shapes:
  - every arm assigns names (`y = ...`), optionally after setup assignments whose names are not
    used anywhere else (they are hoisted); a name missing from an arm keeps its prior value;
  - every arm ends in `return <value>` (an `else` is required);
  - a static leading conjunct (`h.dtype == torch.float16 and ...`) of an `if` without `else`
    stays a Python `if` around the fix.
"""
from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider

from ..analysis import context
from . import effects, where
from .where import Verdict, code


def arms(node: cst.If) -> list[tuple[cst.BaseExpression | None, cst.BaseSuite]]:
    out: list = []
    cur: cst.If | cst.Else | None = node
    while cur is not None:
        if isinstance(cur, cst.If):
            out.append((cur.test, cur.body))
            cur = cur.orelse
        else:
            out.append((None, cur.body))
            cur = None
    return out


def raise_only(node: cst.If) -> bool:
    """Some arm raises: a validation check, reported by GM3xx (not a branch choice)."""
    return any(isinstance(st, cst.Raise) for _, body in arms(node) for st in where.body_statements(body))


def _side_effect(stmt: cst.CSTNode) -> str:
    text = code(stmt).strip().splitlines()[0]
    if isinstance(stmt, (cst.Expr, cst.AugAssign)) or isinstance(stmt, cst.Assign) and not all(
            isinstance(t.target, cst.Name) for t in stmt.targets):
        return f"the branch has side effects (`{text}`): torch.where would run both branches"
    return f"the branch holds a statement torch.where cannot express (`{text}`)"


# Builtins whose output shows a tensor's grad_fn (`tensor(..., grad_fn=<WhereBackward0>)`).
_SHOWING = {"print": "printed", "str": "formatted", "repr": "formatted", "format": "formatted"}


class _After(cst.CSTVisitor):
    """Names mutated in place, or observed (printed, logged, formatted, `.grad_fn` read),
    textually after a position in one function."""

    def __init__(self, rule, after: tuple[int, int], func: cst.FunctionDef | None = None) -> None:
        self.rule, self.after, self.func = rule, after, func
        self.mutated: dict[str, str] = {}
        self.observed: dict[str, str] = {}  # name -> "printed later (`print(...)`)"

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
            self.observed.setdefault(node.value.value, f"read later as `{code(node)}`")

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
        f = call.func
        b = self.rule.facts.bindings
        if isinstance(f, cst.Name) and f.value in _SHOWING:
            return f"{_SHOWING[f.value]} later (`{f.value}(...)`)"
        qual = b.qualify(f) or ""
        if qual in effects.LOGGING_FUNCS or qual in effects.WARN_FUNCS:
            return f"{'logged' if qual.startswith('logging') else 'warned about'} later (`{code(f)}(...)`)"
        if isinstance(f, cst.Attribute):
            m = f.attr.value
            if m == "format" and isinstance(f.value, (cst.SimpleString, cst.ConcatenatedString)):
                return "formatted later (`str.format(...)`)"
            # `.log` is also a tensor method: only on a known logger
            if m in effects.LOGGER_METHODS and (m != "log" or self.func is not None and effects.LoggerFinder(
                    self.rule).is_logger(f.value, self.func)):
                return f"logged later (`{code(f)}(...)`)"
        return None

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        t = node.target.value if isinstance(node.target, cst.Subscript) else node.target
        if isinstance(t, cst.Name) and self._late(node):
            self.mutated.setdefault(t.value, code(node).strip())

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        t = node.target
        if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and self._late(node):
            self.mutated.setdefault(t.value.value, code(t) + " = ...")


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


def alias_of(expr: cst.BaseExpression) -> str | None:
    """The name whose very tensor object `expr` is (`x`, `(x)`, `x.contiguous()`), else None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value == "contiguous":
        return alias_of(expr.func.value)
    if isinstance(expr, cst.Subscript) and all(
            isinstance(el.slice, cst.Slice) or where._literal_int(el.slice.value) is not None for el in expr.slice):
        return alias_of(expr.value)  # basic indexing: a view, it shares the storage
    return None


def rebind_proofs(after: _After, name: str, sources: set[str], check_name: bool = True) -> list[str]:
    """Missing proofs when `name` becomes a new `torch.where` tensor where it was one of the branch
    values, some of them the very tensors `sources` (tests/fuzz_regressions/GM101_1.py, GM101_3.py)."""
    missing = []
    if name in after.observed:
        missing.append(f"`{name}` is {after.observed[name]}: its grad_fn would show WhereBackward0 "
                       "instead of the branch's")
    if check_name and name in after.mutated:
        missing.append(f"`{name}` is modified in place later (`{after.mutated[name]}`): the branch kept the very "
                       "same tensor object, torch.where makes a new one")
    for src in sorted(sources - {name}):
        if src in after.mutated:
            missing.append(f"`{name}` is the very tensor `{src}` when that branch runs, and `{src}` is modified in "
                           f"place later (`{after.mutated[src]}`): the change reached `{name}` through the branch, "
                           "not through the new tensor torch.where makes")
    return missing


def _statements(block: cst.BaseSuite) -> list:
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=block.body)]
    return list(block.body)


def _effect_seq(stmts: list, name: str) -> str | None:
    for stmt in stmts:
        effect = _effect(stmt, name)
        if effect:
            return effect
    return None


def _effect(stmt: cst.CSTNode, name: str) -> str | None:
    """What running `stmt` does to `name` first: "read", "kill" (rebound or flow ends), or None."""
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                if name in where.names_in(small.value):
                    return "read"
                for t in small.targets:
                    if isinstance(t.target, cst.Name) and t.target.value == name:
                        return "kill"
                    if name in where.names_in(t.target):
                        return "read"
            elif isinstance(small, (cst.Return, cst.Raise)):
                return "read" if name in where.names_in(small) else "kill"
            elif name in where.names_in(small):
                return "read"
        return None
    if isinstance(stmt, cst.If):
        if name in where.names_in(stmt.test):
            return "read"
        body = _effect_seq(_statements(stmt.body), name)
        orelse = None
        if isinstance(stmt.orelse, cst.If):
            orelse = _effect(stmt.orelse, name)
        elif isinstance(stmt.orelse, cst.Else):
            orelse = _effect_seq(_statements(stmt.orelse.body), name)
        if "read" in (body, orelse):
            return "read"
        return "kill" if body == orelse == "kill" else None
    return "read" if name in where.names_in(stmt) else None  # loops, with, try: conservative


def live_after(rule, node: cst.If, name: str) -> bool:
    """Can the value of `name` after `node` be read later in the function?"""
    child: cst.CSTNode = node
    for up in (u for _, u in _ancestors(rule, node)):
        if isinstance(up, cst.FunctionDef):
            return False
        if isinstance(up, (cst.For, cst.While)):
            return name in where.names_in(up)
        if isinstance(up, cst.IndentedBlock):
            stmts = list(up.body)
            effect = _effect_seq(stmts[stmts.index(child) + 1:], name) if child in stmts else "read"
            if effect:
                return effect == "read"
        child = up
    return False


def _bound_before(rule, node: cst.If, func: cst.FunctionDef, name: str) -> bool:
    ff = rule.facts.function(func)
    if name in ff.params:
        return True
    child: cst.CSTNode = node
    for up in (u for _, u in _ancestors(rule, node)):
        if isinstance(up, cst.IndentedBlock):
            for stmt in up.body:
                if stmt is child:
                    break
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        targets = []
                        if isinstance(small, cst.Assign):
                            targets = [t.target for t in small.targets]
                        elif isinstance(small, cst.AnnAssign) and small.value is not None:
                            targets = [small.target]
                        for t in targets:
                            if name in where.names_in(t) and not isinstance(t, (cst.Subscript, cst.Attribute)):
                                return True
        if up is func:
            return False
        child = up
    return False


def _is_none_test(test: cst.BaseExpression, name: str, negated: bool) -> bool:
    """`test` proves `name is None` when it holds (negated: when it fails, as `name is not None or ...`)."""
    op = cst.Or if negated else cst.And
    for part in where.flatten(test, op):
        if isinstance(part, cst.Comparison) and len(part.comparisons) == 1 and \
                isinstance(part.left, cst.Name) and part.left.value == name:
            cmp = part.comparisons[0]
            if isinstance(cmp.comparator, cst.Name) and cmp.comparator.value == "None" and \
                    isinstance(cmp.operator, cst.IsNot if negated else cst.Is):
                return True
    return False


def none_here(rule, node: cst.CSTNode, name: str) -> bool:
    """An enclosing test proves `name is None` at `node` (`if name is None and ...:` around it), or the
    statement before it in its block is `name = None`."""
    for child, up in _ancestors(rule, node):
        if isinstance(up, cst.FunctionDef):
            return False
        if isinstance(up, cst.If) and child is up.body and _is_none_test(up.test, name, False):
            return True
        if isinstance(up, cst.If) and child is up.orelse and _is_none_test(up.test, name, True):
            return True
        if isinstance(up, cst.IndentedBlock) and child in up.body:
            before = list(up.body)[:list(up.body).index(child)]
            for stmt in reversed(before):
                if name in where.names_in(stmt):
                    small = stmt.body[-1] if isinstance(stmt, cst.SimpleStatementLine) else None
                    if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                            isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name:
                        return isinstance(small.value, cst.Name) and small.value.value == "None"
                    if _rebinds(stmt, name):
                        return False
                    break
    return False


def _rebinds(stmt: cst.CSTNode, name: str) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            if name in where.names_in(n.target):
                found.append(n)

    stmt.visit(V())
    return bool(found)


def _ancestors(rule, node):
    return context.ancestors(node, rule.parent)


def _pairs(prover: where.Prover, v: Verdict, values: list, conds: list) -> list:
    """Prove every value against the first; with one condition, apply the double-where guard."""
    single = len(values) == 2 and len(conds) == 1
    for other in values[1:]:
        pv = prover.pair(values[0], other, can_guard=single)
        v.add(pv)
        if single and pv.guard:
            base, on_true, on_false = pv.guard
            values = [where.guarded(prover, values[0], base, conds[0], True) if on_true else values[0],
                      where.guarded(prover, values[1], base, conds[0], False) if on_false else values[1]]
    if single:
        values = [where.index_guarded(prover, values[0], conds[0], True),
                  where.index_guarded(prover, values[1], conds[0], False)]
    return values


def _line(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[small])


def _comments(node: cst.If) -> list[cst.EmptyLine]:
    """Comments inside the branches, as lines to keep above the rewritten statement."""
    out: list[cst.EmptyLine] = []
    for _, body in arms(node):
        if isinstance(body, cst.IndentedBlock):
            if body.header.comment is not None:
                out.append(cst.EmptyLine(comment=body.header.comment))
            for stmt in body.body:
                out.extend(ln for ln in stmt.leading_lines if ln.comment is not None)
                trailing = getattr(stmt, "trailing_whitespace", None)
                if trailing is not None and trailing.comment is not None:
                    out.append(cst.EmptyLine(comment=trailing.comment))
    return [ln.with_changes(indent=True, whitespace=cst.SimpleWhitespace("")) for ln in out]


RETURN_AFTER = "the `return` after the `if` stays the eager path"


def _return_after(prover: where.Prover, v: Verdict, node: cst.If) -> list:
    """`if c: return a` followed by `return b`: the `return b` is the `else` arm. The compiled form
    returns `torch.where(c, a, b)`; eager keeps both statements (the fix is compile-only)."""
    last = arms(node)[-1]
    block = prover.rule.parent(node)
    if last[0] is None or not isinstance(block, cst.IndentedBlock):
        return []
    if not all((b := where.body_statements(body)) and isinstance(b[-1], cst.Return) for _, body in arms(node)):
        return []
    i = next(k for k, st in enumerate(block.body) if st is node)
    nxt = block.body[i + 1] if i + 1 < len(block.body) else None
    if not (isinstance(nxt, cst.SimpleStatementLine) and len(nxt.body) == 1 and isinstance(nxt.body[0], cst.Return)
            and nxt.body[0].value is not None):
        return []
    v.missing.append(RETURN_AFTER)
    prover.checks[RETURN_AFTER] = where.EAGER_ONLY
    return [(None, cst.IndentedBlock(body=[nxt]))]


LOGGED_IN_EAGER = "runs in eager only, as GM2xx guards it"


def _without_logging(prover: where.Prover, v: Verdict, stmts: list) -> list:
    """A branch's statements less its print/logging/warnings calls: under compile those do not run
    (GM2xx guards them the same way), so they are left out of the compiled form. Eager keeps them:
    the fix becomes compile-only. State changes (`self.count += 1`) stay and are refused later."""
    shows = _After(prover.rule, (0, 0), prover.func).shows
    kept = []
    for s in stmts:
        call = s.value if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) else None
        how = shows(call) if call is not None else None
        if how is None or how.startswith("formatted"):
            kept.append(s)
            continue
        why = f"`{code(call.func)}(...)` {LOGGED_IN_EAGER}"
        if why not in v.missing:
            v.missing.append(why)
        prover.checks[why] = where.EAGER_ONLY
    return kept


def plan(prover: where.Prover, node: cst.If) -> tuple[Verdict, list | cst.If | None]:
    rule, ff = prover.rule, prover.ff
    v = Verdict()
    all_arms = arms(node) + _return_after(prover, v, node)
    # a static leading conjunct of the first test stays a Python `if`
    parts = where.flatten(node.test, cst.And)
    n_static = 0
    while n_static < len(parts) and ff.value(parts[n_static]).kind == "static":
        n_static += 1
    prefix = parts[:n_static]
    if prefix and len(all_arms) > 1:
        v.refuse = "a static test joined by `and` to a tensor test, with an `else`"
        return v, None
    if any(ff.value(p).kind == "static" for p in parts[n_static:]):
        v.refuse = "a static test after a tensor test in `and`"
        return v, None
    tensor_part = parts[n_static:]
    conds: list[cst.BaseExpression] = []
    tests = [tensor_part[0] if len(tensor_part) == 1 else node.test] + [t for t, _ in all_arms[1:] if t is not None]
    for i, test in enumerate(tests):
        if i == 0 and len(tensor_part) > 1:
            built = None
            for j, p in enumerate(tensor_part):
                c, pv = prover.condition(p, always=j == 0)
                v.add(pv)
                if c is None:
                    return v, None
                built = c if built is None else prover.call("torch.logical_and", built, c)
            conds.append(built)
            continue
        if not where.breaks_on(ff, test):
            v.refuse = f"`elif {code(test)}` is a static test among tensor tests"
            return v, None
        c, cv = prover.condition(test, always=i == 0)
        v.add(cv)
        if c is None:
            return v, None
        conds.append(c)

    # each arm: setup assignments, then results (assignments) or a final return
    bodies = [_without_logging(prover, v, where.body_statements(body)) for _, body in all_arms]
    if not any(bodies):
        v.refuse = ("the branches hold only side effects that GM2xx guards (print, logging, warnings); "
                    "guard the whole `if` with `not torch.compiler.is_compiling()` to keep it out of the graph")
        return v, None
    has_else = all_arms[-1][0] is None
    returns = [bool(b) and isinstance(b[-1], cst.Return) for b in bodies]
    if any(returns) and not (all(returns) and has_else):
        v.refuse = "`return` in some branches only (torch.where needs a value from every branch)"
        return v, None
    for stmts in bodies:
        for s in stmts[:-1] if all(returns) else stmts:
            if not (isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name)):
                v.refuse = _side_effect(s)
                return v, None
    after = _After(rule, later_than(rule, node, prover.func), prover.func)
    prover.func.visit(after)
    assigned = [[(s.targets[0].target.value, s.value) for s in stmts if isinstance(s, cst.Assign)] for stmts in bodies]
    if all(returns):
        results: list[str] = []
    else:
        results = list(dict.fromkeys(
            n for arm in assigned for n, _ in arm if live_after(rule, node, n) or _bound_before(rule, node, prover.func, n)))
        if not results:
            v.refuse = "the branches assign nothing that is used later"
            return v, None
    # setups: hoisted, so each name must be private to its arm and come before the results
    setups: list[cst.Assign] = []
    test_names = set().union(*(where.names_in(t) for t, _ in all_arms if t is not None))
    for k, (stmts, arm) in enumerate(zip(bodies, assigned)):
        seen_result = False
        others = set().union(set(), *(where.names_in(s) for j, b in enumerate(bodies) if j != k for s in b))
        for s, (name, value) in zip([s for s in stmts if isinstance(s, cst.Assign)], arm):
            if name in results:
                seen_result = True
                continue
            if seen_result:
                v.refuse = f"setup `{name} = ...` follows a result assignment in its branch"
                return v, None
            if name in others or name in test_names or live_after(rule, node, name):
                v.refuse = f"`{name}` is set in one branch and used elsewhere, so it cannot be hoisted"
                return v, None
            v.add(prover.total(value))
            setups.append(s)
    if v.refuse:
        return v, None
    setup_names = [s.targets[0].target.value for s in setups]
    prover.local = {s.targets[0].target.value: s.value for s in setups if setup_names.count(s.targets[0].target.value) == 1}
    for arm in assigned:
        names = [n for n, _ in arm if n in results]
        if len(names) != len(set(names)):
            v.refuse = "a name is assigned twice in one branch"
            return v, None
        for n, value in arm:
            if n in results and (where.names_in(value) & set(results)) - {n}:
                v.refuse = f"`{n} = {code(value)}` reads another name the branches assign"
                return v, None

    def choose(values: list[cst.BaseExpression]) -> cst.BaseExpression:
        out = values[-1]
        for c, val in zip(reversed(conds), reversed(values[:-1])):
            out = prover.call("torch.where", c, val, out)
        return out

    new: list[cst.BaseStatement] = [_line(s) for s in setups]
    if all(returns):
        rets = [b[-1].value for b in bodies]
        if any(r is None for r in rets):
            v.refuse = "a bare `return` (None) in a branch"
            return v, None
        tuples = all(isinstance(r, cst.Tuple) for r in rets)
        if tuples and len({len(r.elements) for r in rets}) == 1 and not any(
                e.star for r in rets for e in r.elements if hasattr(e, "star") and e.star):
            columns = list(zip(*[[e.value for e in r.elements] for r in rets]))
        elif any(isinstance(r, cst.Tuple) for r in rets):
            v.refuse = "the branches return tuples of different forms"
            return v, None
        else:
            columns = [tuple(rets)]
        outs = []
        for col in columns:
            outs.append(choose(_pairs(prover, v, list(col), conds)))
        if v.refuse:
            return v, None
        value = outs[0] if not tuples else cst.Tuple([cst.Element(o) for o in outs], lpar=[], rpar=[])
        new.append(_line(cst.Return(value)))
    else:
        for r in results:
            values = []
            for arm in assigned:
                got = [val for n, val in arm if n == r]
                values.append(got[0] if got else cst.Name(r))
            if not has_else:
                values.append(cst.Name(r))
            if any(isinstance(val, cst.Name) and val.value == r for val in values) and not _bound_before(rule, node, prover.func, r):
                v.refuse = f"`{r}` is not set in every branch and not provably bound before the `if`"
                return v, None
            if any(isinstance(val, cst.Name) and val.value == r for val in values) and none_here(rule, node, r):
                v.refuse = f"`{r}` is None here (a branch that does not set it keeps None), and torch.where needs tensors"
                return v, None
            sources = {a for a in map(alias_of, values) if a}
            values = _pairs(prover, v, values, conds)
            for why in rebind_proofs(after, r, sources):
                v.missing.append(why)
                if "grad_fn would show" in why and ".grad_fn`" not in why:  # printed, not read
                    prover.checks[why] = where.EAGER_ONLY
            new.append(_line(cst.Assign([cst.AssignTarget(cst.Name(r))], choose(values))))
        if len(results) > 1 and test_names & set(results):
            v.refuse = "the test reads a name the branches assign, and there are several results"
        if v.refuse:
            return v, None
    kept = _comments(node)
    if kept:
        first = len(setups)  # above the first rewritten assignment or return
        new[first] = new[first].with_changes(leading_lines=[*new[first].leading_lines, *kept])
    if prefix:
        test = prefix[0]
        for p in prefix[1:]:
            test = cst.BooleanOperation(test, cst.And(), p)
        return v, cst.If(test=where.strip_parens(test) if len(prefix) == 1 else test,
                         body=cst.IndentedBlock(body=new), leading_lines=node.leading_lines)
    new[0] = new[0].with_changes(leading_lines=[*node.leading_lines, *new[0].leading_lines])
    return v, new
