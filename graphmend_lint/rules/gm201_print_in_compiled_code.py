from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis.bindings import dotted
from ..fixes import build, defer, guard
from . import base


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
    By default (`log-strategy = "defer"`) the compiled branch hands the same arguments to
    a helper that `torch.compile` runs after the graph, with tensors cloned at the call so
    that later in-place ops do not change what is printed; eager runs the original line:
    ```python
    @torch.compiler.disable
    def _graphmend_print(*args):
        print(*args)


    torch._dynamo.config.reorderable_logging_functions.add(_graphmend_print)
    ...
            if not torch.compiler.is_compiling():
                print("block", x.shape, h)
            else:
                _graphmend_print("block", f"{x.shape}", h.detach().clone())
    ```
    Where the call cannot be deferred (below), and everywhere with `log-strategy = "guard"`,
    the call is guarded so that it runs only in eager mode:
    ```python
            if not torch.compiler.is_compiling():
                print("block input", x.shape)
    ```
    Only the helper is registered, never `print` itself, so no other code is reordered.

    ## Fix safety
    Safe: `torch.compiler.is_compiling()` is `False` outside `torch.compile`, so eager
    runs print exactly what they printed before, in the same order, with either strategy
    (the eager branch is the original line). Under compile the guard prints nothing. A
    print that runs only under compile (the `else` of `if not is_compiling():`) is
    replaced by the helper call alone; a print under a tensor `if` keeps the guard (the
    GM101 fix of that `if` leaves it out of the compiled form).

    The defer strategy, measured on torch 2.13 (tests/test_gm2_defer.py): the graph stays
    whole and the compiled run prints the same lines as eager, in order, with the values
    the arguments had at the call; tensors print without their `grad_fn=` suffix (they
    are detached copies). Limits found, each measured:
    - prints in frames Dynamo *inlines* (a same-file helper, the `forward` of a
      submodule of the compiled model) are silently dropped: Dynamo replays only the
      deferred calls of the frame it compiles (`debug_locals` of an inlining
      translator are never replayed): only prints in the function `torch.compile`
      is applied to appear. Prints in such frames are therefore guarded: the deferred
      form is used only in a def decorated with or passed to `torch.compile`, or in the
      undecorated `forward` of a module that no other module class of the file builds;
    - keyword arguments (`sep=`, `end=`, `file=`) are silently dropped by the
      reordering, so calls with keywords, `*args` or `**kwargs` are guarded instead;
    - `x.shape` is refused as an argument (a break stays), so shapes and other trace-time
      values are passed as `f"{x.shape}"`, which prints the same text;
    - `.item()` (and f-strings that call it) breaks even when deferred: guarded instead;
      so are arguments that are neither tensors, literals nor trace-time values;
    - without the clone, `reorderable_logging_functions` prints the value a tensor has
      at the end of the graph; without `torch.compiler.disable`, Dynamo traces the helper
      when it is replayed;
    - if the graph raises after the call (say an assert), the deferred line is lost,
      where eager printed it before raising.

    ## When no fix is offered
    When the printed text is data the program reads back: a `print` inside
    `with redirect_stdout(buf):` / `redirect_stderr`, or with `file=` other than
    `sys.stdout`/`sys.stderr` (transformers' `model_debugging_utils` prints a tensor into a
    `StringIO` and parses it); skipping or deferring it under compile would change that text.
    When `print(...)` is not a statement of its own (its value is used, it shares a line
    with other statements, or it is the body of a one-line `if`), and when an argument
    may have a side effect that a guarded call would skip under compile: any call that is
    not known to only read (shape and dtype queries, reductions, casts, `str`/`len`/`tuple(x.shape)`,
    string formatting, `torch`/`math` functions other than random draws; not
    `self.load_state_dict(...)`, a method of your own, `.pop()`, `next()`, an in-place `.add_()`),
    and `:=`. `*args`/`**kwargs` and f-strings that call `.item()`
    are guarded (the eager call is unchanged). When the file does not import `torch`
    itself, `graphmend-lint --fix` adds `import torch`; plain `fixit fix` leaves that
    finding for the CLI.
    """

    CODE = "GM201"
    NAME = "print-in-compiled-code"
    FIX = "safe"
    MESSAGE = "`print()` in compiled code breaks the graph; guard it with `torch.compiler.is_compiling()`"
    MESSAGE_DEFER = "`print()` in compiled code breaks the graph; defer it after the graph under compile"
    FIX_TITLE = "print after the graph under compile (deferred)"

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

            @torch.compiler.disable
            def _graphmend_print(*args):
                # print() deferred by graphmend-lint: torch.compile runs it after the graph
                print(*args)


            torch._dynamo.config.reorderable_logging_functions.add(_graphmend_print)


            class M(nn.Module):
                def forward(self, x):
                    # show the shape
                    if not torch.compiler.is_compiling():
                        print("shape", x.shape)
                    else:
                        _graphmend_print("shape", f"{x.shape}")
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

            @th.compiler.disable
            def _graphmend_print(*args):
                # print() deferred by graphmend-lint: torch.compile runs it after the graph
                print(*args)


            th._dynamo.config.reorderable_logging_functions.add(_graphmend_print)


            @th.compile
            def step(x):
                if not th.compiler.is_compiling():
                    print(x)
                else:
                    _graphmend_print(x.detach().clone() if isinstance(x, th.Tensor) else x)
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
        if not self._is_print(node):
            return
        captured = self._captured(node)
        if captured is not None:
            self.report(node, f"{self.MESSAGE} (no fix: its output is read back ({captured}): skipping it under "
                              "compile would change that text)")
            return
        if self.settings.log_strategy == "defer" and self.report_deferred(node, self.MESSAGE_DEFER, self.FIX_TITLE,
                                                                         "print"):
            return
        self.report_guard(node, self.MESSAGE)

    def _captured(self, call: cst.Call) -> str | None:
        """How the print's text is captured as data (`file=buf`, `redirect_stdout`), or None."""
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "file" and \
                    dotted(arg.value) not in ("sys.stdout", "sys.stderr"):
                return "`file=`"
        node = self.parent(call)
        while node is not None and not isinstance(node, cst.FunctionDef):
            if isinstance(node, cst.With):
                for item in node.items:
                    func = item.item.func if isinstance(item.item, cst.Call) else None
                    name = (dotted(func) or "").split(".")[-1] if func is not None else ""
                    if name in ("redirect_stdout", "redirect_stderr"):
                        return f"`{name}`"
            node = self.parent(node)
        return None

    def _is_print(self, node: cst.Call) -> bool:
        if not (isinstance(node.func, cst.Name) and node.func.value == "print"):
            return False
        assert self.facts is not None
        return self.facts.bindings.qualify(node.func) is None and self.compiled_function(node) is not None

    def is_site(self, call: cst.Call) -> bool:
        return self._is_print(call) and self._captured(call) is None  # a captured print is never rewritten

    def defer_site(self, call: cst.Call) -> tuple[cst.SimpleStatementLine, list[cst.Arg]] | None:
        if not self._is_print(call) or guard.refusal(call, self.parent, self.facts.bindings) is not None:
            return None
        func = self.compiled_function(call)
        assert func is not None
        args = defer.deferred_args(call, self.facts.function(func).value, self.spell("torch.Tensor")[0],
                                   defer.exception_names(call, self.parent))
        if args is None:
            return None
        line = build.sole_statement_line(call, self.parent)
        assert line is not None
        return line, args
