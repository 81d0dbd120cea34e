from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from .. import fastwalk
from ..analysis import context
from ..fixes import Fix, Refused, build, scalar_assert, trap
from ..fixes.safety import Safety
from ..fixes.syntax import code
from . import base


class AssertOnPythonScalarRule(base.GraphMendRule):
    """
    ## What it does
    Finds `assert` statements whose test reads a Python number out of a tensor (`t.item()`,
    `int(t)`, `float(t)`, `bool(t)`), in code that runs under `torch.compile`:
    `assert lengths.max().item() <= slen` (XLM, Flaubert),
    `assert torch.all(ids >= 0).item(), "..."` (ProphetNet, UDOP).

    ## Why it breaks the graph
    The conversion needs the tensor's value while tracing: Dynamo ends the graph there (GB0124,
    `.item()`), runs it eagerly, and starts a new graph after the assert. Measured on torch 2.13
    (graph_breaks log): `assert x.max().item() <= slen` is 1 break; under compile,
    `torch._assert_async(x.max() <= slen)` is 0 breaks.

    ## Example
    ```python
    def forward(self, x, lengths):
        bs, slen = x.size()
        assert lengths.max().item() <= slen
        ...
    ```

    ## Fix
    Eager keeps the assert verbatim; compiled code asserts on the tensor:
    ```python
    if not torch.compiler.is_compiling():
        assert lengths.max().item() <= slen
    elif __debug__:
        torch._assert_async((lengths.max().double() if lengths.max().is_floating_point() else lengths.max().long()) <= slen, "")
    ```
    The compiled comparison is the one Python makes: an integer tensor is compared as `t.long()`
    with an int (a literal or a size; compared as it is, an int8 tensor would turn 200 into -56), a
    floating one as `t.double()` (the exact float64 `.item()` returns); `int(t)` of a floating tensor is `t.double().trunc()`; a dtype the source does not
    prove is decided while tracing (`t.is_floating_point()`, a Python constant there). When the
    other side is not provably an int, the compiled path checks `isinstance(slen, int)` while
    tracing and runs the original assert otherwise (the break stays); so it does with
    `isinstance(t, torch.Tensor)` when `t` is taken for a tensor only because `.sum()`/`.max()`...
    is called on something not known to be one (a NumPy array, which Dynamo traces too, has no
    `.double()`: alphafold3's `int(biomol.atom_mask.sum())`). A constant message is kept;
    an f-string keeps the values torch can format inside a graph, else its constant parts; an
    assert without a message gets `""`: measured on torch 2.13, `torch._assert_async(c)` without a
    message is dropped by aot_eager and Inductor (a failing check passes), with one it raises.

    ## Fix safety
    Safe: eager runs the original assert (same test, `AssertionError`, message). Under compile a
    failing check raises `RuntimeError` (as Dynamo's own rewrite of `assert <tensor>, "msg"`
    does); `python -O` removes both checks (the compiled one sits under `elif __debug__:`). The tensor must be provably 0-d
    (`.item()` raises on several elements where Inductor's `_assert_async` would test each).

    On CUDA (not measured here) the compiled assertion is a device-side assert: the message
    is lost ("CUDA error: device-side assert triggered"), the error surfaces at a later
    synchronisation, and the CUDA context is unusable afterwards (the process must restart).
    For code that catches the original exception around compiled calls, `validation-fixes =
    "unsafe"` in `[tool.graphmend]` makes this fix unsafe.

    ## When no fix is offered
    A tensor not provably 0-d; a test other than one conversion or one comparison with one; a
    conversion compared with a value not provably a number; a call not known to be free of side
    effects (it would run twice); an assert that shares its line or sits in a `try` block; a
    message that is neither a string literal nor an f-string.
    """

    CODE = "GM304"
    NAME = "assert-on-python-scalar"
    FIX = "sometimes"
    MESSAGE = ("`assert` on a Python number read from a tensor (`{conv}`) breaks the graph (GB0124); keep it "
               "for eager and assert on the tensor with `torch._assert_async` under compile")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, lengths):
                    assert lengths.max() <= x.shape[1]
                    assert x.shape[0] == lengths.shape[0], "batch"
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
                def forward(self, x: torch.Tensor):
                    bs, slen = x.size()
                    lengths = (x != 0).sum(dim=1)
                    assert lengths.max().item() <= slen
                    return x
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x: torch.Tensor):
                    bs, slen = x.size()
                    lengths = (x != 0).sum(dim=1)
                    if not torch.compiler.is_compiling():
                        assert lengths.max().item() <= slen
                    elif __debug__:
                        torch._assert_async(lengths.max().long() <= slen, "")
                    return x
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x: torch.Tensor):
                    assert x.sum(dim=0).item() > 0  # not provably 0-d: no fix
                    return x
            """
        ),
    ]

    def visit_Assert(self, node: cst.Assert) -> None:
        func = self.compiled_function(node)
        if func is None or self._own_fallback(node):
            return
        tz = trap.Tensorize(self.facts.function(func), self.facts.bindings, self.spell)
        tz.skipped = trap.skipped_check(self, node, func)
        convs = []

        class V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                c = scalar_assert.conversion(tz, n)
                if c is not None:
                    convs.append(n)

        fastwalk.visit(node.test, V())
        if not convs:
            return
        head = self.MESSAGE.format(conv=code(convs[0]) if len(code(convs[0])) < 40 else code(convs[0].func) + "(...)")
        try:
            fix = self._fix(node, tz)
        except Refused as why:
            self.report(node, f"{head}; no fix: {why}")
            return
        self.report(build.sole_line(node, self.parent), f"{head}; {fix.title}", fix=fix, at=node)

    def _own_fallback(self, node: cst.Assert) -> bool:
        """The original assert a fix keeps under compile when a trace-time check fails."""
        for child, up in context.ancestors(node, self.parent):
            if isinstance(up, cst.FunctionDef):
                return False
            if isinstance(up, cst.If) and child is up.orelse and "_assert_async(" in code(up.body):
                return True
        return False

    def _fix(self, node: cst.Assert, tz: trap.Tensorize) -> Fix:
        line = build.sole_line(node, self.parent)
        if line is None:
            raise Refused("the assert shares its line with other statements")
        if context.in_try(node, self.parent):
            raise Refused("inside a `try` block, whose handlers would see RuntimeError under compile")
        caller = self.caller_in_try(node)
        if caller is not None:
            raise Refused(base.CALLER_IN_TRY.format(caller=caller))
        if trap.message_value(node.msg) is None:
            raise Refused("the message is neither a string literal nor an f-string")
        test, checks = scalar_assert.compiled_test(tz, node.test)
        msg, _, note = trap.compiled_message(node.msg, tz.facts)
        if msg is None:  # without a message, Inductor and aot_eager drop `_assert_async` (measured)
            msg = '""'
        check = f"{tz.name('torch._assert_async')}({test}, {msg})"
        # `__debug__`: `python -O` drops the compiled check as it drops the assert
        if checks:
            original = code(line.with_changes(leading_lines=())).strip("\n")
            compiled = trap.branches([(" and ".join(["__debug__", *checks]), [check]), (None, [original])])
        else:
            compiled = trap.branches([("__debug__", [check])])
        is_compiling = tz.name("torch.compiler.is_compiling")
        title = "fix: " + trap.TITLE + (f", checked while tracing ({', '.join(f'`{c}`' for c in checks)})" if checks else "")
        return Fix(trap.eager_split(line, is_compiling, compiled), Safety.SAFE, title + note, tz.needs_import)
