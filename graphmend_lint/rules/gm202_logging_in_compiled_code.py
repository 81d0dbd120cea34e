from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import effects
from ..analysis.bindings import dotted
from ..fixes import build, defer, guard
from . import base


class LoggingInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds calls that emit log records in code that runs under `torch.compile`: the
    `logging` module functions (`logging.info(...)`, `logging.warning(...)`, ...) and
    `Logger` methods (`debug`, `info`, `warning`, `warn`, `error`, `exception`,
    `critical`, `fatal`, `log`, and wrappers such as transformers' `warning_once`,
    `info_once`, `warning_advice`) on loggers made by `logging.getLogger(...)` or a
    library's `get_logger(...)`, bound at module level, on `self` (or the class), or
    locally in the function, and loggers imported from another module of the project that binds
    one so at module level (`from .utils import logger`). A logger made by a project's own factory
    (deepspeed's `create_logger(...)`) is not known: what such a factory returns is not read.

    ## Why it breaks the graph
    Dynamo does not trace `logging.Logger` methods: every call site stops the graph
    ("logging.Logger method not supported for non-export cases"), runs the call in
    Python and starts a new graph after it. transformers' `warning_once` is an
    `lru_cache`-wrapped method and breaks the same way, on every call, even after it
    has printed once.

    ## Example
    ```python
    logger = logging.getLogger(__name__)

    class Decoder(nn.Module):
        def forward(self, x, use_cache=True):
            if use_cache:
                logger.warning_once("use_cache is deprecated")
            return self.proj(x)
    ```

    ## Fix
    By default (`log-strategy = "defer"`), eager runs the original call and the compiled
    branch hands the logger's name, the method and the arguments to a helper that
    `torch.compile` runs after the graph (tensors cloned at the call):
    ```python
    @torch.compiler.disable
    def _graphmend_log(name, method, *args):
        import logging

        getattr(logging if name is None else logging.getLogger(name), method)(*args)


    torch._dynamo.config.reorderable_logging_functions.add(_graphmend_log)
    ...
            if use_cache:
                if not torch.compiler.is_compiling():
                    logger.warning_once("use_cache is deprecated")
                else:
                    _graphmend_log(__name__, "warning_once", "use_cache is deprecated")
    ```
    Otherwise (below, and everywhere with `log-strategy = "guard"`) the call is guarded so
    that it runs only in eager mode:
    ```python
            if use_cache:
                if not torch.compiler.is_compiling():
                    logger.warning_once("use_cache is deprecated")
    ```

    ## Fix safety
    Safe: outside `torch.compile`, `torch.compiler.is_compiling()` is `False`, so eager
    runs emit the same records (same logger, level, message, arguments, order; the
    call stays in the same function, so `funcName`/`lineno` of the record and any
    `stacklevel` still point where they did).

    Under compile, measured on torch 2.13.0 and 2.14.1 (tests/test_gm2_defer_logging.py; eager,
    aot_eager and inductor): the deferred form keeps one graph and emits the same
    records, with the values the arguments had at the call. What differs: the record's
    `funcName`/`lineno` are the helper's; the records come after the graph's other work
    (and are lost if the graph raises); and Dynamo replays only the deferred calls of
    the frame `torch.compile` was applied to: a call in a frame Dynamo inlines (a
    submodule's `forward`, a helper) is dropped. Calls in such frames are therefore
    guarded: the deferred form is used only in a def decorated with or passed to
    `torch.compile`, or in the undecorated `forward` of a module that no other module class
    of the file builds (measured on real models, perf/results/real_models: every deferred
    record in a submodule or behind a decorator such as diffusers' `apply_lora_scale` was
    dropped under compile). What was measured
    to break and is therefore guarded instead: a `Logger` object or a category class as
    an argument of a reorderable function (so the helper takes the logger's name: only
    loggers bound at module level by `logging.getLogger(<__name__ or a literal>)` or
    transformers'/diffusers' `logging.get_logger(...)`, which return the same standard
    `Logger`, are deferred); `x.shape` as an argument (passed as `f"{x.shape}"`, so the
    format must then use `%s` only); keyword arguments (`exc_info=`, `stacklevel=`,
    `extra=`), which the reordering drops; `.item()`. `logger.exception` reads the
    exception being handled, which is gone when the call is replayed, and a `*_once`
    call is deferred only with constant arguments (a cloned tensor would defeat its
    cache). Registering `Logger` methods themselves does not work (Dynamo routes them
    to "not supported"), and `torch._dynamo.decorators.leaf_function` (which does run
    in inlined frames) fails in inductor on torch 2.13 (`AssertionError` in
    `GraphLowering.get_attr`). A call under a tensor `if` is guarded: the GM101 fix of
    that `if` leaves logging out of the compiled form. A call that runs only under
    compile (the `else` of `if not is_compiling():`) is replaced by the helper call.

    Measured on transformers 4.44.2 (tests/test_gm2_real_models.py, tiny random-weight
    models): WhisperModel 3 graphs -> 1 (`use_cache`), 12 -> 1 (`output_attentions`,
    SDPA fallback), outputs and records identical in eager; T5 with gradient
    checkpointing: both logger breaks gone, but the graph count goes 3 -> 4 because
    Dynamo then inlines the checkpointed layer, where `position_bias.requires_grad =
    True` breaks instead.

    ## When no fix is offered
    When the call's value is used, when it shares its line with other statements or
    is the body of a one-line `if`, and when an argument may have a side effect that a
    guarded call would skip under compile: any call that is not known to only read (shape and
    dtype queries, reductions, casts, `str`/`len`/`tuple(x.shape)`, string formatting,
    `torch`/`math` functions other than random draws; not `self.load_state_dict(...)`, a method of
    your own, `.pop()`, `next()`, an in-place `.add_()`), and `:=`. A logger created inside compiled code (`log = logging.getLogger(...)`
    in `forward`) breaks the graph by itself (Dynamo cannot trace the logging
    manager): the calls are guarded, the creation stays; create it at module level or
    in `__init__`. Loggers that are parameters of the function, or names bound to
    something other than a logger factory, are not reported.
    """

    CODE = "GM202"
    NAME = "logging-in-compiled-code"
    FIX = "safe"
    MESSAGE = "logging call in compiled code breaks the graph; guard it with `torch.compiler.is_compiling()`"
    DEFERRED = "under compile, log it after the graph (deferred)"
    FIX_TITLE = "log after the graph under compile (deferred)"

    VALID = [
        Valid(
            """
            import logging
            import torch
            from torch import nn

            logger = logging.getLogger(__name__)

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        logger.info("shape %s", x.shape)
                    return x

            def train_step(x):
                logger.info("outside compiled code")
            """
        ),
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, logger):
                    logger.info("a parameter, not a known logger")
                    return x
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import logging
            import torch
            from torch import nn

            logger = logging.getLogger(__name__)

            class M(nn.Module):
                def forward(self, x):
                    logger.warning("shape %s", x.shape)
                    return x * 2
            """,
            expected_replacement="""
            import logging
            import torch
            from torch import nn

            logger = logging.getLogger(__name__)

            @torch.compiler.disable
            def _graphmend_log(name, method, *args):
                # a logging call deferred by graphmend-lint: torch.compile runs it after the graph
                import logging

                getattr(logging if name is None else logging.getLogger(name), method)(*args)


            torch._dynamo.config.reorderable_logging_functions.add(_graphmend_log)


            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        logger.warning("shape %s", x.shape)
                    else:
                        _graphmend_log(__name__, "warning", "shape %s", f"{x.shape}")
                    return x * 2
            """,
        ),
        Invalid(
            """
            import logging
            import torch

            @torch.compile
            def step(x):
                logging.info("step")
                return x + 1
            """,
            expected_replacement="""
            import logging
            import torch

            @torch.compiler.disable
            def _graphmend_log(name, method, *args):
                # a logging call deferred by graphmend-lint: torch.compile runs it after the graph
                import logging

                getattr(logging if name is None else logging.getLogger(name), method)(*args)


            torch._dynamo.config.reorderable_logging_functions.add(_graphmend_log)


            @torch.compile
            def step(x):
                if not torch.compiler.is_compiling():
                    logging.info("step")
                else:
                    _graphmend_log(None, "info", "step")
                return x + 1
            """,
        ),
        Invalid(
            """
            import torch
            from transformers.utils import logging

            logger = logging.get_logger(__name__)

            class M(torch.nn.Module):
                def forward(self, x):
                    ok = logger.warning_once("value used")
                    return x
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        found = self._log_call(node)
        if found is None:
            return
        name = dotted(node.func) or "logger." + node.func.attr.value  # type: ignore[union-attr]
        if self.settings.log_strategy == "defer":
            message = f"`{name}()` in compiled code breaks the graph; {self.DEFERRED}"
            if self.report_deferred(node, message, self.FIX_TITLE, "log"):
                return
        message = (f"`{name}()` in compiled code breaks the graph; guard it with `torch.compiler.is_compiling()` "
                   f"({guard.DROPPED})")
        self.report_guard(node, message)

    def _log_call(self, node: cst.Call) -> tuple[cst.FunctionDef, cst.BaseExpression | None] | None:
        """(compiled function, logger name for the deferred form or None) of a log call."""
        func = node.func
        if self.facts.bindings.qualify(func) in effects.LOGGING_FUNCS:
            compiled = self.compiled_function(node)
            return None if compiled is None else (compiled, cst.Name("None"))
        if not (isinstance(func, cst.Attribute) and func.attr.value in effects.LOGGER_METHODS):
            return None
        compiled = self.compiled_function(node)
        if compiled is None:
            return None
        finder = self.__dict__.setdefault("_loggers", effects.LoggerFinder(self.facts))
        if not finder.is_logger(func.value, compiled):
            return None
        return compiled, finder.module_logger_name(func.value, compiled)

    def is_site(self, call: cst.Call) -> bool:
        return self._log_call(call) is not None

    def defer_site(self, call: cst.Call) -> tuple[cst.SimpleStatementLine, list[cst.Arg]] | None:
        found = self._log_call(call)
        if found is None or found[1] is None or guard.refusal(call, self.parent, self.facts.bindings) is not None:
            return None
        compiled, name = found
        method = (dotted(call.func) or "").split(".")[-1]
        if method == "exception":  # reads the exception being handled, gone when the call is replayed
            return None
        value = self.facts.function(compiled).value
        args = defer.log_args(call, name, method, value, self.spell("torch.Tensor")[0], defer.exception_names(call, self.parent))
        if args is None or (method.endswith("_once") and not defer.constant_args(args[2:])):
            return None
        line = build.sole_statement_line(call, self.parent)
        assert line is not None
        return line, args
