from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from ..analysis import tables as T
from . import base


class ParameterMadeInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds `nn.Parameter(...)`, and `torch.nn` layers that make parameters (`nn.Linear`, `nn.Conv2d`,
    `nn.Embedding`, `nn.Embedding.from_pretrained`, `nn.LayerNorm`, `nn.LazyLinear`, ...), built in code
    that runs under `torch.compile` (not in a module's own `__init__`, which `--compiled-scope all`
    counts as compiled): a layer made
    lazily in `forward` (UDOP's `new_bias = nn.Embedding(...)` when it widens its relative-position
    table), or a parameter wrapped on every call.

    ## Why it breaks the graph
    Dynamo does not trace `torch.nn.Parameter()`: "Attempted to use `torch.nn.Parameter()` constructor
    with Dynamo". Measured on torch 2.13 (eager backend): 1 break at the call for `nn.Parameter(t)`
    (also with `requires_grad=False`), `nn.Linear`, `nn.Embedding`, `nn.Conv1d`, `nn.LayerNorm`,
    `nn.GroupNorm`, `nn.BatchNorm1d`, `nn.RMSNorm`, `nn.PReLU`, `nn.InstanceNorm1d(affine=True)`; none for
    `nn.ReLU`, `nn.Dropout`, `nn.InstanceNorm1d`, `nn.LayerNorm(n, elementwise_affine=False)`,
    `nn.GroupNorm(..., affine=False)`, `nn.BatchNorm1d(n, affine=False)` (buffers only). No config
    removes it.

    ## Example
    ```python
    class RelativeBias(nn.Module):
        def forward(self, x):
            if self.expand:
                self.bias = nn.Embedding(self.buckets + 2, self.heads)
                self.expand = False
            return x + self.bias(self.positions)
    ```

    ## Fix
    Build layers and parameters in `__init__` (or before compiling: widen the table once, outside the
    compiled call); in `forward`, use tensors (`torch.zeros(...)`, `F.linear(x, w)`).

    ## Fix safety
    No automatic fix: moving a layer out of `forward` changes when its parameters are made and which
    optimizer sees them.

    ## When no fix is offered
    Always (detection only). A flag given as anything but `True`/`False` (`affine=self.affine`) is not
    reported: precision first.
    """

    CODE = "GM923"
    NAME = "parameter-made-in-compiled-code"
    FIX = "none"
    MESSAGE = ("`{name}(...)` in compiled code makes a parameter (`torch.nn.Parameter()`), which Dynamo does not "
               "trace: it breaks the graph; build it in `__init__`, or use plain tensors here")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(4, 4)
                    self.scale = nn.Parameter(torch.ones(4))

                def forward(self, x):
                    x = nn.LayerNorm(4, elementwise_affine=False)(x)
                    return nn.ReLU()(self.lin(x) * self.scale)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if self.expand:
                        self.bias = nn.Embedding(self.buckets + 2, self.heads)
                    return x + self.bias(self.positions)
            """
        ),
        Invalid(
            """
            import torch

            class M(torch.nn.Module):
                def forward(self, x):
                    return x * torch.nn.Parameter(torch.ones(4))
            """
        ),
        Invalid(
            """
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    return nn.InstanceNorm1d(4, affine=True)(x)
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        q = _public(X.qualified(self, node.func))
        if q is None or not (q in T.PARAMETER or q in T.PARAMETER_LAYERS and _makes_parameters(node, q)):
            return
        func = self.compiled_function(node)
        if func is None or func.name.value in T.INIT_METHODS and self._module_method(func):
            return  # a module's own `__init__` (compiled only under `--compiled-scope all`): where layers belong
        self.report(node, self.MESSAGE.format(name=X.dotted(node.func) or q))

    def _module_method(self, func: cst.FunctionDef) -> bool:
        cls = self.facts.scope.index.class_of.get(func)
        return cls is not None and cls.name.value in self.facts.scope.module_classes


def _public(q: str | None) -> str | None:
    """`torch.nn.modules.linear.Linear` -> `torch.nn.Linear` (where torch.nn defines it)."""
    if q is not None and q.startswith("torch.nn.modules."):
        parts = q.split(".")
        return "torch.nn." + ".".join(parts[4:]) if len(parts) > 4 else q
    return q


def _makes_parameters(call: cst.Call, q: str) -> bool:
    """The layer gets parameters: always, or when its flag is (by default or literally) true."""
    flag = T.PARAMETER_LAYERS[q]
    if flag is None:
        return True
    keyword, position, default = flag
    if any(a.star for a in call.args):
        return False  # `nn.LayerNorm(*dims)`: the flag may be among them
    given = [a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword]
    positional = [a.value for a in call.args if a.keyword is None]
    if not given and len(positional) > position:
        given = [positional[position]]
    if not given:
        return default
    value = given[0]
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return value.value == "True"
    return False  # not a literal: not known (precision first)
