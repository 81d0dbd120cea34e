from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from . import _explain as X
from . import base


class TensorSliceBoundRule(base.GraphMendRule):
    """
    ## What it does
    Finds slices whose start, stop or step is a tensor (`x[:n]` with `n = mask.sum()`), in code
    that runs under `torch.compile`. Bounds that are shapes, sizes or Python ints are not reported.

    ## Why it breaks the graph
    A slice needs Python integers, so Dynamo calls `.item()` on the bound: GB0124
    "Unsupported Tensor.item() call with capture_scalar_outputs=False". Measured on torch 2.13 this
    break cannot be resumed: Dynamo compiles up to it and runs the REST OF THE FUNCTION in eager
    (`explain()` reports 0 breaks, the graph-break log shows it). With
    `torch._dynamo.config.capture_scalar_outputs = True` the slice is traced with an unbacked size.

    ## Example
    ```python
    class Head(nn.Module):
        def forward(self, x, mask):
            n = mask.sum()
            return x[:n]
    ```

    ## Fix
    Keep shapes fixed (mask instead of slicing), use `torch.narrow`/`index_select` with
    `capture_scalar_outputs = True`, or move the slicing out of the compiled region.

    ## Fix safety
    No automatic fix: the output shape itself depends on the data.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM906"
    NAME = "tensor-slice-bound"
    FIX = "none"
    MESSAGE = ("slice bound is a tensor: Dynamo calls `.item()` on it and breaks the graph (GB0124), "
               "running the rest of the function eagerly; keep shapes fixed, or set "
               "`torch._dynamo.config.capture_scalar_outputs = True`")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, n: int):
                    half = x.shape[1] // 2
                    return x[:, :half] + x[:n, half:]
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, mask):
                    n = (mask > 0).sum()
                    return x[:n]
            """
        ),
    ]

    def visit_Subscript(self, node: cst.Subscript) -> None:
        for el in node.slice:
            s = el.slice
            if not isinstance(s, cst.Slice):
                continue
            for bound in (s.lower, s.upper, s.step):
                if bound is None:
                    continue
                v = X.value(self, node, bound)
                if v is not None and v.is_tensor:
                    self.flag(node, self.MESSAGE, at=bound)
                    return
