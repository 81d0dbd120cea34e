"""GM101: a tensor `if` whose branches only log (print, logging, warnings, or the product's own
`if not torch.compiler.is_compiling(): ...` guards). Under compile nothing in it runs but the test,
so the compiled path skips the whole `if`; eager evaluates it as before:

    if not torch.compiler.is_compiling() and h.abs().max() > 1e3:
        logger.warning("large activations")

The test must be skippable: free of side effects, unable to raise (a reduction that raises on an
empty tensor gets its shape checked while tracing), and a single value (a multi-element test
raises in `if`):

    if not (torch.compiler.is_compiling() and h.numel() > 0) and h.abs().max() > 1e3:
"""
from __future__ import annotations

import libcst as cst

from ..fix import Fix, NoFix
from ..safety import Safety
from ..syntax import code, flatten
from .branches import arms, own_guard
from .proof import Prover
from .verdict import EAGER_ONLY, Verdict

ONLY_LOGGED = ("the branches hold only side effects that GM2xx guards (print, logging, warnings); "
               "guard the whole `if` with `not torch.compiler.is_compiling()` to keep it out of the graph")
TITLE = "fix: the `if` is skipped under torch.compile (its branches only log, which compiled code does not run)"


def _operand(test: cst.BaseExpression) -> str:
    text = code(test)
    if "\n" in text or isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.NamedExpr, cst.Lambda)) \
            and not test.lpar:
        return f"({text})" if not test.lpar else text
    return text


def fix(prover: Prover, node: cst.If) -> Fix | NoFix:
    """`if T: <logging only>` -> `if not <is_compiling>() and T: ...` (or why not)."""
    chain = arms(node)
    if len(chain) > 1:  # `else`/`elif` arms would then run under compile
        return NoFix(ONLY_LOGGED)
    v = Verdict()
    prover.test_skipped = True  # under compile the test is not evaluated: its raising is a missing proof
    for part in flatten(node.test, cst.And):
        if prover.ff.value(part).kind == "static":
            continue
        _, pv = prover.condition(part, always=False)
        v.add(pv)
        if v.refuse:
            return NoFix(f"{ONLY_LOGGED} (the test cannot be skipped under compile: {v.refuse})")
    checks, unchecked = [], []
    for why in v.missing:
        check = prover.checks.get(why)
        if check == EAGER_ONLY:
            continue
        if check is None or not isinstance(check, str) or check in ("shapes", "gradients off"):
            unchecked.append(why)
        elif check not in checks:
            checks.append(check)
    is_compiling, needs = prover.rule.spell("torch.compiler.is_compiling")
    head = f"not {is_compiling}()" if not checks else f"not ({is_compiling}() and {' and '.join(checks)})"
    test = cst.parse_expression(f"{head} and {_operand(node.test)}")
    body = node.body
    if isinstance(body, cst.IndentedBlock):  # the product's own guards are redundant inside it
        stmts: list = []
        for s in body.body:
            if own_guard(prover, s) and isinstance(s.test, cst.UnaryOperation) and isinstance(s.body, cst.IndentedBlock):
                inner = list(s.body.body)
                inner[0] = inner[0].with_changes(leading_lines=[*s.leading_lines, *inner[0].leading_lines])
                stmts.extend(inner)
            else:
                stmts.append(s)
        body = body.with_changes(body=stmts)
    new = node.with_changes(test=test, body=body)
    title = TITLE + (f", checked while tracing ({', '.join(f'`{c}`' for c in checks)})" if checks else "")
    if unchecked:
        return Fix(new, Safety.UNSAFE, f"{title}; unsafe: {'; '.join(unchecked)}", needs)
    return Fix(new, Safety.SAFE, title, needs)
