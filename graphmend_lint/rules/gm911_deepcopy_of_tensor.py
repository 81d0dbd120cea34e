from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from . import base


class DeepcopyOfTensorRule(base.GraphMendRule):
    """
    ## What it does
    Finds `copy.deepcopy(t)` of a value the analysis proves to be a tensor (or a list, tuple or
    dict literal holding one) in code that runs under `torch.compile`.

    ## Why it breaks the graph
    Dynamo does not trace `deepcopy` of a tensor: GB4198 "Attempted to copy.deepcopy a tensor"
    (measured on torch 2.13: 2 graphs / 1 break, also for a dict holding a tensor; `fullgraph=True`
    raises). `deepcopy` of an `nn.Module`, a parameter or plain Python data does not break
    (measured) and is not reported.

    ## Example
    ```python
    class Keep(nn.Module):
        def forward(self, x: torch.Tensor):
            h = x.relu()
            self.last = copy.deepcopy(h)
            return h
    ```

    ## Fix
    Use `t.clone()` (add `.detach()` if the copy must not carry autograd history).

    ## Fix safety
    No automatic fix: `deepcopy` of a non-leaf tensor returns a detached leaf while `clone()` stays
    in the autograd graph, so the right replacement depends on what the copy is for.

    ## When no fix is offered
    Always (detection only). Known miss: a name rebound to its own copy (`h = copy.deepcopy(h)`) is
    not reported, because the analysis joins both bindings of `h` and one of them is unknown.
    """

    CODE = "GM911"
    NAME = "deepcopy-of-tensor"
    FIX = "none"
    MESSAGE = ("`copy.deepcopy` of a tensor breaks the graph (GB4198); use `.clone()` "
               "(with `.detach()` if the copy must not track gradients)")

    VALID = [
        Valid(
            """
            import copy
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    sizes = copy.deepcopy([1, 2])
                    return x.clone() * sizes[0]
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import copy
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x: torch.Tensor):
                    h = x * 2
                    self.last = copy.deepcopy(h)
                    return h
            """
        ),
        Invalid(
            """
            from copy import deepcopy
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x: torch.Tensor):
                    h = x * 2
                    state = deepcopy({"h": h})
                    return state["h"] + 1
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if X.qualified(self, node.func) != "copy.deepcopy" or not node.args:
            return
        arg = node.args[0].value
        items: list[cst.BaseExpression] = [arg]
        if isinstance(arg, (cst.List, cst.Tuple, cst.Set)):
            items = [e.value for e in arg.elements]
        elif isinstance(arg, cst.Dict):
            items = [e.value for e in arg.elements if isinstance(e, cst.DictElement)]
        for item in items:
            v = X.value(self, node, item)
            if v is None:
                return
            if v.is_tensor:
                self.report(node, self.MESSAGE)
                return
