"""GM1xx fixes: a tensor `if`, ternary or LayerDrop test rewritten so Dynamo does not break.

The rules use this API; each fix returns a `Fix`, a `NoFix` or (LayerDrop) an `Elsewhere`:
  - `fix_if(rule, node, func)`: a tensor `if` statement -> torch.where assignments or return;
  - `fix_ternary(rule, node, func)`: a tensor `a if c else b` -> torch.where;
  - `fix_module_grad_on(rule, node, func)`: the unsafe torch.cond step for gradients on, on the
    compile-only form of a module arm (None: not one);
  - `fix_layerdrop(rule, node, func)`: a LayerDrop test decided while tracing (None: not one,
    `Done.FIXED`: fixed already);
  - `breaks_on`, `arms`, `raise_only`, `is_fallback`: what the rules report.

Modules, by the seam they serve:
  proof of exactness: verdict.py (Verdict, Gap), values.py (value facts), chain.py (branch values as
    op chains), total.py (no side effects, no raise), proof.py (`Prover`: conditions, branch pairs),
    rewrite.py (double-where and index guards);
  trace-time checks: checks.py (the checks a missing proof can become), compiled.py (the
    compile-only form: eager runs the original, Dynamo traces torch.where);
  statement shapes: assign.py (`plan`: assignments, returns), branches.py (the arms of an `if`),
    flow.py and after.py (code around and after it), ifstmt.py (`fix_if`), ternary.py, nested.py
    (a ternary inside a larger expression), layerdrop.py (the p <= 0.0 guard; layerdrop_draw.py the
    draw it reads, layerdrop_noop.py where the guard would change nothing, layerdrop_cond.py the unsafe
    torch.cond form of the loop body for p > 0.0).
"""
from .branches import arms, raise_only
from .compiled import is_fallback
from .ifstmt import fix_if
from .layerdrop import Done
from .layerdrop import fix as fix_layerdrop
from .module_cond import fix as fix_module_grad_on
from .ternary import fix as fix_ternary
from .values import breaks_on

__all__ = ["Done", "arms", "breaks_on", "fix_if", "fix_layerdrop", "fix_module_grad_on", "fix_ternary", "is_fallback", "raise_only"]
