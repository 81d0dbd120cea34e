"""GM2xx guard fix: `stmt` -> `if not torch.compiler.is_compiling(): stmt` (or why not)."""
from __future__ import annotations

import libcst as cst

from ..analysis import context
from ..analysis.bindings import dotted
from ..analysis.effects import side_effect
from . import build
from .fix import Fix, NoFix

NO_FIX_VALUE_USED = "its value is used, so it cannot be guarded as a statement"
NO_FIX_SHARED_LINE = "it shares its line with other statements"
NO_FIX_ONE_LINE_BODY = "it is the body of a one-line compound statement"
NO_FIX_SIDE_EFFECT = "an argument may have a side effect ({}) that compiled code would then skip"
NO_FIX_ONCE_FLAG = ("`{}` is set beside it, a flag its `if` tests: under compile the guard would skip the "
                    "message and still set the flag, so it would never be shown, in eager either")
NO_FIX_COMPILE_ONLY = ("it runs only under torch.compile (the test `{}` chooses this arm), so a "
                       "`not is_compiling()` guard would make it dead code")


def refusal(call: cst.Call, parent, bindings=None) -> str | None:
    """Why the guard fix cannot be applied to `call`, or None when it can."""
    expr_stmt = parent(call)
    if not isinstance(expr_stmt, cst.Expr) or expr_stmt.value is not call:
        return NO_FIX_VALUE_USED
    line = parent(expr_stmt)
    if isinstance(line, cst.SimpleStatementSuite):
        return NO_FIX_ONE_LINE_BODY
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return NO_FIX_SHARED_LINE
    if not isinstance(parent(line), cst.IndentedBlock):
        return NO_FIX_SHARED_LINE
    effect = side_effect(call, bindings)
    if effect is not None:
        return NO_FIX_SIDE_EFFECT.format(effect)
    flag = _once_flag(parent(line), parent)
    if flag is not None:
        return NO_FIX_ONCE_FLAG.format(flag)
    return None


def _once_flag(block: cst.IndentedBlock, parent) -> str | None:
    """An attribute or global that an `if` around `block` tests and `block` assigns (sglang's
    `if not self._logged: logger.info(...); self._logged = True`; megatron's
    `if not fn.warned: if sequence_parallel: warnings.warn(...); fn.warned = True`), or None."""
    tests = []
    up: cst.CSTNode | None = block
    while up is not None and not isinstance(up, (cst.FunctionDef, cst.ClassDef, cst.Module)):
        if isinstance(up, (cst.If, cst.While)):
            tests.append(up.test)
        up = parent(up)
    if not tests:
        return None
    tested = set()
    todo = tests
    while todo:
        e = todo.pop()
        name = dotted(e)
        if name is not None:
            tested.add(name)
        elif isinstance(e, cst.UnaryOperation):
            todo.append(e.expression)
        elif isinstance(e, cst.BooleanOperation):
            todo += [e.left, e.right]
        elif isinstance(e, cst.Comparison):
            todo += [e.left, *(c.comparator for c in e.comparisons)]
    for stmt in block.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
                    [small.target] if isinstance(small, (cst.AugAssign, cst.AnnAssign)) else []
                for t in targets:
                    if dotted(t) in tested and (isinstance(t, cst.Attribute) or t.value in _declared_around(block, parent)):
                        return dotted(t)  # it outlives the call (a local such as `use_cache` does not)
    return None


def _declared_around(node: cst.CSTNode, parent) -> set[str]:
    func = context.enclosing_function(node, parent)
    return context.declared_names(func) if func is not None else set()


# GM202/GM203: Dynamo cannot defer a Logger method or warnings.warn itself (measured on torch 2.13)
DROPPED = "under torch.compile the guarded call is skipped, so its message is dropped there; eager keeps it"
TITLE = "guard it with `not torch.compiler.is_compiling()`"


def guard(rule, call: cst.Call) -> Fix | NoFix:
    """The guard fix of `call` (already known to be print/logging/warnings in compiled scope)."""
    reason = refusal(call, rule.parent, rule.facts.bindings)
    only = context.runs_only_compiled(call, rule.parent, rule.facts.bindings) if reason is None else None
    if only is not None:
        reason = NO_FIX_COMPILE_ONLY.format(only)
    if reason is not None:
        return NoFix(reason)
    line = build.sole_statement_line(call, rule.parent)
    assert line is not None
    spelled, needs_import = rule.spell("torch.compiler.is_compiling")
    return Fix(build.guard_statement(line, spelled), title=TITLE, needs_torch_import=needs_import, node=line)
