from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from . import base


class TimeCallInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds calls of functions of the `time` module (`time.perf_counter()`, `time.time()`,
    `time.monotonic()`, `time.sleep()`, ...) in code that runs under `torch.compile`.

    ## Why it breaks the graph
    Dynamo does not trace the `time` module: GB0007 "Attempted to call function marked as skipped"
    (measured on torch 2.13 for `perf_counter`, `time`, `monotonic`, `sleep`: 2 graphs / 1 break
    each; `fullgraph=True` raises). A float handed across the break into later arithmetic can also
    make inductor recompile on every call.

    ## Example
    ```python
    class Timed(nn.Module):
        def forward(self, x):
            t0 = time.perf_counter()
            y = self.body(x)
            self.elapsed = time.perf_counter() - t0
            return y
    ```

    ## Fix
    Time the compiled call from outside (around `model(x)`), use the profiler, or guard the
    bookkeeping with `if not torch.compiler.is_compiling():`.

    ## Fix safety
    No automatic fix: the measured value is used later, and a guard would leave it unset under compile.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM908"
    NAME = "time-call-in-compiled-code"
    FIX = "none"
    MESSAGE = ("`{name}()` cannot be traced and breaks the graph (GB0007); time the compiled call from outside, "
               "or guard it with `torch.compiler.is_compiling()`")

    VALID = [
        Valid(
            """
            import time
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    return x * 2

            def bench(m, x):
                t0 = time.perf_counter()
                m(x)
                return time.perf_counter() - t0
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import time
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    t0 = time.perf_counter()
                    y = x * 2
                    self.elapsed = time.perf_counter() - t0
                    return y
            """
        ),
        Invalid(
            """
            from time import sleep
            import torch

            @torch.compile
            def step(x):
                sleep(0.01)
                return x + 1
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        q = X.qualified(self, node.func)
        if q is None or not q.startswith("time.") or q.count(".") != 1:
            return
        if X.value(self, node, node) is not None:
            self.report(node, self.MESSAGE.format(name=q))
