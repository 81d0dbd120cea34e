from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from . import _effects, base


class PrintInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds calls of the builtin `print()` in code that runs under `torch.compile`
    (a `forward` of an `nn.Module`, a compiled function, or a same-file helper they call).

    ## Why it breaks the graph
    Dynamo cannot put `print` in an FX graph: it stops the graph before the call, runs
    `print` in Python and starts a new graph after it ("Failed to trace builtin operator",
    one graph break per call site).

    ## Example
    ```python
    class Block(nn.Module):
        def forward(self, x):
            print("block input", x.shape)
            return self.proj(x)
    ```

    ## Fix
    The call is guarded so that it runs only in eager mode:
    ```python
            if not torch.compiler.is_compiling():
                print("block input", x.shape)
    ```

    ## Fix safety
    Safe: `torch.compiler.is_compiling()` is `False` outside `torch.compile`, so eager
    runs print exactly what they printed before, in the same order. Under compile the
    message is not printed (that is the price of an unbroken graph).

    ## When no fix is offered
    When `print(...)` is not a statement of its own (its value is used, it shares a line
    with other statements, or it is the body of a one-line `if`), the finding is reported
    without a fix. When the file does not import `torch` itself, `graphmend-lint --fix`
    adds `import torch`; plain `fixit fix` leaves that finding for the CLI.
    """

    CODE = "GM201"
    NAME = "print-in-compiled-code"
    FIX = "safe"
    MESSAGE = "`print()` in compiled code breaks the graph; guard it with `torch.compiler.is_compiling()`"

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        print(x.shape)
                    return x

            def train_step(x):
                print("outside compiled code")
            """
        ),
        Valid(
            """
            import torch

            class NotAModule:
                def forward(self, x):
                    print(x)
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
                    # show the shape
                    print("shape", x.shape)
                    return x * 2
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    # show the shape
                    if not torch.compiler.is_compiling():
                        print("shape", x.shape)
                    return x * 2
            """,
        ),
        Invalid(
            """
            import torch as th

            @th.compile
            def step(x):
                print(x)
                return x + 1
            """,
            expected_replacement="""
            import torch as th

            @th.compile
            def step(x):
                if not th.compiler.is_compiling():
                    print(x)
                return x + 1
            """,
        ),
        Invalid(
            """
            import torch

            class M(torch.nn.Module):
                def forward(self, x):
                    n = print(x)
                    return x
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Name) and node.func.value == "print"):
            return
        assert self.facts is not None
        if self.facts.bindings.qualify(node.func) is not None or self.compiled_function(node) is None:
            return
        _effects.report(self, node, self.MESSAGE)
