from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..fixes import where
from . import base


class TensorIfExpRule(base.GraphMendRule):
    """
    ## What it does
    Finds conditional expressions `a if c else b` whose test `c` depends on tensor data, in code
    that runs under `torch.compile`. Static tests (`x.dim() == 3`, `self.training`, ...) are not flagged.

    ## Why it breaks the graph
    Python must evaluate `bool(c)` to pick a branch: Dynamo ends the graph there ("Data-dependent
    branching", GB0170) and compiles the rest again on the first call that takes the other branch.

    ## Example
    ```python
    y = h * 2 if h.sum() > 0 else h - 1
    ```

    ## Fix
    ```python
    if torch.compiler.is_compiling():
        y = torch.where(h.sum() > 0, h * 2, h - 1)
    else:
        y = h * 2 if h.sum() > 0 else h - 1
    ```
    `and`/`or`/`not` in the test become `torch.logical_and/or/not`. As for GM101, eager keeps the
    line: replacing the ternary by `torch.where` in eager too gives the same values but was slower
    in eager in every case measured (`perf/eager_short_form.py`: `torch.where` computes both
    values), so it is offered only as an unsafe fix, where no compile-only form fits (below).

    ## Fix safety
    The same proofs as GM101: safe only when the test is a 0-d tensor, both values are tensors of
    provably the same shape and dtype (the same name or shape- and dtype-keeping ops of it with Python
    numbers), both values are free of side effects and cannot raise (both are now computed), and every
    op keeps torch.where's zero gradient for the untaken value zero at every input (NaN and +-inf
    included: `clamp`, `relu`, views, sums, arithmetic with numbers), or the code runs under
    `no_grad`/`inference_mode`, or the input of the other ops (`sqrt`, `log`, `exp`, `tanh`, `** 2`,
    ...) can be guarded ("double where": `torch.where(c, torch.log(torch.where(c, h, 1.0)), h)`,
    bit-identical values and gradients). Under `no_grad`, a value passed on unchanged must be computed inside the
    `no_grad` region (else `torch.where` would drop its autograd history). As for GM101, the name
    the ternary is assigned to must not be observed later in the function (passed to `print`, a
    logger, `warnings.warn`, `str`/`repr`/`format`, an f-string, or read as `.grad_fn`), nor may the
    ternary itself be printed or formatted: its `grad_fn` would show `WhereBackward0`. When a branch
    is a bare name (`y = x if c else x * 2`), `y` is the tensor `x` itself, so neither `x` nor `y`
    may be modified in place later (`x.add_(1)`, `x[0] = 0`, `x += 1`, `out=x`): `torch.where`
    makes a new tensor that the change no longer reaches.
    The fix is GM101's compile-only form: eager runs the line unchanged, and only under
    `torch.compile` (`if torch.compiler.is_compiling() and <checks>:`) the line runs with the
    ternary replaced by its torch.where; the missing proofs that are Python constants while
    tracing (`isinstance(scale, torch.Tensor)`, `scale.is_floating_point()`) become those checks, and
    the fix is safe when every missing proof is checked so. This holds for a ternary that is the
    whole value of an assignment or `return`, and for one inside a larger expression of such a
    statement (`y = self.proj(x) + (h if h.norm() > 1 else h * 0.5)`, `return x * (s if s.max() > 0
    else -s), aux`, `torch.cat([a, b if b.sum() > 0 else b.neg()], dim=-1)`, `y += ...`): the rest
    of the statement is evaluated once, in its order. When the branch values are not provably of one
    shape and dtype, they are bound before the statement and compared while tracing (a mismatch runs
    the original choice: a graph break, eager's result); everything the statement evaluates before the
    ternary that is not a constant or a local or imported name is then bound first, in order
    (`y_part = self.proj(x)`), so a module call, a dropout's random draw or a state change still
    happens before the test and the branch values read anything.
    The compile-only form is not offered (the fix is the unsafe torch.where in place, which changes
    eager code too, even where every proof above is made) for a ternary
    that is not always evaluated with its statement (an `and`/`or` operand, inside another
    ternary, a lambda, a comprehension, a chained comparison), that sits in an `if`/`while` test, an
    assignment target, an expression statement, a star or `out=` argument, an index, a set or dict,
    or under `not`/`is`/`in`; for a statement with a second ternary, a walrus, `yield` or `await`;
    when a trace-time check reads an attribute (`isinstance(self.limit, (int, float))`) that a call
    evaluated before the ternary could change; and when a branch value is a tensor itself (`h`,
    `self.buf`) whose very object would reach code that could keep or change it (an in-place
    method, a view such as `.view`, a module or user function, a list or tuple that is assigned):
    torch.where gives a new tensor there. Arithmetic, element-wise torch functions, reductions,
    `torch.cat`/`torch.stack` and `return` take it as is.

    A LayerDrop ternary (`skip_the_layer = True if self.training and (dropout_probability <
    self.layerdrop) else False`, with `dropout_probability = torch.rand([])`) gets GM101's LayerDrop
    fix: the test is decided while tracing when `layerdrop <= 0.0`, and breaks as before otherwise.

    GM101's trace-time checks apply to the branch values too: a reduction that raises on an empty
    tensor is checked with `x.numel() > 0`; indexing (`x[idx] * 2 if ... else x`) gets the index
    guard, `x[torch.where(cond, idx, 0)]`, with a long index and a non-empty dim checked while
    tracing; and what holds only without autograd (a name read in one value only, an op whose
    derivative may be infinite or NaN that cannot be guarded, a value with no autograd history against one with
    it) is checked with `not torch.is_grad_enabled()`: with gradients on, the line runs as before.

    ## When no fix is offered
    A value that is a Python number or `None` (`2.5 if c else 1`: `torch.where` would turn it into a
    tensor), values that call modules or user functions or may raise in other ways, and tests read as
    Python values (`.item()`, `torch.equal`) or proved not 0-d. Inside a Python loop see GM104.
    """

    CODE = "GM102"
    NAME = "tensor-if-exp"
    FIX = "sometimes"
    MESSAGE = "`a if c else b` on a tensor value breaks the graph (data-dependent branching)"

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    y = x * 2 if x.dim() == 3 else x
                    return y if self.training else -y
            """
        ),
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    return self.proj(x) + (x if self.training else x * 0.5), x
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    return h * 2 if h.sum() > 0 else -h
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.proj(x)
                    if torch.compiler.is_compiling():
                        return torch.where(h.sum() > 0, h * 2, -h)
                    else:
                        return h * 2 if h.sum() > 0 else -h
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, scale):
                    return x * (scale if scale.max() > 0 else -scale), x
            """,
            expected_replacement="""
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, scale):
                    if (
                        torch.compiler.is_compiling()
                        and isinstance(scale, torch.Tensor)
                        and scale.is_floating_point()
                    ):
                        return x * (torch.where(scale.max() > 0, scale, -scale)), x
                    else:
                        return x * (scale if scale.max() > 0 else -scale), x
            """,
        ),
        Invalid(
            """
            import torch

            @torch.compile
            def f(x):
                scale = 2.5 if x.sum() > 0 else 1
                return x * scale
            """
        ),
    ]

    def visit_IfExp(self, node: cst.IfExp) -> None:
        func = self.compiled_function(node)
        if func is None or context.in_loop(node, self.parent):
            return
        if where.is_fallback(self, node):
            return  # the original, kept by a compile-only fix
        if not where.breaks_on(self.facts.function(func), node.test):
            return
        layerdrop = where.fix_layerdrop(self, node, func)
        if layerdrop is not None:
            if layerdrop is not where.Done.FIXED:
                self.report_fix(node, self.MESSAGE, layerdrop, at=node.test)
            return
        self.report_fix(node, self.MESSAGE, where.fix_ternary(self, node, func), at=node.test)
