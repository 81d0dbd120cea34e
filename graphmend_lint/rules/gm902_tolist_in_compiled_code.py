from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from ..analysis import numpy_values as NV
from . import base


class TolistInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds `tensor.tolist()` in code that runs under `torch.compile` (outside `if`/`while`/`assert`
    tests, which the GM1xx/GM3xx rules report), and `.tolist()` of a NumPy value (an array made
    there, or one `__init__` stores on the module), which Dynamo traces as a tensor.

    ## Why it breaks the graph
    `.tolist()` reads every element into Python numbers. Measured on torch 2.13: an integer tensor
    breaks with GB0033 "Data dependent operator" (`aten._local_scalar_dense`), which
    `torch._dynamo.config.capture_scalar_outputs = True` removes; a floating tensor breaks with
    GB0109 "Tensor.tolist() with non-integer tensor" under every configuration. The same holds for
    NumPy values (`np.array([1, 2, 3]).tolist()`, `self.a.tolist()` with `self.a = np.array(...)`):
    Dynamo traces them as tensors.

    ## Example
    ```python
    class Pool(nn.Module):
        def forward(self, x, lengths):
            return [x[i, :n] for i, n in enumerate(lengths.tolist())]
    ```

    ## Fix
    Keep the values as tensors (masks, `torch.gather`, `index_select`), or, for integer tensors,
    set `torch._dynamo.config.capture_scalar_outputs = True`.

    ## Fix safety
    No automatic fix: a list of Python numbers and a tensor behave differently everywhere after it.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM902"
    NAME = "tolist-in-compiled-code"
    FIX = "none"
    MESSAGE = ("`.tolist()` copies tensor data into Python and breaks the graph (GB0033 for integer tensors, "
               "GB0109 for floating ones); keep the values as tensors")
    NUMPY_MESSAGE = ("`.tolist()` of a NumPy value breaks the graph: Dynamo traces NumPy values as tensors (\"Data "
                     "dependent operator\" for integer ones, GB0109 for floating ones); make the list outside the "
                     "compiled code, or keep tensors")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    dims = list(x.shape)
                    return x.reshape(dims[0], -1)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, lengths):
                    return [x[i, :n] for i, n in enumerate(lengths.tolist())]
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        attr = X.method_call(node, "tolist")
        if attr is None or node.args or X.chain_has(attr.value, "numpy"):
            return  # `.numpy().tolist()` is GM903's
        v = X.value(self, node, attr.value)
        if v is None or v.kind == "static" and not v.numpy or X.in_branch_test(node, self.parent):
            return
        if v.numpy and not NV.sources(self.facts, self.compiled_function(node), attr.value):
            return  # NumPy's random draws: GM910/GM918's, which break at the draw
        self.report(node, self.NUMPY_MESSAGE if v.numpy else self.MESSAGE)
