from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from . import base


class YieldInCompiledFunctionRule(base.GraphMendRule):
    """
    ## What it does
    Finds `yield` / `yield from` directly in a function that is compiled itself: a `forward` of an
    `nn.Module`, a function decorated with or passed to `torch.compile`. Generators that such a
    function defines or calls, in its file or another (a `@contextmanager` used in a `with`
    included), and generator expressions are not reported.

    ## Why it breaks the graph
    Dynamo does not compile a generator frame. Measured on torch 2.13: the whole function runs in
    eager with 0 graphs and no graph-break message at all; with `fullgraph=True` it raises
    GB0003 "Attempt to trace generator". A generator called from compiled code is inlined and
    traced (measured: 1 graph / 0 breaks).

    ## Example
    ```python
    class Layers(nn.Module):
        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
                yield x
    ```

    ## Fix
    Return a list or tuple (`outs.append(x)` ... `return outs`), or keep the generator in a helper
    that the compiled function consumes.

    ## Fix safety
    No automatic fix: callers iterate the generator lazily and may stop early.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM912"
    NAME = "yield-in-compiled-function"
    FIX = "none"
    MESSAGE = ("compiled function is a generator: Dynamo skips the whole frame (GB0003 under fullgraph); "
               "return a list or tuple, or move the generator into a helper it consumes")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    def scaled():
                        for i in range(3):
                            yield x * i
                    return sum(scaled()) + sum(x * i for i in range(2))
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    yield x * 2
                    yield x + 1
            """
        ),
    ]

    def visit_Yield(self, node: cst.Yield) -> None:
        assert self.facts is not None
        func = self.function_of(node)
        if func is None or func not in self.facts.scope.entries:
            return
        if self.compiled_function(node) is None:
            return
        flagged = self.__dict__.setdefault("_flagged", set())
        if func in flagged:
            return
        flagged.add(func)
        self.report(node, self.MESSAGE)
