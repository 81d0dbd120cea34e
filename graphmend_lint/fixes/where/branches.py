"""The arms of a tensor `if` and what they hold: side effects, logging calls left to eager, a
`return` after the `if` that is its `else`, comments to keep."""
from __future__ import annotations

import libcst as cst

from ...analysis import context
from ..syntax import body_statements, code
from .after import After
from .proof import Prover
from .verdict import EAGER_ONLY, Verdict


def arms(node: cst.If) -> list[tuple[cst.BaseExpression | None, cst.BaseSuite]]:
    """(test, body) of each arm of an `if`/`elif`/`else` chain; the `else` arm has no test."""
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
    return any(isinstance(st, cst.Raise) for _, body in arms(node) for st in body_statements(body))


def refusal_of(stmt: cst.CSTNode) -> str:
    """Why torch.where cannot stand for a branch holding `stmt`."""
    if getattr(stmt, "leading_lines", None):  # its comment lines are not the statement (rfdetr's matcher)
        stmt = stmt.with_changes(leading_lines=[])
    text = code(stmt).strip().splitlines()[0]
    if isinstance(stmt, (cst.Expr, cst.AugAssign)) or isinstance(stmt, cst.Assign) and not all(
            isinstance(t.target, cst.Name) for t in stmt.targets):
        return f"the branch has side effects (`{text}`): torch.where would run both branches"
    return f"the branch holds a statement torch.where cannot express (`{text}`)"


def comments(node: cst.If) -> list[cst.EmptyLine]:
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


def _tail(block: cst.IndentedBlock, i: int) -> list | None:
    """The lines after `block.body[i]` up to and including the first `return <value>`, when every line
    before it holds only assignments to one name each (`y = h + 1; z = y.relu()`); else None. (A log
    call there is not taken: GM202 defers it to after the graph under compile, which a compiled
    path returning before it would drop.)"""
    out = []
    for st in block.body[i + 1:]:
        if not isinstance(st, cst.SimpleStatementLine):
            return None
        out.append(st)
        if len(st.body) == 1 and isinstance(st.body[0], cst.Return):
            return out if st.body[0].value is not None else None
        if not all(isinstance(s, cst.Assign) and len(s.targets) == 1 and isinstance(s.targets[0].target, cst.Name)
                   for s in st.body):
            return None
    return None


def return_after(prover: Prover, v: Verdict, node: cst.If) -> list:
    """`if c: return a` followed by `return b`, maybe after assignments (`y = h + 1`, ...): those lines
    are the `else` arm, the assignments its setups (hoisted, so each must be total, and private to
    that arm: `_Plan._setups` checks it). The compiled form computes them and returns
    `torch.where(c, a, b)`; eager keeps every statement (the fix is compile-only). Not inside a
    `try` (its `except`/`finally` would see the hoisted names bound), nor for `global` names.
    `prover.tail` holds the lines taken (their values are proved inlined, `Prover.inlined`)."""
    last = arms(node)[-1]
    block = prover.rule.parent(node)
    if last[0] is None or not isinstance(block, cst.IndentedBlock):
        return []
    if not all((b := body_statements(body)) and isinstance(b[-1], cst.Return) for _, body in arms(node)):
        return []
    i = next(k for k, st in enumerate(block.body) if st is node)
    tail = _tail(block, i)
    if tail is None:
        return []
    if len(tail) > 1:
        for _, up in context.ancestors(node, prover.rule.parent):
            if up is prover.func:
                break
            if isinstance(up, (cst.Try, cst.TryStar)):
                v.refuse = ("the assignments after the early return are inside a `try`: its handlers would see "
                            "their names bound on both paths")
                return []
        bound = {s.targets[0].target.value for st in tail[:-1] for s in st.body}
        declared = bound & context.declared_names(prover.func)
        if declared:
            v.refuse = f"the assignments after the early return bind `global`/`nonlocal` names ({', '.join(sorted(declared))})"
            return []
    v.missing.append(RETURN_AFTER)
    prover.checks[RETURN_AFTER] = EAGER_ONLY
    prover.tail = tail
    return [(None, cst.IndentedBlock(body=tail))]


LOGGED_IN_EAGER = "runs in eager only, as GM2xx guards it"


def own_guard(prover: Prover, stmt: cst.CSTNode) -> bool:
    """`stmt` is an `if` that never runs under compile and has no `else` (the GM2xx guard
    `if not torch.compiler.is_compiling(): ...`, or a test short-circuited by it): a fix treats it as
    absent under compile, so fixes compose."""
    return isinstance(stmt, cst.If) and stmt.orelse is None and prover.ff.compile_const(stmt.test, strict=True) is False


def without_logging(prover: Prover, v: Verdict, stmts: list) -> list:
    """A branch's statements less its print/logging/warnings calls: under compile those do not run
    (GM2xx guards them the same way), so they are left out of the compiled form. Eager keeps them:
    the fix becomes compile-only. State changes (`self.count += 1`) stay and are refused later."""
    showing = After(prover.rule, (0, 0), prover.func).showing
    kept = []
    for s in stmts:
        if own_guard(prover, s):  # `if not torch.compiler.is_compiling(): ...`: absent under compile
            why = f"`if {code(s.test)}: ...` {LOGGED_IN_EAGER}"
            if why not in v.missing:
                v.missing.append(why)
                v.logged.append(why)
            prover.checks[why] = EAGER_ONLY
            continue
        call = s.value if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) else None
        shown = showing(call) if call is not None else None
        if shown is None or shown[0]:  # not shown, or only formatted into text
            kept.append(s)
            continue
        why = f"`{code(call.func)}(...)` {LOGGED_IN_EAGER}"
        if why not in v.missing:
            v.missing.append(why)
            v.logged.append(why)
        prover.checks[why] = EAGER_ONLY
    return kept
