from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from . import base

# Python `random` functions measured (or implemented on top of ones measured) to break on torch 2.13.
# randint/uniform/randrange/getrandbits are traced by Dynamo and are not reported.
PY_RANDOM = {"random", "gauss", "normalvariate", "choice", "choices", "shuffle", "sample", "seed",
             "getstate", "setstate"}
# NumPy random samplers: a scalar draw breaks; a draw with a size argument becomes a traced tensor.
NP_NO_ARGS = {"rand", "randn", "random", "random_sample", "ranf", "sample"}
NP_SCALAR = {"randint": 2, "uniform": 2, "normal": 2}  # size is the third positional argument


class PythonRandomInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds calls of Python's `random` module (`random.random()`, `gauss`, `choice`, `shuffle`,
    `sample`, `seed`, ...) and scalar draws of `numpy.random` (`np.random.rand()`,
    `np.random.randint(0, 5)` without a size) in code that runs under `torch.compile`.

    ## Why it breaks the graph
    Measured on torch 2.13: `random.random/gauss/choice/shuffle/seed` are "marked as skipped"
    (GB0007, 2 graphs / 1 break each), while `random.randint` and `random.uniform` are traced
    (0 breaks; not reported). A scalar NumPy draw is traced as a 0-d tensor that is then turned
    into a Python number: GB0033 "Data dependent operator" (still a break with
    `capture_scalar_outputs = True`; `np.random.ranf()` gives GB0294 instead); a draw with a `size`
    becomes a tensor and does not break.
    Besides the break, a random value drawn in Python is not redrawn by the compiled graph.

    ## Example
    ```python
    class Drop(nn.Module):
        def forward(self, x):
            if self.training:
                return x * random.random()
            return x
    ```

    ## Fix
    Use torch's generator: `torch.rand(())` (a 0-d tensor, traced and redrawn on every call),
    `torch.randint`, `torch.randperm`.

    ## Fix safety
    No automatic fix: torch and Python/NumPy use different generators, so the drawn values change.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM910"
    NAME = "python-random-in-compiled-code"
    FIX = "none"
    MESSAGE = ("`{name}()` draws outside torch and breaks the graph ({gb}); use torch's random functions "
               "(`torch.rand(())`, `torch.randint`, `torch.randperm`)")

    VALID = [
        Valid(
            """
            import random
            import numpy as np
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    k = random.randint(0, 3)
                    noise = np.random.rand(4, 8)
                    return x * torch.rand(()) + k + torch.as_tensor(noise)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import random
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    return x * random.random()
            """
        ),
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    return x + np.random.randn()
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        q = X.qualified(self, node.func)
        if q is None:
            return
        gb = None
        if q.startswith("random.") and q.count(".") == 1 and q[7:] in PY_RANDOM:
            gb = "GB0007"
        elif q.startswith("numpy.random.") and q.count(".") == 2 and self._np_scalar(q[13:], node):
            gb = "GB0033"
        if gb is not None and X.value(self, node, node) is not None:
            self.report(node, self.MESSAGE.format(name=X.dotted(node.func) or q, gb=gb))

    @staticmethod
    def _np_scalar(name: str, node: cst.Call) -> bool:
        if any(a.star or (a.keyword is not None and a.keyword.value == "size") for a in node.args):
            return False
        if name in NP_NO_ARGS:
            return not node.args
        return name in NP_SCALAR and len(node.args) <= NP_SCALAR[name]
