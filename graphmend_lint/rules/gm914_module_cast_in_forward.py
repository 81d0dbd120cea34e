from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from ..analysis import tables as T
from . import base

CASTS = T.MODULE_CASTS
NOT_LAYERS = T.NOT_LAYERS


class ModuleCastInForwardRule(base.GraphMendRule):
    """
    ## What it does
    Finds `self.<layer>.to(...)`, `.half()`, `.float()`, `.double()`, `.bfloat16()` and `.type(...)`
    on an `nn` layer the class creates (`self.<layer> = nn.Linear(...)`), in code that runs under
    `torch.compile` (Switch Transformers' router casts its classifier this way). `nn.Parameter`
    attributes are tensors (their `.to()` is traced) and are not reported.

    ## Why it breaks the graph
    Casting a module to another dtype or device replaces its parameters with new `nn.Parameter`s,
    which Dynamo cannot create inside a graph: GB0264 "Attempted to use `torch.nn.Parameter()`
    constructor with Dynamo" (measured on torch 2.13 for `.to(torch.float64)`, `.half()` and
    `.to("meta")` of a float32 Linear on CPU; `.to("cpu")` there, no change, does not break).
    It only breaks when the cast changes something: a cast to the layer's current dtype is a no-op
    and does not break (measured), e.g. a float32 model whose router is float32 already.

    ## Example
    ```python
    class Router(nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = nn.Linear(32, 4)

        def forward(self, x):
            self.classifier = self.classifier.to(torch.float32)
            return self.classifier(x.float())
    ```

    ## Fix
    Cast the layer once, outside the forward (in `__init__`, or after loading the model).

    ## Fix safety
    No automatic fix: moving the cast changes when (and whether) the parameters are converted.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM914"
    NAME = "module-cast-in-forward"
    FIX = "none"
    MESSAGE = ("`self.{attr}.{cast}()` casts a layer inside compiled code: new parameters break the graph "
               "when the dtype or device changes (GB0264); cast the layer once, outside the forward")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4).to(torch.float32)

                def forward(self, x):
                    return self.proj(x.float()).to(x.dtype)

            class P(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.embed = nn.Parameter(torch.zeros(4))

                def forward(self, x):
                    return x + self.embed.to(x.dtype)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    self.proj = self.proj.to(torch.float64)
                    return self.proj(x.double())
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        attr = X.method_call(node, *CASTS)
        if attr is None:
            return
        name = X.dotted(attr.value)
        if name is None or not name.startswith("self.") or name.count(".") != 1:
            return
        func = self.compiled_function(node)
        if func is None:
            return
        ctor = self.facts.function(func).module_attrs.get(name[5:], "")
        layer = ctor.rsplit(".", 1)[-1]
        if ctor.startswith("torch.nn.") and layer[:1].isupper() and layer not in NOT_LAYERS:
            self.report(node, self.MESSAGE.format(attr=name[5:], cast=attr.attr.value))
