from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..fixes import Fix, Refused, syntax, trap, where
from . import base


class RaiseOnTensorCheckRule(base.GraphMendRule):
    """
    ## What it does
    Finds validation checks `if <tensor condition>: raise E(...)` in code that runs under
    `torch.compile`: conditions built from `.all()`, `.any()`, `torch.isnan(x).any()`,
    `not torch.equal(a, b)`, `.allclose()`, or a comparison such as
    `labels.max() >= self.config.vocab_size`. Trace-time checks (`x.shape[0] != y.shape[0]`,
    `x.dtype == torch.float16`, `mask is None`) are not flagged. In an `if`/`elif`/`else`
    chain with a `raise` in any arm, every tensor condition of the chain is reported (such
    chains are validation, left alone by GM101).

    ## Why it breaks the graph
    Python must call `bool()` on the tensor to decide whether to raise. Dynamo cannot know
    the value while tracing, so it ends the graph there ("generic_jump TensorVariable"),
    runs the test in Python and starts a new graph after it: one break per check, on good
    input as well as bad.

    ## Example
    ```python
    class CTCHead(nn.Module):
        def forward(self, logits, labels=None):
            if labels is not None and labels.max() >= self.config.vocab_size:
                raise ValueError(f"Label values must be <= vocab_size: {self.config.vocab_size}")
            return logits.log_softmax(-1)
    ```

    ## Fix
    The check is kept, unchanged, for eager mode; under `torch.compile` the same condition
    is asserted inside the graph with `torch._assert_async`. Leading trace-time conjuncts
    (`labels is not None and ...`) stay Python tests:
    ```python
            if not torch.compiler.is_compiling():
                if labels is not None and labels.max() >= self.config.vocab_size:
                    raise ValueError(f"Label values must be <= vocab_size: {self.config.vocab_size}")
            elif labels is not None:
                torch._assert_async(torch.logical_not(labels.max() >= self.config.vocab_size), f"Label values must be <= vocab_size: {self.config.vocab_size}")
    ```
    `not torch.equal(a, b)` becomes a trace-time shape test (a mismatch raises the original
    exception) plus `(a == b).all()`, so broadcasting cannot make unequal shapes pass. Dtypes
    are not compared: on torch 2.13 `torch.equal` promotes (`equal(int [1, 2], float [1., 2.])`
    is `True`), and so does `==`. `not a.allclose(b, ...)` becomes `a.isclose(b, ...).all()`
    (both broadcast); `a or b` / `a and b` over tensor tests become `torch.logical_or/and`.

    Messages under compile: a constant message is kept; an f-string keeps its values when
    torch formats them inside the graph (dtypes, `dim()`, config numbers such as
    `f"vocab_size: {self.config.vocab_size}"`), else its constant parts with a placeholder for each value
    (`f"got {x.shape[0]}"` -> `"got "`: sizes would specialise dynamic shapes, tensors break the
    graph) and the finding says so. Eager runs keep the full message.

    ## Fix safety
    Safe for builtin exception types: in eager mode `torch.compiler.is_compiling()` is
    `False`, so exactly the original statement runs: same condition, same exception type,
    same message, same cause. Under `torch.compile` (torch 2.13, Inductor on CPU) bad input
    still fails, with `RuntimeError` carrying the (reduced) message instead of the original
    type: `except ValueError` around a compiled call no longer catches it. A trace-time shape
    mismatch in the `torch.equal` form raises the original exception while tracing; Dynamo
    then runs that function eagerly from then on (same as for any check that raises while
    tracing).

    Unsafe for other exception types (a class defined or imported in the file): eager is
    unchanged, but `MyError(msg)` may format its message differently and code that catches
    `MyError` around compiled calls would no longer see it. Also unsafe when a 0-d tensor is
    compared with an attribute or name not proved to be a Python number
    (`labels.max() >= self.vocab_size`): if it held a tensor of several elements, `if` would
    raise "ambiguous" while `_assert_async` would check every element (measured on torch 2.13:
    aot_eager raises "ambiguous" too, Inductor passes a check that holds for every element). An
    attribute is proved a number when every store of it in the class is in `__init__` and binds a
    number literal or an `__init__` parameter annotated `int`/`float` (`self.vocab_size =
    vocab_size` with `vocab_size: int = 100`; the annotation is trusted, as for other parameters).

    Measured on torch 2.13 with Inductor on CPU: the compiled `_assert_async` is kept and
    raises `RuntimeError(<message>)` at the call, also on the first bad call after good ones
    (no recompile needed). Older Inductor releases (before about 2.9) dropped it silently.

    On CUDA (not measured here) `torch._assert_async` is a device-side assert: the message
    is lost (the error reads "CUDA error: device-side assert triggered"), it surfaces at a
    later synchronisation point, and the CUDA context is unusable afterwards: every later
    CUDA call fails until the process restarts. Do not rely on catching it.


    The compiled message keeps every literal part and the f-string values torch formats inside
    a graph (dtypes, config numbers); a value it cannot format (a size, a tensor) reads
    `<x.max(): not available under torch.compile>`, so the message says what is missing. For
    code that catches the original exception around compiled calls, `validation-fixes =
    "unsafe"` in `[tool.graphmend]` makes every GM3xx fix unsafe (applied only with
    `--unsafe-fixes`).

    ## When no fix is offered
    The finding is reported without a fix when: the `if` has an `elif`/`else` or is itself an
    `elif`; the body does more than raise; the check sits in a `try` block (under compile the
    exception type changes and would escape its handlers); the statement is a bare `raise`
    or `raise ... from <cause>` (`from None` is fine); the exception gets keyword arguments or
    more than one argument; the message is neither a string literal nor an f-string; the
    condition is not provably a single value (a 0-d tensor: `_assert_async` would check every
    element, where `if` raises "Boolean value of Tensor with more than one value is
    ambiguous") and is not a 0-d tensor compared with a plain name or attribute; a trace-time test follows a tensor test; `torch.equal` appears other than as
    `not torch.equal(a, b)`; or `and`/`or` would evaluate a call Python may skip, or an operand
    Python may skip could raise there (`a or y.max() > 5`: `torch.logical_or` evaluates both, and
    `y.max()` raises on an empty `y`; fine when the first operand already reduced `y` whole).
    """

    CODE = "GM301"
    NAME = "raise-on-tensor-check"
    FIX = "sometimes"
    MESSAGE = ("`if <tensor check>: raise` breaks the graph; keep it for eager and assert with "
               "`torch._assert_async` under compile")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, y, mask=None):
                    if x.shape[0] != y.shape[0]:
                        raise ValueError("batch sizes differ")
                    if x.dtype == torch.float16 or mask is None:
                        raise TypeError("unsupported")
                    return x + y
            """
        ),
        Valid(
            """
            import torch

            def eager_only(x):
                if torch.isnan(x).any():
                    raise ValueError("nan")
                return x
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
                    if torch.isnan(x).any():
                        raise ValueError("NaN in input")
                    return x * 2
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        if torch.isnan(x).any():
                            raise ValueError("NaN in input")
                    else:
                        torch._assert_async(torch.logical_not(torch.isnan(x).any()), "NaN in input")
                    return x * 2
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, mask, expected):
                    if not torch.equal(mask, expected):
                        raise ValueError(f"bad mask {mask}")
                    return mask
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, mask, expected):
                    if not torch.compiler.is_compiling():
                        if not torch.equal(mask, expected):
                            raise ValueError(f"bad mask {mask}")
                    elif mask.shape != expected.shape:
                        raise ValueError(f"bad mask {mask}")
                    else:
                        torch._assert_async((mask == expected).all(), "bad mask <mask: not available under torch.compile>")
                    return mask
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if (x > 0).any(dim=0):
                        raise ValueError("positive")
                    return x
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Head(nn.Module):
                def forward(self, logits, labels):
                    if labels.max() >= self.vocab_size:
                        raise ValueError("label out of range")
                    return logits
            """
        ),
    ]

    def _chain_raises(self, node: cst.If) -> bool:
        """Some arm of the if/elif/else chain holding `node` raises (a validation check)."""
        up = self.parent(node)
        while isinstance(up, cst.If) and up.orelse is node:
            node, up = up, self.parent(up)
        arm: cst.If | cst.Else | None = node
        while arm is not None:
            if any(isinstance(s, cst.Raise) for s in syntax.body_statements(arm.body)):  # one-line bodies too
                return True
            arm = arm.orelse if isinstance(arm, cst.If) else None
        return False

    @staticmethod
    def _unknown_operand(test: cst.BaseExpression, tz: trap.Tensorize) -> cst.BaseExpression | None:
        """In `a and t` / `a or t` with `t` a tensor: an `a` the analysis cannot place (torchgeo's
        `self.assert_range and not ok`), else None."""
        if not isinstance(test, cst.BooleanOperation):
            return None
        parts = [test.left, test.right]
        if not any(tz.kind(p) == "tensor" for p in parts):
            return None
        return next((p for p in parts if tz.kind(p) == "other" and tz.facts.value(p).kind == "unknown"), None)

    def visit_If(self, node: cst.If) -> None:
        if not self._chain_raises(node):
            return
        func = self.compiled_function(node)
        if func is None:
            return
        assert self.facts is not None
        if self.facts.function(func).short_circuited(node.test):
            return  # `flag and not compiling and x.any()`: the check never runs under compile
        tz = trap.Tensorize(self.facts.function(func), self.facts.bindings, self.spell, allow_unproved=True)
        tz.number_attrs = self.facts.number_attrs(func)
        tz.skipped = trap.skipped_check(self, node, func)
        if tz.kind(node.test) != "tensor":
            if where.breaks_on(self.facts.function(func), node.test):  # `if not bool(m.all()): raise`
                unknown = self._unknown_operand(node.test, tz)
                why = (f"`{syntax.code(unknown)}` is not provably known while tracing, so the test may be "
                       "that value or the tensor" if unknown is not None else
                       "the test reads a Python value from tensor data (`bool()`, `int()`, `.item()`); keep it a tensor first")
                self.report(node, f"{self.MESSAGE}; no fix: {why}", at=node.test)
            return
        try:
            compiled, safety, note = self._compiled_branch(node, tz)
        except Refused as why:
            self.report(node, f"{self.MESSAGE}; no fix: {why}", at=node.test)
            return
        is_compiling = tz.name("torch.compiler.is_compiling")
        fix = Fix(trap.eager_split(node, is_compiling, compiled), safety, trap.TITLE + note, tz.needs_import)
        self.report(node, self.MESSAGE + note, fix=fix, at=node.test)

    def _compiled_branch(self, node: cst.If, tz: trap.Tensorize) -> tuple[cst.If | cst.Else, base.Safety, str]:
        assert self.facts is not None
        up = self.parent(node)
        if node.orelse is not None or (isinstance(up, cst.If) and up.orelse is node):
            raise Refused("the `if` is part of an `if`/`elif`/`else` chain")
        if context.in_try(node, self.parent):
            raise Refused("inside a `try` block, whose handlers would see RuntimeError under compile")
        caller = self.caller_in_try(node)
        if caller is not None:
            raise Refused(base.CALLER_IN_TRY.format(caller=caller))
        body = syntax.body_statements(node.body)
        if len(body) != 1 or not isinstance(body[0], cst.Raise):
            raise Refused("the body does more than raise")
        raise_ = body[0]
        line = node.body.body[0] if isinstance(node.body, cst.IndentedBlock) else \
            cst.SimpleStatementLine(body=[raise_.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])  # `if t: raise E(...)`
        exc_type, message = self._exception(raise_)
        safety, note = base.Safety.SAFE, ""
        if not (isinstance(exc_type, cst.Name) and exc_type.value in trap.BUILTIN_EXCEPTIONS
                and self.facts.bindings.qualify(exc_type) is None
                and not trap.module_defines(self.facts.module, exc_type.value)):
            safety = base.Safety.UNSAFE
            note = (f"; unsafe fix: `{syntax.code(exc_type)}` is not a builtin exception, so its message "
                    "formatting is unknown and under compile RuntimeError is raised instead")
        msg, _, dropped = trap.compiled_message(message, tz.facts) if message is not None else ('""', False, "")
        if safety is base.Safety.UNSAFE:  # its formatting is unknown: the constant parts, as before
            msg = trap.literal(trap.placeholder_text(message))
        else:
            note += dropped
        conjuncts = syntax.flatten(node.test, cst.And)
        kinds = [tz.kind(c) for c in conjuncts]
        n_static = next((i for i, k in enumerate(kinds) if k != "static"), len(kinds))
        guards, rest = conjuncts[:n_static], conjuncts[n_static:]
        if any(k != "tensor" for k in kinds[n_static:]):
            raise Refused("a trace-time test follows a tensor test")
        guard = " and ".join(trap.operand(g) for g in guards) or None
        assert_async = tz.name("torch._assert_async")
        if len(rest) == 1 and isinstance(rest[0], cst.UnaryOperation) and isinstance(rest[0].operator, cst.Not) \
                and tz.equal_args(rest[0].expression) is not None:
            a, b = tz.equal_args(rest[0].expression)  # type: ignore[misc]
            if not (tz.pure(a) and tz.pure(b)):
                raise Refused("the operands of `torch.equal` would be evaluated twice")
            mismatch = f"{trap.atom(a)}.shape != {trap.atom(b)}.shape"
            raise_text = syntax.code(line.with_changes(leading_lines=())).strip("\n")
            cases = [(f"{guard} and {mismatch}" if guard else mismatch, [raise_text]),
                     (guard, [f"{assert_async}(({trap.atom(a)} == {trap.atom(b)}).all(), {msg})"])]
            return trap.branches(cases), safety, note
        if len(rest) == 1:
            ok = tz.negate(rest[0])
        else:
            if not all(tz.pure(r) for r in rest):
                raise Refused("`and`/`or` would evaluate a call that Python may skip")
            for r in rest[1:]:
                tz.check_skipped(r)
            bad = tz.truth(rest[0])
            for r in rest[1:]:
                bad = f"{tz.name('torch.logical_and')}({bad}, {tz.truth(r)})"
            ok = f"{tz.name('torch.logical_not')}({bad})"
        if tz.missing:
            safety = base.Safety.UNSAFE
            note += f"; unsafe fix: {'; '.join(tz.missing)}"
        return trap.branches([(guard, [f"{assert_async}({ok}, {msg})"])]), safety, note

    def _exception(self, raise_: cst.Raise) -> tuple[cst.BaseExpression, cst.BaseExpression | None]:
        """(exception type expression, message expression) of `raise E(msg)`."""
        if raise_.exc is None:
            raise Refused("a bare `raise` re-raises the active exception")
        cause = raise_.cause
        if cause is not None and not (isinstance(cause.item, cst.Name) and cause.item.value == "None"):
            raise Refused("`raise ... from <cause>`: the cause cannot be kept under compile")
        exc = raise_.exc
        if not isinstance(exc, cst.Call):
            return exc, None
        if any(a.keyword is not None or a.star for a in exc.args) or len(exc.args) > 1:
            raise Refused("the exception is built from keyword or several arguments")
        message = exc.args[0].value if exc.args else None
        if trap.message_value(message) is None:
            raise Refused("the message is neither a string literal nor an f-string")
        return exc.func, message
