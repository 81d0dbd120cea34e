from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from ..analysis import numpy_values as NV
from . import base

# the torch function to use instead, where one does the same job (the hint of the message)
TORCH_EQUIVALENT = {
    "isin": "torch.isin", "nanmean": "torch.nanmean", "nansum": "torch.nansum", "nanmedian": "torch.nanmedian",
    "nanquantile": "torch.nanquantile", "frexp": "torch.frexp", "unravel_index": "torch.unravel_index",
    "cumulative_sum": "torch.cumsum", "cumulative_prod": "torch.cumprod", "vecdot": "torch.linalg.vecdot",
    "promote_types": "torch.promote_types", "result_type": "torch.result_type", "can_cast": "torch.can_cast",
    "allclose": "torch.allclose", "array_equal": "torch.equal", "ndim": "Tensor.dim()", "size": "Tensor.numel()",
    "iscomplexobj": "Tensor.is_complex()",
}


class NumpyCallNotTracedRule(base.GraphMendRule):
    """
    ## What it does
    Finds calls of NumPy functions that Dynamo cannot trace, in code that runs under
    `torch.compile`: functions that `torch._numpy` (Dynamo's NumPy) does not have (`np.isin`,
    `np.nanmean`, `np.digitize`, `np.iterable`, `np.promote_types`, ...), and functions it has
    that return a Python value instead of an array (`np.isscalar`, `np.ndim`, `np.size`,
    `np.allclose`, `np.array_equal`, `np.result_type`, `np.can_cast`, ...).

    ## Why it breaks the graph
    Dynamo traces NumPy calls by mapping each to its `torch._numpy` twin. Measured on torch 2.13
    (eager backend, Dynamo's graph_breaks log): a function without a twin breaks at the call,
    whatever its arguments (GB0294 "attempted to trace numpy function unsupported by PyTorch":
    `np.isin`, `np.nanmean`, `np.iterable`, `np.isdtype`, `np.promote_types`); a twin that
    returns a bool, int or dtype breaks too, also on constant arguments (GB0208 "torch.* op
    returned non-Tensor": `np.isscalar(3)`, `np.ndim(x)`, `np.size(x)`, `np.result_type(...)`,
    `np.can_cast(...)`, `np.allclose(...)`, `np.array_equal(...)`). NumPy functions with a twin
    that returns an array (`np.sum`, `np.prod`, `np.lcm`, `np.argmax`, `np.isclose`) and
    `np.issubdtype` of constants (folded while tracing) do not break and are not reported.
    `np.random` draws are GM910's; a test of a traced NumPy value is GM915's.

    ## Example
    ```python
    class Filter(nn.Module):
        def forward(self, ids):
            keep = np.isin(ids.numpy(), self.allowed)
            return ids[torch.from_numpy(keep)]
    ```

    ## Fix
    Compute it with torch (`torch.isin`, `torch.nanmean`, `Tensor.dim()`, `torch.allclose`, ...),
    or with Python numbers, or before the compiled call.

    ## Fix safety
    No automatic fix: the torch function takes tensors where NumPy took arrays, lists or scalars,
    and returns a tensor where NumPy returned an array or a Python value; the code around the
    call decides what the change means.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM917"
    NAME = "numpy-call-not-traced"
    FIX = "none"
    MESSAGE = "`{name}()` {why} and breaks the graph ({gb}); {hint}"
    WHY = {"GB0294": "has no equivalent in torch._numpy (Dynamo's NumPy)",
           "GB0208": "returns a Python value, which Dynamo does not trace from NumPy,"}

    VALID = [
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    scale = np.sqrt(x.shape[-1])
                    return x / scale + np.prod(x.shape)

            def prepare(ids, allowed):
                return np.isin(ids, allowed)
            """
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        assert np.isscalar(self.eps)
                    return x * self.eps
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, ids):
                    keep = np.isin(ids.numpy(), [1, 2])
                    return ids[torch.from_numpy(keep)]
            """
        ),
        Invalid(
            """
            from numpy import ndim
            import torch

            @torch.compile
            def step(x):
                return x.sum(-1) if ndim(x) == 2 else x
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        q = X.qualified(self, node.func)
        gb = NV.breaking_call(q)
        if gb is None or X.value(self, node, node) is None:
            return
        torch = TORCH_EQUIVALENT.get(q[6:])
        hint = f"use `{torch}`" if torch else "compute it with torch, with Python numbers, or before the compiled call"
        self.report(node, self.MESSAGE.format(name=X.dotted(node.func) or q, why=self.WHY[gb], gb=gb, hint=hint))
