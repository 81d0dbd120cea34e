from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from ..analysis import tables as T
from . import base

RNG_STATE = T.RNG_STATE


_LAST_NAMES = frozenset(q.rsplit(".", 1)[-1] for q in RNG_STATE)


class RngStateInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds calls, in code that runs under `torch.compile`, that read or set the global random state
    or make a generator: `torch.get_rng_state()` / `set_rng_state()` (reversible layers record and
    replay the state: performer's `Deterministic.record_rng`), `torch.manual_seed()`,
    `torch.initial_seed()`, and `torch.Generator(...)`.

    ## Why it breaks the graph
    Measured on torch 2.13: Dynamo does not trace them ("Attempted to call function marked as
    skipped"; `initial_seed`: GB0208 "torch.* op returned non-Tensor"; a new `torch.Generator`: "An
    opaque object was created in the middle of the program", and its methods break again). The graph
    ends before the call and a new one starts after it; in a loop, or where the frame cannot be
    resumed, the whole function runs eagerly. `torch.seed()` is traced (measured) and not reported;
    the `torch.cuda` state calls are not measured here (no GPU) and not reported.

    ## Example
    ```python
    class Deterministic(nn.Module):
        def forward(self, x, record_rng=False):
            if record_rng:
                self.cpu_state = torch.get_rng_state()
            return self.net(x)
    ```

    ## Fix
    Save or set the random state around the call of the compiled model, or move the code into a
    function that is not compiled (`@torch.compiler.disable`); pass a generator made outside.
    Inside compiled code, random ops draw from the global generator as they do in eager mode.

    ## Fix safety
    No automatic fix: where the state is saved or set decides which draws it covers.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM921"
    NAME = "rng-state-in-compiled-code"
    FIX = "none"
    MESSAGE = ("`{name}()` is not traceable and breaks the graph ({why}); save or set the random state "
               "around the compiled call instead")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    torch.seed()
                    return x + torch.randn_like(x)

            def run(m, x):
                state = torch.get_rng_state()
                y = m(x)
                torch.set_rng_state(state)
                return y
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
                    state = torch.get_rng_state()
                    return x + torch.randn_like(x), state
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    g = torch.Generator().manual_seed(0)
                    return x + torch.randn(x.shape, generator=g)
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if last not in _LAST_NAMES:
            return
        q = X.qualified(self, func)
        if q in RNG_STATE and self.compiled_function(node) is not None:
            self.report(node, self.MESSAGE.format(name=X.dotted(node.func) or q, why=RNG_STATE[q]))
