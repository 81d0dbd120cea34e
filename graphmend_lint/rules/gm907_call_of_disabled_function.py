from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from . import base

DISABLE = {"torch.compiler.disable", "torch._dynamo.disable"}


class CallOfDisabledFunctionRule(base.GraphMendRule):
    """
    ## What it does
    Finds calls, in code that runs under `torch.compile`, of functions or methods decorated with
    `@torch.compiler.disable` / `@torch._dynamo.disable` (with or without arguments): of the same
    file, and of functions the file imports from another file of the project (the project
    index); of module-level names bound to `torch.compiler.disable(fn)`,
    and of `torch.compiler.disable(fn)(...)` itself.

    ## Why it breaks the graph
    Dynamo never traces a disabled function: it ends the graph before the call, runs the function
    eagerly and starts a new graph after it (GB0098 "Skip calling `torch.compiler.disable()`d
    function"; measured on torch 2.13: 2 graphs / 1 break; `fullgraph=True` raises). Each call
    site is one break, every time it runs (a call in a loop is one break per iteration).

    ## Example
    ```python
    @torch.compiler.disable
    def log_stats(t):
        ...

    class Block(nn.Module):
        def forward(self, x):
            log_stats(x)
            return self.proj(x)
    ```

    ## Fix
    Move the call out of the compiled region, make the function traceable and drop the decorator,
    or register it as a custom op (`torch.library.custom_op`) so that it is one node of the graph.

    ## Fix safety
    No automatic fix: the decorator is usually there on purpose.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM907"
    NAME = "call-of-disabled-function"
    FIX = "none"
    MESSAGE = ("`{name}` is marked `torch.compiler.disable`: calling it breaks the graph (GB0098); move the "
               "call out of compiled code, or make it a custom op (`torch.library.custom_op`)")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            @torch.compiler.disable
            def log_stats(t):
                return None

            class M(nn.Module):
                def forward(self, x):
                    return x * 2

            def train_step(m, x):
                log_stats(x)
                return m(x)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            @torch.compiler.disable
            def log_stats(t):
                return None

            class M(nn.Module):
                def forward(self, x):
                    log_stats(x)
                    return x * 2
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                @torch._dynamo.disable(recursive=False)
                def _check(self, x):
                    return x

                def forward(self, x):
                    return self._check(x) * 2
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self._disabled(node)
        if name is not None and X.value(self, node, node) is not None:
            self.report(node, self.MESSAGE.format(name=name))

    def _disabled(self, node: cst.Call) -> str | None:
        assert self.facts is not None
        scope = self.facts.scope
        func = node.func
        if isinstance(func, cst.Call) and X.qualified(self, func.func) in DISABLE:
            return X.dotted(func.func) or "torch.compiler.disable(...)"
        name = X.dotted(func)
        if name is None:
            return None
        target = None
        if name in scope.index.functions:
            target = scope.index.functions[name]
        elif name.startswith("self.") and name.count(".") == 1:
            cls = self._class_of(node)
            target = scope.method(cls, name[5:]) if cls is not None else None
        elif name in scope.ext.disabled:  # a def of another file of the project (the project index)
            return name
        elif name in scope.index.module_aliases:
            alias = scope.index.module_aliases[name]
            if isinstance(alias, cst.Call) and X.qualified(self, alias.func) in DISABLE:
                return name
        if target is not None and any(self._is_disable(d.decorator) for d in target.decorators):
            return None if scope.reorderable(name) else name
        return None

    def _is_disable(self, dec: cst.BaseExpression) -> bool:
        return X.qualified(self, dec.func if isinstance(dec, cst.Call) else dec) in DISABLE

    def _class_of(self, node: cst.CSTNode) -> cst.ClassDef | None:
        f = self.function_of(node)
        while f is not None:
            cls = self.facts.scope.index.class_of.get(f)
            if cls is not None:
                return cls
            f = self.function_of(f)
        return None
