from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from . import base

CONVERSIONS = {"int", "float", "bool"}


class NumpyToPythonRule(base.GraphMendRule):
    """
    ## What it does
    Finds `tensor.numpy()` (also `.detach().cpu().numpy()`) whose result is turned into Python
    values in code that runs under `torch.compile`: `.numpy().tolist()`, `.numpy().item()`, or
    `int()`/`float()`/`bool()` of an expression built on `.numpy()`.

    ## Why it breaks the graph
    Dynamo traces NumPy code on tensors (`config.trace_numpy`), so `.numpy()` followed by NumPy
    arithmetic stays in the graph (measured on torch 2.13: 0 breaks; such code is not reported).
    Converting the array to Python values does break: `float(y.numpy().mean())` gives GB0033
    "Data dependent operator" (removed by `capture_scalar_outputs = True`) and
    `y.numpy().tolist()` on a floating tensor gives GB0109 under every configuration.
    `.cpu()` alone does not break (measured); `.cpu().item()`/`.cpu().tolist()` are GM901/GM902.

    ## Example
    ```python
    class Stat(nn.Module):
        def forward(self, x):
            return x * float(x.detach().cpu().numpy().mean())
    ```

    ## Fix
    Stay in torch: `x * x.detach().mean()`; or set `capture_scalar_outputs = True` for scalars.

    ## Fix safety
    No automatic fix: NumPy and torch differ in dtype promotion (float64 scalars) and in results.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM903"
    NAME = "numpy-to-python"
    FIX = "none"
    MESSAGE = ("`.numpy()` result converted to Python values breaks the graph (GB0033; GB0109 for "
               "`.tolist()` of floats); stay in torch ops and keep the values as tensors")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    a = x.numpy() * 2
                    return torch.from_numpy(a)
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
                    return x * float(x.detach().cpu().numpy().mean())
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    ids = x.argmax(-1).numpy().tolist()
                    return x, ids
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        attr = X.method_call(node, "numpy")
        if attr is None or node.args or not self._to_python(node):
            return
        v = X.value(self, node, attr.value)
        if v is None or v.kind == "static" or X.in_branch_test(node, self.parent):
            return
        self.report(node, self.MESSAGE)

    def _to_python(self, node: cst.Call) -> bool:
        """Is the array (or a value computed from it in the same expression) converted to Python?"""
        child, up = node, self.parent(node)
        while up is not None and not isinstance(up, (cst.BaseStatement, cst.BaseSmallStatement)):
            if isinstance(up, cst.Call):
                if up.func is child:
                    pass  # `.numpy()` is (part of) the callee: a method of the array
                elif isinstance(up.func, cst.Name) and up.func.value in CONVERSIONS and \
                        X.qualified(self, up.func) is None:
                    return True
            if isinstance(up, cst.Attribute) and up.value is child and up.attr.value in ("tolist", "item"):
                return True
            child, up = up, self.parent(up)
        return False
