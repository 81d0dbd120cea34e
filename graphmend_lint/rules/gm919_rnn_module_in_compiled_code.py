from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from .. import fastwalk
from ..analysis import explain as X
from . import base

RNNS = {f"torch.nn.{n}" for n in ("LSTM", "GRU", "RNN")} | {f"torch.nn.modules.rnn.{n}" for n in ("LSTM", "GRU", "RNN")}


class RnnModuleInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds calls of an `nn.LSTM`, `nn.GRU` or `nn.RNN` layer (`self.lstm(x)`, where every store of
    `self.lstm` in the class builds one of them) in code that runs under `torch.compile`.

    ## Why it breaks the graph
    Dynamo does not trace these layers' fused kernels: GB0014 "Attempted to wrap RNN, GRU, or LSTM"
    (measured on torch 2.13: the call breaks the graph and the layer runs eagerly), unless
    `torch._dynamo.config.allow_rnn = True`. The cells (`nn.LSTMCell`, `nn.GRUCell`) are traced.

    ## Example
    ```python
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(64, 64, batch_first=True)

        def forward(self, x):
            y, _ = self.lstm(x)
            return y
    ```

    ## Fix
    Set `torch._dynamo.config.allow_rnn = True` before compiling (Dynamo then traces the layer's
    decomposition: check its speed), compile the parts around the layer, or write the recurrence
    with `nn.LSTMCell`.

    ## Fix safety
    No automatic fix: the remedy is a global setting or a different layer.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM919"
    NAME = "rnn-module-in-compiled-code"
    FIX = "none"
    MESSAGE = ("`{call}` calls an `{layer}`, which Dynamo does not trace: it breaks the graph (GB0014); set "
               "`torch._dynamo.config.allow_rnn = True`, or compile around the layer")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cell = nn.LSTMCell(4, 4)
                    self.rnn = nn.LSTM(4, 4) if torch.cuda.is_available() else nn.Identity()

                def forward(self, x, state):
                    return self.cell(x, state), self.rnn(x)
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
                    self.lstm = nn.LSTM(4, 4, batch_first=True)

                def forward(self, x):
                    y, _ = self.lstm(x)
                    return y
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = X.dotted(node.func)
        if name is None or not name.startswith("self.") or name.count(".") != 1:
            return
        func = self.compiled_function(node)
        if func is None:
            return
        layer = self.facts.function(func).module_attrs.get(name[5:])
        if layer in RNNS and self._only_rnn_stores(func, name[5:]):
            self.report(node, self.MESSAGE.format(call=f"{name}(...)", layer=f"nn.{layer.rsplit('.', 1)[1]}"))

    def _only_rnn_stores(self, func: cst.FunctionDef, attr: str) -> bool:
        """Every `self.<attr> = ...` of the function's class builds an RNN layer (no other value)."""
        cls = self.facts.scope.index.class_of.get(func)
        if cls is None:
            return False
        stores = _Stores(attr, self.facts.bindings)
        fastwalk.visit(cls, stores)
        return bool(stores.ctors) and all(c in RNNS for c in stores.ctors)


class _Stores(cst.CSTVisitor):
    """The qualified callee of every `self.<attr> = <call>` (None for any other value)."""

    def __init__(self, attr: str, bindings) -> None:
        super().__init__()
        self.attr, self.b = attr, bindings
        self.ctors: list[str | None] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if X.dotted(t.target) == f"self.{self.attr}":
                self.ctors.append(self.b.qualify(node.value.func) if isinstance(node.value, cst.Call) else None)
