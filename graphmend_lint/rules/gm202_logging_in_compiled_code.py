from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import effects
from ..analysis.bindings import dotted
from ..fixes import guard
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
    locally in the function.

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
    The call is guarded so that it runs only in eager mode:
    ```python
            if use_cache:
                if not torch.compiler.is_compiling():
                    logger.warning_once("use_cache is deprecated")
    ```

    ## Fix safety
    Safe: outside `torch.compile`, `torch.compiler.is_compiling()` is `False`, so eager
    runs emit the same records (same logger, level, message, arguments, order; the
    call stays in the same function, so `funcName`/`lineno` of the record and any
    `stacklevel` still point where they did). Under compile the record is not emitted.

    Why not defer the record instead (`log-strategy = "defer"`), measured on torch
    2.13: `torch._dynamo.config.reorderable_logging_functions` ignores `Logger` methods
    (with `logger.warning` or `logging.Logger.warning` registered, the break stays:
    Dynamo routes every logger method to "not supported"), and
    `ignore_logging_functions` drops the record. A module-level helper that calls the
    logger, registered as reorderable, does keep one graph, but: without
    `torch.compiler.disable` Dynamo traces `logging` internals when the deferred call
    is replayed (one extra compiled graph and two spurious `UserWarning`s about
    `time.time` and `_thread.get_ident`); with it, the record's `funcName`/`lineno`
    point into `torch/_dynamo/eval_frame.py`; keyword arguments (`exc_info=`,
    `stacklevel=`, `extra=`) are dropped by the reordering; loggers reached through
    `self` or a local name cannot be passed to it (only tensors, constants and format
    strings may be); and calls deferred in frames Dynamo inlines are never replayed,
    which is where library log sites sit (the Whisper and T5 `warning_once` sites are
    in decoder stacks and attention layers, submodules of the compiled model). The
    guard is therefore the only fix, whatever `log-strategy` says.

    Measured on transformers 4.44.2 (tests/test_gm2_real_models.py, tiny random-weight
    models): WhisperModel 3 graphs -> 1 (`use_cache`), 12 -> 1 (`output_attentions`,
    SDPA fallback), outputs and records identical in eager; T5 with gradient
    checkpointing: both logger breaks gone, but the graph count goes 3 -> 4 because
    Dynamo then inlines the checkpointed layer, where `position_bias.requires_grad =
    True` breaks instead.

    ## When no fix is offered
    When the call's value is used, when it shares its line with other statements or
    is the body of a one-line `if`, and when an argument has a side effect
    (`.pop()`, `next()`, an in-place `.add_()`, `:=`) that a guarded call would skip
    under compile. A logger created inside compiled code (`log = logging.getLogger(...)`
    in `forward`) breaks the graph by itself (Dynamo cannot trace the logging
    manager): the calls are guarded, the creation stays; create it at module level or
    in `__init__`. Loggers that are parameters of the function, or names bound to
    something other than a logger factory, are not reported.
    """

    CODE = "GM202"
    NAME = "logging-in-compiled-code"
    FIX = "safe"
    MESSAGE = "logging call in compiled code breaks the graph; guard it with `torch.compiler.is_compiling()`"

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

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        logger.warning("shape %s", x.shape)
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

            @torch.compile
            def step(x):
                if not torch.compiler.is_compiling():
                    logging.info("step")
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
        assert self.facts is not None
        func = node.func
        if self.facts.bindings.qualify(func) in effects.LOGGING_FUNCS:
            is_log = True
        elif isinstance(func, cst.Attribute) and func.attr.value in effects.LOGGER_METHODS:
            is_log = None  # decided below, once we know the call is compiled
        else:
            return
        compiled = self.compiled_function(node)
        if compiled is None:
            return
        if is_log is None:
            finder = self.__dict__.setdefault("_loggers", effects.LoggerFinder(self))
            assert isinstance(func, cst.Attribute)
            if not finder.is_logger(func.value, compiled):
                return
        name = dotted(func) or "logger." + func.attr.value  # type: ignore[union-attr]
        message = (f"`{name}()` in compiled code breaks the graph; guard it with `torch.compiler.is_compiling()` "
                   f"({guard.DROPPED})")
        self.report_guard(node, message)
