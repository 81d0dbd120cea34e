from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..fixes import where
from . import base


class TensorWhileRule(base.GraphMendRule):
    """
    ## What it does
    Finds `while` loops whose test depends on tensor data (`while h.norm() > 1:`), in code that
    runs under `torch.compile`.

    ## Why it breaks the graph
    Every evaluation of the test needs a Python bool: Dynamo breaks the graph at the test on every
    iteration, and the number of iterations can change from call to call.

    ## Example
    ```python
    while h.abs().max() > 1:
        h = h / 2
    ```

    ## Fix safety
    No fix is offered: a loop cannot be rewritten with `torch.where` without knowing a bound on the
    number of iterations.

    ## When no fix is offered
    Always. Ways out: a closed form (here `h / 2 ** k` with `k` computed from `log2` of the maximum),
    a fixed number of iterations with `torch.where` updates, or
    `torch._higher_order_ops.while_loop` (experimental; its body must be free of side effects, and it
    is several times slower than plain Python in eager mode).
    """

    CODE = "GM103"
    NAME = "tensor-while"
    FIX = "none"
    MESSAGE = ("`while` on a tensor value breaks the graph on every iteration; use a closed form, "
               "a fixed iteration count with torch.where, or torch._higher_order_ops.while_loop")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    while x.dim() < 4:
                        x = x.unsqueeze(0)
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
                def forward(self, h):
                    while h.abs().max() > 1:
                        h = h / 2
                    return h
            """
        ),
    ]

    def visit_While(self, node: cst.While) -> None:
        func = self.compiled_function(node)
        if func is not None and where.breaks_on(self.facts.function(func), node.test):
            self.report(node, self.MESSAGE, at=node.test)
