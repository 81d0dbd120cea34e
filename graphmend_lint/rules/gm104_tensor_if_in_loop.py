from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..fixes import ifstmt, layerdrop, split, where
from . import base


class TensorIfInLoopRule(base.GraphMendRule):
    """
    ## What it does
    Finds an `if` statement or `a if c else b` whose test depends on tensor data inside a Python
    `for`/`while` loop (typically a per-sample loop `for i in range(batch): if h[i].sum() > 0:`), in
    code that runs under `torch.compile`.

    ## Why it breaks the graph
    Dynamo cannot resume a graph in the middle of a loop body: instead of one break, it skips the
    whole function. The function then runs entirely in eager mode (no graph at all for it), every
    call.

    ## Example
    ```python
    for i in range(h.shape[0]):
        if h[i].sum() > 0:
            h[i] = h[i] * 2
    ```

    ## Fix safety
    No fix is offered: the rewrite changes the structure of the code.

    ## When no fix is offered
    Always. The way out is to vectorise over the loop dimension with a per-sample condition:
    `h = torch.where((h.sum(dim=1) > 0)[:, None], h * 2, h)` (check shapes and dtypes as for GM101).
    """

    CODE = "GM104"
    NAME = "tensor-if-in-loop"
    FIX = "none"
    MESSAGE = ("`if` on a tensor value inside a Python loop: when it runs, Dynamo skips the whole function `{func}` "
               "(it runs in eager, no graph); vectorise over the loop with torch.where")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, xs):
                    for x in xs:
                        if x.dim() == 2:
                            x = x * 2
                    return xs
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, h):
                    for i in range(h.shape[0]):
                        if h[i].sum() > 0:
                            h[i] = h[i] * 2
                    return h
            """
        ),
    ]

    def _check(self, node: cst.If | cst.IfExp, tests: list[cst.BaseExpression]) -> None:
        func = self.compiled_function(node)
        if func is None or not context.in_loop(node, self.parent):
            return
        if split.is_fallback(self, node):
            return  # the original, kept by a compile-only fix
        ff = self.facts.function(func)
        flagged = [t for t in tests if where.breaks_on(ff, t)]
        if not flagged:
            return
        head = self.MESSAGE.format(func=func.name.value)
        short = f"`if` on a tensor value inside a Python loop makes Dynamo skip the whole function `{func.name.value}`"
        if not layerdrop.fix(self, node, func, short):
            self.flag(node, head, at=flagged[0])

    def visit_If(self, node: cst.If) -> None:
        up = self.parent(node)
        if isinstance(up, cst.If) and up.orelse is node or ifstmt.raise_only(node):
            return
        self._check(node, [t for t, _ in ifstmt.arms(node) if t is not None])

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node, [node.test])
