"""GM102/GM104: the torch.where fix of a tensor ternary `a if c else b` (short, compile-only or nested)."""
from __future__ import annotations

import libcst as cst

from ..build import line, sole_line
from ..fix import Fix, NoFix
from ..safety import Safety
from . import nested
from .after import after_of, alias_of, rebind_proofs
from .compiled import SHORT_FORM_IN_EAGER, build, checked_note, proved_note
from .proof import Prover
from .rewrite import guarded, index_guarded
from .verdict import EAGER_ONLY, Gap, GapKind, Verdict


def fix(rule, node: cst.IfExp, func: cst.FunctionDef) -> Fix | NoFix:
    """The fix of the ternary `node`: the compile-only form (compiled.EAGER_VERBATIM), safe when every
    missing proof is checked while tracing; where none fits, the unsafe torch.where in place."""
    prover = Prover(rule, node, func)
    cond, verdict = prover.condition(node.test)
    body, orelse = node.body, node.orelse
    if cond is not None:
        verdict.add(prover.pair(body, orelse, can_guard=True))
        if verdict.guard:
            name, on_true, on_false = verdict.guard
            body = guarded(prover, body, name, cond, True) if on_true else body
            orelse = guarded(prover, orelse, name, cond, False) if on_false else orelse
        # a tensor index is 0 where its branch is not taken (pair() took it on that condition)
        body, orelse = index_guarded(prover, body, cond, True), index_guarded(prover, orelse, cond, False)
    if verdict.refuse or cond is None:
        return NoFix(verdict.refuse)
    for gap in _rebind_proofs(rule, node, func):
        verdict.missing.append(gap.why)
        if gap.kind is GapKind.SHOWN:  # printed, not read
            prover.checks[gap.why] = EAGER_ONLY
    replacement = prover.call("torch.where", cond, body, orelse).with_changes(lpar=node.lpar, rpar=node.rpar)
    # compile-only even when proved exact: EAGER_VERBATIM in compiled.py (the measured eager cost)
    compiled = _compile_only(rule, node, func, prover, verdict, replacement)
    if isinstance(compiled, Fix):
        return compiled
    why = f" (no compile-only form: {compiled.reason})" if compiled.reason else ""
    missing = verdict.missing or [SHORT_FORM_IN_EAGER]
    return Fix(replacement, Safety.UNSAFE, f"unsafe fix with torch.where{proved_note(verdict)}: "
               f"{'; '.join(missing)}{why}", prover.imports)


def _compile_only(rule, node: cst.IfExp, func, prover: Prover, verdict: Verdict, replacement) -> Fix | NoFix:
    """`y = a if c else b` / `return a if c else b` on a line of its own: GM101's compile-only form,
    with the line kept for eager as the `else:` block; a ternary inside a larger expression of the
    statement: fixes/where/nested.py. A NoFix says why no compile-only form fits ("" unsaid)."""
    parent = rule.parent(node)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and \
            isinstance(parent.targets[0].target, cst.Name) and parent.value is node:
        small = cst.Assign(parent.targets, replacement)
    elif isinstance(parent, cst.Return) and parent.value is node:
        small = cst.Return(replacement)
    else:
        return nested.fix(rule, node, func, prover, verdict, replacement)
    stmt = sole_line(parent, rule.parent)
    if stmt is None:
        return NoFix("")
    sp = build(prover, stmt, verdict, [line(small)])
    if sp.node is None:
        return NoFix("")
    title = (f"fix: torch.where{proved_note(verdict)} under torch.compile only (eager runs the line unchanged)"
             f"{checked_note(sp)}")
    if sp.grad_only:
        title += f"; with gradients on, the line runs as before ({'; '.join(sp.grad_only)})"
    if sp.unchecked:
        title, safety = f"{title}; unsafe: {'; '.join(sp.unchecked)}", Safety.UNSAFE
    else:
        safety = Safety.SAFE
    return Fix(sp.node, safety, title, prover.imports, node=stmt)


def _rebind_proofs(rule, node: cst.IfExp, func: cst.FunctionDef) -> list[Gap]:
    """The ternary's value was one of its branch tensors (maybe the very object `x`); torch.where's
    is a new one with grad_fn WhereBackward0. Code after the statement must not tell them apart."""
    up = rule.parent(node)
    while up is not None and not isinstance(up, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        up = rule.parent(up)
    after = after_of(rule, up if up is not None else node, func)
    sources = {a for a in (alias_of(node.body), alias_of(node.orelse)) if a}
    missing = []
    parent = rule.parent(node)
    if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        for t in targets:
            if isinstance(t, cst.Name):
                missing += rebind_proofs(after, t.value, sources, check_name=bool(sources))
    elif isinstance(parent, cst.Arg) and isinstance(rule.parent(parent), cst.Call):
        shown = after.shows(rule.parent(parent))
        if shown:
            missing.append(Gap(f"the value is {shown.replace(' later', '')}: its grad_fn would show WhereBackward0",
                               GapKind.SHOWN))
    elif isinstance(parent, cst.FormattedStringExpression):
        missing.append(Gap("the value is formatted in an f-string: its grad_fn would show WhereBackward0",
                           GapKind.SHOWN))
    elif isinstance(parent, cst.Attribute) and parent.attr.value == "grad_fn":
        missing.append(Gap("its `.grad_fn` is read: it would be WhereBackward0", GapKind.GRAD_FN_READ))
    return missing
