"""GM102/GM104: the torch.where fix of a tensor ternary `a if c else b` (short, compile-only or nested)."""
from __future__ import annotations

import libcst as cst

from . import ifstmt, nested, split, trap, where
from .safety import Safety


def fix(rule, node: cst.IfExp, func: cst.FunctionDef, message: str) -> None:
    """Flag the ternary `node` with its fix: the short form when torch.where is exact in eager too,
    else the compile-only form (safe when every missing proof is checked while tracing)."""
    prover = where.Prover(rule, node, func)
    cond, verdict = prover.condition(node.test)
    body, orelse = node.body, node.orelse
    if cond is not None:
        verdict.add(prover.pair(body, orelse, can_guard=True))
        if verdict.guard:
            name, on_true, on_false = verdict.guard
            body = where.guarded(prover, body, name, cond, True) if on_true else body
            orelse = where.guarded(prover, orelse, name, cond, False) if on_false else orelse
        # a tensor index is 0 where its branch is not taken (pair() took it on that condition)
        body, orelse = where.index_guarded(prover, body, cond, True), where.index_guarded(prover, orelse, cond, False)
    if verdict.refuse or cond is None:
        rule.flag(node, f"{message}; no fix: {verdict.refuse}", at=node.test)
        return
    for why in _rebind_proofs(rule, node, func):
        verdict.missing.append(why)
        if "grad_fn would show" in why and ".grad_fn`" not in why:  # printed, not read
            prover.checks[why] = where.EAGER_ONLY
    replacement = prover.call("torch.where", cond, body, orelse).with_changes(lpar=node.lpar, rpar=node.rpar)
    no_split = None
    if verdict.missing:
        no_split = _compile_only(rule, node, func, prover, verdict, replacement, message)
        if no_split is None:
            return
    if verdict.missing:
        why = f" (no compile-only form: {no_split})" if no_split else ""
        rule.flag(node, f"{message}; unsafe fix with torch.where: {'; '.join(verdict.missing)}{why}",
                  at=node.test, replacement=replacement, safety=Safety.UNSAFE, needs_torch_import=prover.imports)
        return
    how = " (double where: exact gradients)" if verdict.guard else ""
    rule.flag(node, f"{message}; fix: torch.where{how}", at=node.test, replacement=replacement,
              safety=Safety.SAFE, needs_torch_import=prover.imports)


def _compile_only(rule, node: cst.IfExp, func, prover, verdict, replacement, message: str) -> str | None:
    """`y = a if c else b` / `return a if c else b` on a line of its own: GM101's compile-only form,
    with the line kept for eager as the `else:` block; a ternary inside a larger expression of the
    statement: fixes/nested.py. None when flagged, else why no compile-only form fits ("" unsaid)."""
    parent = rule.parent(node)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and \
            isinstance(parent.targets[0].target, cst.Name) and parent.value is node:
        small = cst.Assign(parent.targets, replacement)
    elif isinstance(parent, cst.Return) and parent.value is node:
        small = cst.Return(replacement)
    else:
        return nested.fix(rule, node, func, prover, verdict, replacement, message)
    line = trap.sole_line(parent, rule.parent)
    if line is None:
        return ""
    sp = split.build(prover, line, verdict, [cst.SimpleStatementLine(body=[small])])
    if sp.node is None:
        return ""
    checks = f", checked while tracing ({', '.join(f'`{c}`' if '`' not in c else c for c in sp.checked)})" \
        if sp.checked else ""
    head = f"{message}; fix: torch.where under torch.compile only (eager runs the line unchanged){checks}"
    if sp.grad_only:
        head += f"; with gradients on, the line runs as before ({'; '.join(sp.grad_only)})"
    safety = Safety.UNSAFE if sp.unchecked else Safety.SAFE
    rule.flag(line, f"{head}; unsafe: {'; '.join(sp.unchecked)}" if sp.unchecked else head, at=node.test,
              replacement=sp.node, safety=safety, needs_torch_import=prover.imports)
    return None


def _rebind_proofs(rule, node: cst.IfExp, func: cst.FunctionDef) -> list[str]:
    """The ternary's value was one of its branch tensors (maybe the very object `x`); torch.where's
    is a new one with grad_fn WhereBackward0. Code after the statement must not tell them apart."""
    up = rule.parent(node)
    while up is not None and not isinstance(up, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        up = rule.parent(up)
    after = ifstmt._After(rule, ifstmt.later_than(rule, up if up is not None else node, func), func)
    func.visit(after)
    sources = {a for a in (ifstmt.alias_of(node.body), ifstmt.alias_of(node.orelse)) if a}
    missing = []
    parent = rule.parent(node)
    if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
        for t in targets:
            if isinstance(t, cst.Name):
                missing += ifstmt.rebind_proofs(after, t.value, sources, check_name=bool(sources))
    elif isinstance(parent, cst.Arg) and isinstance(rule.parent(parent), cst.Call):
        shown = after.shows(rule.parent(parent))
        if shown:
            missing.append(f"the value is {shown.replace(' later', '')}: its grad_fn would show WhereBackward0")
    elif isinstance(parent, cst.FormattedStringExpression):
        missing.append("the value is formatted in an f-string: its grad_fn would show WhereBackward0")
    elif isinstance(parent, cst.Attribute) and parent.attr.value == "grad_fn":
        missing.append("its `.grad_fn` is read: it would be WhereBackward0")
    return missing
