from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..fixes import Fix, Refused, build, trap
from . import base


class AssertTensorMessageRule(base.GraphMendRule):
    """
    ## What it does
    Finds `assert <tensor condition>, <message>` in code that runs under `torch.compile`
    when Dynamo cannot turn it into a graph assertion: the message is not a constant string
    (an f-string, `%`-formatting, a variable), or the test is `not t`, `a and b`, `a or b`
    over tensors, or `.allclose(...)`. `assert t, "constant"` and `assert t` already compile
    without a break (Dynamo rewrites them itself) and are not flagged, nor are trace-time
    tests such as `assert x.shape[0] == y.shape[0], f"..."`.

    ## Why it breaks the graph
    Dynamo rewrites `assert <tensor>, "<constant>"` into an in-graph `_assert_async`. Any
    other shape of assert needs the tensor's Python truth value (or a message computed at run
    time), so the graph ends at the assert: one break per assert, on every call.

    ## Example
    ```python
    def forward(self, x):
        assert (x >= 0).all(), f"negative input, min={x.min()}"
        return x.sqrt()
    ```

    ## Fix
    The assert is kept, unchanged, for eager mode; under `torch.compile` an assert Dynamo
    can capture replaces it, with the test as one tensor (`not t` ->
    `torch.logical_not(t)`, `a and b` -> `torch.logical_and(a, b)`) and a constant message:
    ```python
        if not torch.compiler.is_compiling():
            assert (x >= 0).all(), f"negative input, min={x.min()}"
        else:
            assert (x >= 0).all(), "negative input, min=<x.min(): not available under torch.compile>"
    ```
    An f-string message keeps its values under compile when torch can format them inside the
    graph (dtypes, `dim()`, config numbers; measured on torch 2.13): the compiled branch is then
    `torch._assert_async(<test>, f"...")`. Sizes (`x.shape[0]`, `tuple(x.shape)`) would
    specialise dynamic shapes (a recompile per size) and tensors or a `torch.Size` break the
    graph, so such a message keeps its constant parts and names the value it cannot show
    (`f"min={x.min()}"` -> `"min=<x.min(): not available under torch.compile>"`),
    and the finding says so; eager runs keep the full message. `python -O` still removes the
    check in both modes: the `torch._assert_async` form sits under `elif __debug__:`.

    ## Fix safety
    Safe: in eager mode `torch.compiler.is_compiling()` is `False` and the original assert
    runs as before (same test, `AssertionError`, same message). Under `torch.compile`
    (torch 2.13, Inductor on CPU) a failing check raises `RuntimeError` with the reduced
    message, exactly as Dynamo already does for an assert with a constant message.

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
    When the assert shares its line with other statements; sits in a `try` block (its
    handlers would see `RuntimeError` under compile); the message is neither a string
    literal nor an f-string; the test is not provably a single value (a 0-d tensor); it mixes
    a trace-time test after a tensor test; it uses `torch.equal`; or `and`/`or` would
    evaluate a call Python may skip, or an operand Python may skip could raise there (espnet's
    `lengths.min() == lengths.max() or label.min() == -1`: `label.min()` of no labels).
    """

    CODE = "GM302"
    NAME = "assert-tensor-message"
    FIX = "safe"
    MESSAGE = ("`assert` on a tensor with a computed message or a `not`/`and`/`or` test breaks the graph; "
               "keep it for eager and assert a constant message under compile")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, y):
                    assert (x >= 0).all(), "negative input"
                    assert x.shape[0] == y.shape[0], f"batch {x.shape[0]} != {y.shape[0]}"
                    assert x.max() < 10
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
                def forward(self, x):
                    assert (x >= 0).all(), f"negative input, min={x.min()}"
                    return x.sqrt()
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        assert (x >= 0).all(), f"negative input, min={x.min()}"
                    else:
                        assert (x >= 0).all(), "negative input, min=<x.min(): not available under torch.compile>"
                    return x.sqrt()
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    assert not torch.isnan(x).any(), "NaN"
                    return x
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        assert not torch.isnan(x).any(), "NaN"
                    else:
                        assert torch.logical_not(torch.isnan(x).any()), "NaN"
                    return x
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    msg = "bad"
                    assert (x > 0).all(), msg
                    return x
            """
        ),
    ]

    def visit_Assert(self, node: cst.Assert) -> None:
        func = self.compiled_function(node)
        if func is None:
            return
        assert self.facts is not None
        tz = trap.Tensorize(self.facts.function(func), self.facts.bindings, self.spell)
        tz.skipped = trap.skipped_check(self, node, func)
        if tz.kind(node.test) != "tensor":
            return
        if trap.is_constant_message(node.msg) and self._dynamo_rewrites(node.test, tz):
            return
        try:
            line, test, msg, keeps, note = self._compiled_assert(node, tz)
        except Refused as why:
            self.report(node, f"{self.MESSAGE}; no fix: {why}")
            return
        if keeps:  # keeps the f-string's values; `__debug__`: `python -O` drops it as it drops the assert
            compiled = trap.branches([("__debug__", [f"{tz.name('torch._assert_async')}({test}, {msg})"])])
        else:
            compiled = trap.branches([(None, [f"assert {test}" + (f", {msg}" if msg is not None else "")])])
        is_compiling = tz.name("torch.compiler.is_compiling")
        fix = Fix(trap.eager_split(line, is_compiling, compiled), title=trap.TITLE + note,
                  needs_torch_import=tz.needs_import)
        self.report(line, self.MESSAGE + note, fix=fix, at=node)

    def _dynamo_rewrites(self, test: cst.BaseExpression, tz: trap.Tensorize) -> bool:
        """Dynamo turns `assert <test>, "const"` into a graph assertion (measured on torch 2.13)."""
        if isinstance(test, cst.BooleanOperation):  # `m is None or t`: the trace-time part folds
            return tz.kind(test.left) == "static" and self._dynamo_rewrites(test.right, tz)
        if isinstance(test, cst.UnaryOperation) or tz.equal_args(test) is not None or tz.is_allclose(test):
            return False
        return tz.facts.value(test).is_tensor

    def _compiled_assert(self, node: cst.Assert, tz: trap.Tensorize) -> tuple:
        """(line, compiled test, compiled message, whether it keeps f-string values, note)."""
        line = build.sole_line(node, self.parent)
        if line is None:
            raise Refused("the assert shares its line with other statements")
        if context.in_try(node, self.parent):
            raise Refused("inside a `try` block, whose handlers would see RuntimeError under compile")
        caller = self.caller_in_try(node)
        if caller is not None:
            raise Refused(base.CALLER_IN_TRY.format(caller=caller))
        value = trap.message_value(node.msg)
        if value is None:
            raise Refused("the message is neither a string literal nor an f-string")
        msg, keeps, note = trap.compiled_message(node.msg, tz.facts)
        test = node.test
        if isinstance(test, cst.BooleanOperation) and not test.lpar and tz.kind(test.left) == "static":
            op = "and" if isinstance(test.operator, cst.And) else "or"  # the trace-time part stays Python
            if keeps:  # `assert` needs a constant message under compile
                msg, note = trap.literal(trap.placeholder_text(node.msg)), (
                    f"; under compile the message keeps its constant parts and shows `{trap.UNAVAILABLE}` for its values")
            return line, f"{trap.operand(test.left)} {op} {tz.truth(test.right)}", msg, False, note
        return line, tz.truth(test), msg, keeps, note
