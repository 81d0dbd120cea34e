from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import effects
from ..fixes import build, defer, guard
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
    By default (`log-strategy = "defer"`), eager runs the original call and the compiled
    branch hands the message and the category's name to a helper that `torch.compile`
    runs after the graph:
    ```python
    @torch.compiler.disable
    def _graphmend_warn(message, category):
        import builtins
        import warnings

        warnings.warn(message, getattr(builtins, category))


    torch._dynamo.config.reorderable_logging_functions.add(_graphmend_warn)
    ...
            if self.legacy:
                if not torch.compiler.is_compiling():
                    warnings.warn("legacy mode is deprecated", FutureWarning, stacklevel=2)
                else:
                    _graphmend_warn("legacy mode is deprecated", "FutureWarning")
    ```
    Otherwise (below, and everywhere with `log-strategy = "guard"`) the call is guarded:
    ```python
            if self.legacy:
                if not torch.compiler.is_compiling():
                    warnings.warn("legacy mode is deprecated", FutureWarning, stacklevel=2)
    ```

    ## Fix safety
    Safe: outside `torch.compile`, `torch.compiler.is_compiling()` is `False` and the
    call runs exactly as before: same message, category and order, and the same
    `stacklevel` result, because an `if` adds no frame.

    Under compile, measured on torch 2.13.0 and 2.14.1 (tests/test_gm2_defer_logging.py; eager,
    aot_eager and inductor): one graph, and the same warnings (message and category),
    in order. What differs: the warning's location is the helper's line, not the
    caller's (`stacklevel` has nothing to point at when the call is replayed after the
    graph), so under the "default" filter two sites with the same message warn once, not
    twice; and Dynamo replays only the deferred calls of the frame `torch.compile` was
    applied to, so a warning in a frame Dynamo inlines (a submodule's `forward`, a
    helper) would be dropped, so there the call is guarded: the deferred form is used only
    in a def decorated with or passed to `torch.compile`, or in the undecorated `forward`
    of a module that no other module class of the file builds. Measured to break, hence
    guarded instead: a
    category class as an argument (the helper takes the name of a builtin category, so
    a project's own `Warning` subclass is guarded), `warnings.warn` itself registered
    (the location becomes the compiled function's `def` line, `stacklevel=` is
    dropped), `source=`, `*args`, and messages that call `.item()` or are not text
    known at trace time. A call under a tensor `if` is guarded (the GM101 fix of that
    `if` leaves it out of the compiled form); one that runs only under compile is
    replaced by the helper call.

    ## When no fix is offered
    When the call's value is used, when it shares its line with other statements or
    is the body of a one-line `if`, and when an argument may have a side effect that a
    guarded call would skip under compile: any call that is not known to only read (shape and
    dtype queries, reductions, casts, `str`/`len`/`tuple(x.shape)`, string formatting,
    `torch`/`math` functions other than random draws; not `self.load_state_dict(...)`, a method of
    your own, `.pop()`, `next()`, an in-place `.add_()`), and `:=`.
    """

    CODE = "GM203"
    NAME = "warnings-in-compiled-code"
    FIX = "safe"
    MESSAGE = ("`warnings.warn()` in compiled code breaks the graph; guard it with `torch.compiler.is_compiling()` "
               f"({guard.DROPPED})")

    MESSAGE_DEFER = "`warnings.warn()` in compiled code breaks the graph; under compile, warn after the graph (deferred)"
    FIX_TITLE = "warn after the graph under compile (deferred)"

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

            @torch.compiler.disable
            def _graphmend_warn(message, category):
                # warnings.warn() deferred by graphmend-lint: torch.compile runs it after the graph
                import builtins
                import warnings

                warnings.warn(message, getattr(builtins, category))


            torch._dynamo.config.reorderable_logging_functions.add(_graphmend_warn)


            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        warnings.warn("deprecated", FutureWarning, stacklevel=2)
                    else:
                        _graphmend_warn("deprecated", "FutureWarning")
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
        if not self._is_warn(node):
            return
        if self.settings.log_strategy == "defer" and self.report_deferred(node, self.MESSAGE_DEFER, self.FIX_TITLE,
                                                                         "warn"):
            return
        self.report_guard(node, self.MESSAGE)

    def _is_warn(self, node: cst.Call) -> bool:
        return (self.facts.bindings.qualify(node.func) in effects.WARN_FUNCS
                and self.compiled_function(node) is not None)

    def is_site(self, call: cst.Call) -> bool:
        return self._is_warn(call)

    def defer_site(self, call: cst.Call) -> tuple[cst.SimpleStatementLine, list[cst.Arg]] | None:
        if not self._is_warn(call) or self.facts.bindings.qualify(call.func) != "warnings.warn":
            return None
        if guard.refusal(call, self.parent, self.facts.bindings) is not None:
            return None
        category = defer.builtin_category(call, self.facts.module, self.facts.bindings)
        func = self.function_of(call)
        if category is None or func is None:
            return None
        args = defer.warn_args(call, category, self.facts.function(func).value, self.spell("torch.Tensor")[0],
                               defer.exception_names(call, self.parent))
        if args is None:
            return None
        line = build.sole_statement_line(call, self.parent)
        assert line is not None
        return line, args
