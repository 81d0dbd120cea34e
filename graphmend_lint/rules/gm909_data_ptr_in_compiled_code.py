from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from . import base

OPERATIONS = (cst.BinaryOperation, cst.Comparison, cst.BooleanOperation, cst.UnaryOperation,
              cst.FormattedStringExpression)


class DataPtrInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds `tensor.data_ptr()` whose value is used in arithmetic, a comparison, a boolean operator
    or an f-string (directly, or through a local name), in code that runs under `torch.compile`.

    ## Why it breaks the graph
    Under Dynamo tensors are fake and have no real address. Measured on torch 2.13: comparing two
    pointers breaks with GB5976 "Data pointer comparison"; arithmetic on a pointer fails inside
    Dynamo (GB0088 "Observed exception") and the whole frame runs eagerly (0 graphs). A pointer
    that is only stored or returned does not break, and is not reported.

    ## Example
    ```python
    class Shared(nn.Module):
        def forward(self, x, y):
            if x.data_ptr() == y.data_ptr():
                y = y.clone()
            return x + y
    ```

    ## Fix
    Do not depend on storage identity in compiled code: clone unconditionally, compare with
    `is`, or do the check before calling the compiled model.

    ## Fix safety
    No automatic fix: the intent (aliasing checks, caching) cannot be recovered from the source.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM909"
    NAME = "data-ptr-in-compiled-code"
    FIX = "none"
    MESSAGE = ("`.data_ptr()` has no value under Dynamo: using it breaks the graph (GB5976 for comparisons, "
               "GB0088 otherwise); do not depend on storage addresses in compiled code")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    ptrs = {"x": x.data_ptr()}
                    return x * 2, ptrs
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, y):
                    same = x.data_ptr() == y.data_ptr()
                    return x + y, same
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    p = x.data_ptr()
                    return x + (p % 2)
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        attr = X.method_call(node, "data_ptr")
        if attr is None or node.args:
            return
        v = X.value(self, node, attr.value)
        if v is None or v.kind == "static" or not self._used(node):
            return
        self.report(node, self.MESSAGE)

    def _used(self, node: cst.Call) -> bool:
        up = self.parent(node)
        if isinstance(up, cst.ComparisonTarget):  # `a.data_ptr() == b.data_ptr()` is one break: flag `a`
            cmp = self.parent(up)
            return not (isinstance(cmp, cst.Comparison) and isinstance(cmp.left, cst.Call)
                        and X.method_call(cmp.left, "data_ptr") is not None)
        if isinstance(up, OPERATIONS):
            return True
        if isinstance(up, (cst.If, cst.While, cst.IfExp)) and up.test is node:
            return True
        name = X.assigned_name(node, self.parent)
        func = self.function_of(node)
        return name is not None and func is not None and name in X.names_used_in_operations(func)
