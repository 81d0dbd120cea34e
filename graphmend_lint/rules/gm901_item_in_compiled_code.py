from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from . import base


class ItemInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds `tensor.item()` in code that runs under `torch.compile`, where the Python number is
    used outside an `if`/`while`/`assert` test (those tests are reported by the GM1xx/GM3xx rules).

    ## Why it breaks the graph
    `.item()` copies a tensor value into a Python number. By default Dynamo cannot trace that:
    it stops the graph, runs `.item()` in Python and starts a new graph after it
    (GB0124 "Unsupported Tensor.item() call with capture_scalar_outputs=False"; measured on
    torch 2.13: 2 graphs / 1 break). With `torch._dynamo.config.capture_scalar_outputs = True`
    (or `fullgraph=True`) the number becomes a symbolic int/float and the break goes away
    (measured: 1 graph / 0 breaks), at the price of data-dependent shapes later on.
    `.item()` of a NumPy array that Dynamo traces (`np.random.rand(1).item()`) breaks too, with
    GB0033 "Data dependent operator" (measured).

    ## Example
    ```python
    class Scale(nn.Module):
        def forward(self, x):
            s = x.abs().max().item()
            return x / s
    ```

    ## Fix
    Keep the value as a tensor (`s = x.abs().max()`; tensors broadcast with tensors), or set
    `torch._dynamo.config.capture_scalar_outputs = True` before compiling.

    ## Fix safety
    No automatic fix: keeping a tensor instead of a Python number changes dtype promotion,
    `int` division and what later Python code (formatting, `range`, indexing) receives.

    ## When no fix is offered
    Always (detection only). `.item()` inside an `if`/`while`/`assert` test is left to the
    data-dependent branching rules, so one break gives one finding.
    """

    CODE = "GM901"
    NAME = "item-in-compiled-code"
    FIX = "none"
    MESSAGE = ("`.item()` turns a tensor into a Python number and breaks the graph (GB0124); keep the value "
               "as a tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    n = x.size(0)
                    return x / x.abs().max()

            def report(x):
                return x.sum().item()
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    s = x.abs().max().item()
                    return x / s
            """
        ),
        Invalid(
            """
            import torch

            @torch.compile
            def step(x, t):
                return x * t.item()
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        attr = X.method_call(node, "item")
        if attr is None or node.args or X.chain_has(attr.value, "numpy"):
            return  # `.numpy().item()` is GM903's
        v = X.value(self, node, attr.value)
        if v is None or v.kind == "static" and not v.numpy or X.in_branch_test(node, self.parent):
            return  # a numpy value's `.item()` breaks too (GB0033, measured): kept
        self.report(node, self.MESSAGE)
