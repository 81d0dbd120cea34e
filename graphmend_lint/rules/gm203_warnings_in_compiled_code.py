from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import effects
from ..fixes import guard
from . import base


class WarningsInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds `warnings.warn(...)` (and `warnings.warn_explicit(...)`, any import spelling)
    in code that runs under `torch.compile`.

    ## Why it breaks the graph
    `warnings.warn` is the C function `_warnings.warn`, which Dynamo marks as skipped:
    each call site stops the graph ("Attempted to call function marked as skipped"),
    runs in Python and starts a new graph after it.

    ## Example
    ```python
    class Head(nn.Module):
        def forward(self, x):
            if self.legacy:
                warnings.warn("legacy mode is deprecated", FutureWarning, stacklevel=2)
            return self.proj(x)
    ```

    ## Fix
    The call is guarded so that it runs only in eager mode:
    ```python
            if self.legacy:
                if not torch.compiler.is_compiling():
                    warnings.warn("legacy mode is deprecated", FutureWarning, stacklevel=2)
    ```

    ## Fix safety
    Safe: outside `torch.compile`, `torch.compiler.is_compiling()` is `False` and the
    call runs exactly as before: same message, category and order, and the same
    `stacklevel` result, because an `if` adds no frame (moving the call into a helper
    function would shift the reported file and line by one frame, and with it the
    "default" filter's once-per-location bookkeeping). Under compile the warning is
    not issued.

    Why not defer it (`log-strategy = "defer"`), measured on torch 2.13: with
    `warnings.warn` itself in `torch._dynamo.config.reorderable_logging_functions`, a
    message-only call keeps one graph but the deferred warning is attributed to the
    `def` line of the compiled function instead of the call line; `stacklevel=` is
    silently dropped by the reordering (only positional arguments are replayed); and
    a category argument (a class) is refused ("can't actually be reordered"), so the
    break stays. A module-level helper with the category fixed inside keeps one graph
    only when wrapped in `torch.compiler.disable`, and then the warning is attributed
    to `torch/_dynamo/eval_frame.py`. Calls deferred in frames Dynamo inlines (helpers,
    submodule forwards) are never replayed. Registering `warnings.warn` itself is a
    process-wide setting. The guard is therefore the only fix, whatever `log-strategy`
    says.

    ## When no fix is offered
    When the call's value is used, when it shares its line with other statements or
    is the body of a one-line `if`, and when an argument has a side effect
    (`.pop()`, `next()`, an in-place `.add_()`, `:=`) that a guarded call would skip
    under compile.
    """

    CODE = "GM203"
    NAME = "warnings-in-compiled-code"
    FIX = "safe"
    MESSAGE = ("`warnings.warn()` in compiled code breaks the graph; guard it with `torch.compiler.is_compiling()` "
               f"({guard.DROPPED})")

    VALID = [
        Valid(
            """
            import warnings
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        warnings.warn("guarded")
                    return x

            def setup():
                warnings.warn("outside compiled code")
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import warnings
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    warnings.warn("deprecated", FutureWarning, stacklevel=2)
                    return x * 2
            """,
            expected_replacement="""
            import warnings
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        warnings.warn("deprecated", FutureWarning, stacklevel=2)
                    return x * 2
            """,
        ),
        Invalid(
            """
            from warnings import warn
            import torch

            @torch.compile
            def step(x):
                return warn("value used") or x
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        assert self.facts is not None
        if self.facts.bindings.qualify(node.func) not in effects.WARN_FUNCS:
            return
        if self.compiled_function(node) is None:
            return
        self.report_guard(node, self.MESSAGE)
