"""GM101/GM104: the torch.where fix of a tensor `if` statement, as a `Fix` or a `NoFix`."""
from __future__ import annotations

import libcst as cst

from ..fix import Fix, NoFix
from ..safety import Safety
from .assign import plan
from .compiled import build, checked_note, proved_note
from .proof import Prover
from . import noop, ones, quiet


def fix_if(rule, node: cst.If, func: cst.FunctionDef) -> Fix | NoFix:
    """The torch.where fix of a tensor `if`: always the compile-only form (compiled.EAGER_VERBATIM),
    safe when every missing proof is checked while tracing."""
    masked = noop.fix(rule, node, func)  # a guard that only skips a no-op masked update
    if masked is not None:
        return masked
    ones_only = ones.fix(rule, node, func)  # a guard that only skips a multiplication by ones
    if ones_only is not None:
        return ones_only
    prover = Prover(rule, node, func)
    verdict, replacement = plan(prover, node)
    if verdict.refuse == quiet.ONLY_LOGGED:
        return quiet.fix(Prover(rule, node, func), node)
    if verdict.refuse or replacement is None:
        return NoFix(verdict.refuse)
    if isinstance(replacement, list):
        replacement = cst.FlattenSentinel(replacement)
    # compile-only even when proved exact: EAGER_VERBATIM in compiled.py (the measured eager cost)
    sp = build(prover, node, verdict, replacement.nodes if isinstance(replacement, cst.FlattenSentinel) else replacement)
    title = (f"fix: torch.where{proved_note(verdict)} under torch.compile only (eager runs the `if` unchanged)"
             f"{checked_note(sp)}")
    if sp.grad_only:
        title += f"; with gradients on, the `if` runs as before ({'; '.join(sp.grad_only)})"
    if verdict.logged:
        title += f"; {', '.join(verdict.logged)}"
    if sp.unchecked:
        return Fix(sp.node, Safety.UNSAFE, f"{title}; unsafe: {'; '.join(sp.unchecked)}", prover.imports)
    return Fix(sp.node, Safety.SAFE, title, prover.imports)
