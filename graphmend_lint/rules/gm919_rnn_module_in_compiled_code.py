from __future__ import annotations

import builtins

import libcst as cst
from fixit import Invalid, Valid

from .. import fastwalk
from ..analysis import explain as X
from ..analysis import tables as T
from . import base

RNNS = T.RNNS


class RnnModuleInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds calls of an `nn.LSTM`, `nn.GRU` or `nn.RNN` layer in code that runs under
    `torch.compile`: `self.lstm(x)`, where every store of `self.lstm` in the class builds one of
    them or a `ModuleList`/`Sequential` of them, and `lstm(x)` in `for lstm in self.lstms:` (also
    through `enumerate`) where every store builds such a container (pyannote's PyanNet). A store of
    anything else (a layer built by `getattr(nn, name)(...)`, a list that mixes layers) is not
    followed.

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
        if name is None:
            return
        if name.startswith("self.") and name.count(".") == 1:
            attr, shown = name[5:], f"{name}(...)"
        elif "." not in name and name not in _BUILTINS and name not in self.facts.scope.index.functions:
            attr, shown = self._loop_over(node, name), f"{name}(...)"  # `for lstm in self.lstms: lstm(x)` (PyanNet)
            if attr is None:
                return
        else:
            return
        func = self.compiled_function(node)
        if func is None:
            return
        layer = self._rnn_stores(func, attr, element=attr is not None and not name.startswith("self."))
        if layer is not None:
            self.report(node, self.MESSAGE.format(call=shown, layer=f"nn.{layer.rsplit('.', 1)[1]}"))

    def _loop_over(self, node: cst.Call, name: str) -> str | None:
        """`attr` when `name` is the target of an enclosing `for name in self.attr` (or
        `for i, name in enumerate(self.attr)`), else None."""
        up = self.parent(node)
        while up is not None and not isinstance(up, (cst.FunctionDef, cst.ClassDef)):
            if isinstance(up, cst.For):
                it, target = up.iter, up.target
                if isinstance(it, cst.Call) and X.dotted(it.func) == "enumerate" and it.args and \
                        isinstance(target, cst.Tuple) and len(target.elements) == 2:
                    it, target = it.args[0].value, target.elements[1].value
                if isinstance(target, cst.Name) and target.value == name:
                    got = X.dotted(it)
                    return got[5:] if got and got.startswith("self.") and got.count(".") == 1 else None
            up = self.parent(up)
        return None

    def _rnn_stores(self, func: cst.FunctionDef, attr: str, element: bool) -> str | None:
        """The RNN layer when every `self.<attr> = ...` of the function's class builds one, or a
        `ModuleList`/`Sequential` of them (`self.lstm(x)` raises on a ModuleList, so the call that
        runs is the layer's; `element`: the call is on an element, which a container holds)."""
        cls = self.facts.scope.index.class_of.get(func)
        if cls is None or self.facts.function(func).module_attrs.get(attr) not in RNNS | _CONTAINERS:
            return None  # the last store builds neither (module_layer_attrs): not every store an RNN
        stores = _Stores(attr, self.facts.bindings)
        fastwalk.visit(cls, stores)
        kinds = [k for k, _ in stores.ctors]
        if not kinds or None in kinds or element and "rnn" in kinds and "list" not in kinds:
            return None  # `for l in self.lstm` over a bare LSTM raises: not the break this reports
        return next(layer for _, layer in stores.ctors)


_CONTAINERS = {"torch.nn.ModuleList", "torch.nn.Sequential"}
_BUILTINS = frozenset(dir(builtins))


class _Stores(cst.CSTVisitor):
    """Every `self.<attr> = <value>`: ("rnn", layer) for an RNN layer, ("list", layer) for a
    ModuleList/Sequential of RNN layers (a list or a comprehension of them), (None, None) else."""

    def __init__(self, attr: str, bindings) -> None:
        super().__init__()
        self.attr, self.b = attr, bindings
        self.ctors: list[tuple[str | None, str | None]] = []

    def _rnn(self, value: cst.BaseExpression) -> str | None:
        q = self.b.qualify(value.func) if isinstance(value, cst.Call) else None
        return q if q in RNNS else None

    def _kind(self, value: cst.BaseExpression) -> tuple[str | None, str | None]:
        layer = self._rnn(value)
        if layer is not None:
            return "rnn", layer
        if isinstance(value, cst.Call) and self.b.qualify(value.func) in _CONTAINERS and len(value.args) == 1:
            arg = value.args[0].value
            elts = [arg.elt] if isinstance(arg, cst.ListComp) else \
                [e.value for e in arg.elements] if isinstance(arg, cst.List) and not value.args[0].star else []
            if value.args[0].star == "*" and isinstance(arg, (cst.List, cst.ListComp)):  # Sequential(*[...])
                elts = [arg.elt] if isinstance(arg, cst.ListComp) else [e.value for e in arg.elements]
            layers = [self._rnn(e) for e in elts]
            if layers and all(layers):
                return "list", layers[0]
        return None, None

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if X.dotted(t.target) == f"self.{self.attr}":
                self.ctors.append(self._kind(node.value))
