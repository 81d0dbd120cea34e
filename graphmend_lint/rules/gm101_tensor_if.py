from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..fixes import ifstmt, layerdrop, split, where
from . import base


class TensorIfRule(base.GraphMendRule):
    """
    ## What it does
    Finds `if`/`elif` statements whose test depends on tensor data (`x.sum() > 0`,
    `torch.isnan(h).any()`, `(x > 0).all() and ...`, `.item()`), in code that runs under
    `torch.compile`. Static tests are never flagged: `self.training`, `x.dim() == 3`,
    `x.shape[0] > 1`, `x.dtype == torch.float16`, `mask is None`, `isinstance(...)`, config attributes.

    ## Why it breaks the graph
    Python must know which branch to run, so Dynamo ends the graph at the test ("Data-dependent
    branching", GB0170), runs the test in eager, and compiles a new graph for the code after it.
    The first call that takes the other branch compiles again (hundreds of milliseconds on CPU).

    ## Example
    ```python
    if hidden_states.dtype == torch.float16 and (
        torch.isinf(hidden_states).any() or torch.isnan(hidden_states).any()
    ):
        clamp_value = torch.finfo(hidden_states.dtype).max - 1000
        hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
    ```

    ## Fix
    The branch choice becomes `torch.where`, which computes both values and picks one in the graph:
    ```python
    if hidden_states.dtype == torch.float16:
        clamp_value = torch.finfo(hidden_states.dtype).max - 1000
        hidden_states = torch.where(torch.logical_or(torch.isinf(hidden_states).any(), torch.isnan(hidden_states).any()), torch.clamp(hidden_states, min=-clamp_value, max=clamp_value), hidden_states)
    ```
    Accepted shapes: the same names assigned in every branch; `return` in every branch (tuples
    element by element); an `if` without `else` updating a name bound before it
    (`h = torch.where(c, f(h), h)`); `elif` chains (nested `torch.where`). A static leading
    conjunct stays a Python `if`; `and`/`or`/`not` over tensor tests become
    `torch.logical_and/or/not`; setup assignments used nowhere else are hoisted out of the branch.

    ## Fix safety
    Safe only when the source proves that eager results stay bit-identical:
    - the test is a 0-d tensor (a reduction without `dim`, or a comparison of one with a number):
      `torch.where` broadcasts a larger condition instead of failing like `if`;
    - the branch values are tensors of the same shape and dtype: each is the same name, or a chain
      of shape- and dtype-keeping ops of it (`clamp`, `nan_to_num`, `tanh`, arithmetic with Python
      numbers, ...; the table in `analysis/tables.py` is checked against torch by the tests), and
      the name is floating where an op keeps the dtype only for floating tensors;
    - everything now evaluated in both branches (values, hoisted setup, every test of an `and`/`or`
      or `elif`) is free of side effects and cannot raise (no indexing, no calls of modules or user
      functions, `torch.finfo` only on a proven floating dtype, no division by a possible zero);
    - every op has a finite derivative everywhere, or the code runs under `no_grad` /
      `inference_mode`: `torch.where(c, sqrt(x), x)` gives NaN gradients where `if` gave none.
      With a single condition the fix instead guards the input of such ops ("double where":
      `torch.where(c, torch.sqrt(torch.where(c, x, 1.0)), x)`), which gives bit-identical values and
      gradients (measured for every such op in the table, float32 and float16); in `elif` chains the
      fix stays unsafe;
    - under `no_grad`, a branch that passes a name on unchanged needs that name to be computed
      inside the `no_grad` region: `if` hands on the tensor with its autograd history, while
      `torch.where` there returns a new tensor that never requires grad;
    - the assigned name is not modified in place later (`if` kept the same tensor object when the
      branch was not taken; `torch.where` makes a new one), and neither is a name a branch passes on
      as it is (`y = x`: `y` is the tensor `x` itself, so `x.add_(1)`, `x[0] = 0`, `x += 1` or
      `out=x` later also changed `y`);
    - the assigned name is not observed later in the function: passed to `print`, a logger,
      `warnings.warn`, `str`/`repr`/`format`, shown in an f-string, or read as `.grad_fn`. The values
      and gradients are equal, but the tensor's `grad_fn` becomes `WhereBackward0`, which printing
      shows (`h.shape` or `h.sum()` print the same either way). Code that receives the tensor
      (a caller, a callee) cannot be followed; `torch.compile` replaces `grad_fn` nodes itself.
    When one of these cannot be proved the fix is unsafe (applied with `--unsafe-fixes`) and the
    message names the missing proof. `torch.where` also evaluates both branches, so an expensive
    branch is paid for on every call.

    ## When no fix is offered
    Branches with side effects (calls, `+=`, prints, attribute stores) or calls of modules and user
    functions; indexing or other operations that may raise only in the untaken branch; a branch value
    that is a Python number or `None`; a test proved not 0-d or read as a Python value (`.item()`,
    `torch.equal`); `return` in some branches only; a static test after a tensor test. For branches
    that call modules, `torch.cond(pred, true_fn, false_fn, operands)` is the manual way out when both
    branches are free of side effects and mutation and return tensors of equal shape and dtype. It is
    never offered as a fix because it does not keep eager behaviour either (measured on torch 2.13):
    eager `torch.cond` traces both branches (an index valid only in the untaken branch raises), it
    gives the untaken branch's parameters zero gradients where `if` left them `None` (optimizers with
    weight decay or momentum then update them), and it is several times slower than the plain `if`. `if`-chains with a `raise` in an arm are left to GM3xx, and an
    `if` inside a Python loop to GM104.
    """

    CODE = "GM101"
    NAME = "tensor-if"
    FIX = "sometimes"
    MESSAGE = "`if` on a tensor value breaks the graph (data-dependent branching)"

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, mask=None):
                    if self.training and x.dim() == 3 and x.shape[0] > 1:
                        x = x * 2
                    if mask is None or isinstance(mask, float):
                        x = x + 1
                    if x.dtype == torch.float16:
                        x = x.float()
                    return x

            def eager_only(x):
                if x.sum() > 0:
                    x = x * 2
                return x
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    if h.sum() > 0:
                        y = h * 2
                    else:
                        y = h - 1
                    return y
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    y = torch.where(h.sum() > 0, h * 2, h - 1)
                    return y
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if x.sum() > 0:
                        print("positive")
                    return x
            """
        ),
    ]

    def visit_If(self, node: cst.If) -> None:
        up = self.parent(node)
        if isinstance(up, cst.If) and up.orelse is node:
            return  # an `elif`: handled with its head
        func = self.compiled_function(node)
        if func is None:
            return
        if split.is_fallback(self, node):
            return  # the original, kept by a compile-only fix
        ff = self.facts.function(func)
        tests = [t for t, _ in ifstmt.arms(node) if t is not None]
        flagged = [t for t in tests if where.breaks_on(ff, t)]
        if not flagged or context.in_loop(node, self.parent) or ifstmt.raise_only(node):
            return
        if layerdrop.fix(self, node, func, self.MESSAGE):
            return
        prover = where.Prover(self, node, func)
        verdict, replacement = ifstmt.plan(prover, node)
        at = flagged[0]
        if verdict.refuse or replacement is None:
            self.flag(node, f"{self.MESSAGE}; no fix: {verdict.refuse}", at=at)
            return
        if isinstance(replacement, list):
            replacement = cst.FlattenSentinel(replacement)
        if verdict.missing:
            self._compile_only(node, prover, verdict, replacement, at)
            return
        how = " (double where: exact gradients)" if verdict.guard else ""
        self.flag(node, f"{self.MESSAGE}; fix: torch.where{how}", at=at, replacement=replacement,
                  safety=base.Safety.SAFE, needs_torch_import=prover.imports)

    def _compile_only(self, node, prover, verdict, replacement, at) -> None:
        """torch.where is not provably exact in eager: keep the `if` for eager, trace the fix."""
        sp = split.build(prover, node, verdict, replacement)
        if sp.node is None:
            self.flag(node, f"{self.MESSAGE}; unsafe fix with torch.where: {'; '.join(verdict.missing + sp.unchecked)}",
                      at=at, replacement=replacement, safety=base.Safety.UNSAFE, needs_torch_import=prover.imports)
            return
        checks = f", checked while tracing ({', '.join(f'`{c}`' if '`' not in c else c for c in sp.checked)})" \
            if sp.checked else ""
        head = f"{self.MESSAGE}; fix: torch.where under torch.compile only (eager runs the `if` unchanged){checks}"
        if sp.unchecked:
            self.flag(node, f"{head}; unsafe: {'; '.join(sp.unchecked)}", at=at, replacement=sp.node,
                      safety=base.Safety.UNSAFE, needs_torch_import=prover.imports)
            return
        self.flag(node, head, at=at, replacement=sp.node, safety=base.Safety.SAFE, needs_torch_import=prover.imports)
