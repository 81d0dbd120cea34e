from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..fixes import Fix, Refused, build, syntax, trap
from . import base

# torch._check_tensor_all's message when none is given (torch 2.13).
DEFAULT_CHECK_MESSAGE = ("Expected cond to be True, but got False. (Could this error message be improved? "
                         "If so, please report an enhancement request to PyTorch.)")


class TorchAssertOnTensorRule(base.GraphMendRule):
    """
    ## What it does
    Finds `torch._assert(<tensor>, msg)` and `torch._check_tensor_all(<tensor>, message)` in
    code that runs under `torch.compile`.

    ## Why it breaks the graph
    Both look like graph-friendly checks but are not: `torch._assert` is a plain Python
    `assert`, and `torch._check_tensor_all` calls `.item()` on the reduced condition. Dynamo
    stops the graph there ("Data dependent operator" / "Unsupported Tensor.item() call"),
    one break per call on every call, good input included (measured on torch 2.13).

    ## Example
    ```python
    def forward(self, x, mask):
        torch._check_tensor_all(mask.sum(-1) > 0, lambda: "every row needs a token")
        return x.masked_fill(~mask, 0.0)
    ```

    ## Fix
    The call is kept, unchanged, for eager mode; under `torch.compile` a graph assertion
    replaces it:
    ```python
        if not torch.compiler.is_compiling():
            torch._check_tensor_all(mask.sum(-1) > 0, lambda: "every row needs a token")
        else:
            torch._assert_async(torch.all(mask.sum(-1) > 0), "every row needs a token")
    ```
    `torch._assert(t, msg)` becomes `assert t, "<constant>"` under compile, which Dynamo
    captures as a graph assertion (and which `python -O` removes, like `torch._assert`
    itself). An f-string message whose values torch formats inside the graph (dtypes, `dim()`,
    config numbers) is kept whole, with `torch._assert_async(t, f"...")` under `elif __debug__:`
    (`python -O` removes it, as it removes `torch._assert`); one with sizes or
    tensors keeps its constant parts (a placeholder for each such value) under compile, and the finding says so. A missing
    `_check_tensor_all` message becomes PyTorch's default text.

    ## Fix safety
    Safe: in eager mode `torch.compiler.is_compiling()` is `False` and the original call
    runs as before. Under `torch.compile` (torch 2.13, Inductor on CPU) a failing check
    raises `RuntimeError` with the (reduced) message: the same type as
    `torch._check_tensor_all`, where `torch._assert` raised `AssertionError`.

    On CUDA (not measured here) the compiled assertion is a device-side assert: the message
    is lost ("CUDA error: device-side assert triggered"), the error surfaces at a later
    synchronisation, and the CUDA context is unusable afterwards (the process must restart).


    The compiled message keeps every literal part and the f-string values torch formats inside
    a graph (dtypes, config numbers); a value it cannot format (a size, a tensor) reads
    `<x.max(): not available under torch.compile>`, so the message says what is missing. For
    code that catches the original exception around compiled calls, `validation-fixes =
    "unsafe"` in `[tool.graphmend]` makes every GM3xx fix unsafe (applied only with
    `--unsafe-fixes`).

    ## When no fix is offered
    When the call's value is used or it shares its line with other statements; it sits in a
    `try` block; the message is not a string literal or f-string (for `_check_tensor_all`: a
    `lambda` returning one); the condition of `torch._assert` is not provably a single value;
    or the condition of `torch._check_tensor_all` is not provably a bool tensor (eager raises
    on other dtypes).
    """

    CODE = "GM303"
    NAME = "torch-assert-on-tensor"
    FIX = "safe"
    MESSAGE = ("`torch._assert`/`torch._check_tensor_all` on a tensor calls `.item()` and breaks the graph; "
               "keep it for eager and assert in the graph under compile")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, y):
                    torch._assert(x.shape[0] == y.shape[0], "batch sizes differ")
                    torch._assert_async((x >= 0).all(), "negative")
                    return x + y
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, mask):
                    torch._check_tensor_all(mask.sum(-1) > 0, lambda: "every row needs a token")
                    return x
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, mask):
                    if not torch.compiler.is_compiling():
                        torch._check_tensor_all(mask.sum(-1) > 0, lambda: "every row needs a token")
                    else:
                        torch._assert_async(torch.all(mask.sum(-1) > 0), "every row needs a token")
                    return x
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    torch._assert((x >= 0).all(), f"negative: {x.min()}")
                    return x
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        torch._assert((x >= 0).all(), f"negative: {x.min()}")
                    else:
                        assert (x >= 0).all(), "negative: <x.min(): not available under torch.compile>"
                    return x
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    torch._check_tensor_all(x.sum(-1), lambda: "zero row")
                    return x
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        assert self.facts is not None
        q = self.facts.bindings.qualify(node.func)
        if q not in ("torch._assert", "torch._check_tensor_all") or not node.args:
            return
        func = self.compiled_function(node)
        if func is None:
            return
        tz = trap.Tensorize(self.facts.function(func), self.facts.bindings, self.spell)
        tz.skipped = trap.skipped_check(self, node, func)
        cond = self._arg(node, 0, "condition" if q == "torch._assert" else "cond")
        if cond is None or tz.kind(cond) != "tensor" and (q == "torch._assert" or tz.kind(cond) == "static"):
            return  # the condition of _check_tensor_all is a tensor by contract
        try:
            line, compiled_stmt, note = self._compiled(node, q, cond, tz)
        except Refused as why:
            self.report(node, f"{self.MESSAGE}; no fix: {why}")
            return
        is_compiling = tz.name("torch.compiler.is_compiling")
        # torch._assert is an `assert` inside: `python -O` drops it, so the compiled check too
        debug = "__debug__" if q == "torch._assert" and "_assert_async(" in compiled_stmt else None
        compiled = trap.branches([(debug, [compiled_stmt])])
        fix = Fix(trap.eager_split(line, is_compiling, compiled), title=trap.TITLE + note,
                  needs_torch_import=tz.needs_import)
        self.report(line, self.MESSAGE + note, fix=fix, at=node)

    @staticmethod
    def _arg(node: cst.Call, pos: int, keyword: str) -> cst.BaseExpression | None:
        for i, a in enumerate(node.args):
            if a.star:
                return None
            if (a.keyword is None and i == pos) or (a.keyword is not None and a.keyword.value == keyword):
                return a.value
        return None

    def _compiled(self, node: cst.Call, q: str, cond: cst.BaseExpression, tz: trap.Tensorize) -> tuple[cst.SimpleStatementLine, str]:
        expr_stmt = self.parent(node)
        if not isinstance(expr_stmt, cst.Expr) or expr_stmt.value is not node:
            raise Refused("the call's value is used")
        line = build.sole_line(expr_stmt, self.parent)
        if line is None:
            raise Refused("the call shares its line with other statements")
        if context.in_try(node, self.parent):
            raise Refused("inside a `try` block, whose handlers would see another exception under compile")
        caller = self.caller_in_try(node)
        if caller is not None:
            raise Refused(base.CALLER_IN_TRY.format(caller=caller))
        if q == "torch._assert":
            arg = self._arg(node, 1, "message")
            if trap.message_value(arg) is None:
                raise Refused("the message is neither a string literal nor an f-string")
            if arg is None:
                return line, f"assert {tz.truth(cond)}, \"\"", ""
            msg, keeps, note = trap.compiled_message(arg, tz.facts)
            if keeps:  # `assert` would need a constant message; _assert_async formats it in the graph
                return line, f"{tz.name('torch._assert_async')}({tz.truth(cond)}, {msg})", note
            return line, f"assert {tz.truth(cond)}, {msg}", note
        message = self._arg(node, 1, "message")
        note = ""
        if message is None:
            text = trap.literal(DEFAULT_CHECK_MESSAGE)
        elif isinstance(message, cst.Lambda) and not message.params.params \
                and trap.message_value(message.body) is not None:
            text, _, note = trap.compiled_message(message.body, tz.facts)
        else:
            raise Refused("the message is not a `lambda` returning a string literal or f-string")
        compares = isinstance(cond, cst.Comparison) and len(cond.comparisons) == 1 and not isinstance(
            cond.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
        if tz.facts.value(cond).dtype != "bool" and not compares:
            raise Refused("the condition is not provably a bool tensor (eager raises on other dtypes)")
        all_ = tz.name("torch.all")
        return line, f"{tz.name('torch._assert_async')}({all_}({syntax.code(cond)}), {text})", note
