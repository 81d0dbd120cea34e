from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid
from libcst.metadata import PositionProvider

from .. import fastwalk
from ..analysis import context
from ..analysis import numpy_values as NV
from ..fixes import NoFix, numpy_math
from . import base

CONVERSIONS = {"int", "float", "bool"}
INTEGER_RESULTS = {"numpy.lcm", "numpy.gcd"}


class NumpyValueInCompiledCodeRule(base.GraphMendRule):
    """
    ## What it does
    Finds tests and conversions of NumPy values in code that runs under `torch.compile`: an
    `if`/`while`/ternary/`assert` test (`in` included), or `int()`/`float()`/`bool()`, on a value
    computed by a NumPy function (`np.lcm`, `np.sqrt`, ...), even from Python numbers, directly,
    through local names, or returned by a same-file helper (reformer's
    `_get_least_common_mult_chunk_len`); or on an attribute that `__init__` sets to a NumPy value
    (spandrel's FeMaSR: `if cur_res in self.codebook_scale:`, a column of a NumPy array).

    ## Why it breaks the graph
    Dynamo traces NumPy code as tensors (`torch._numpy`), also on Python numbers: the value of
    `np.lcm(self.a, self.b)` is a 0-d tensor while tracing, so a Python-truth test or a conversion
    of it is data-dependent. Measured on torch 2.13 (eager backend, Dynamo's graph_breaks log):
    `lcm = np.lcm(a, b)` then `if x.shape[-1] % lcm != 0:` is 1 break ("Data-dependent
    branching"), `if np.sqrt(self.d) > 1.5:` 1 break, `int(np.lcm(a, b))` 1 break; the same code
    with `math.lcm`/`math.sqrt` runs in one graph. A NumPy attribute of the module is traced the
    same way: `n in self.a` breaks (Dynamo calls `.item()` on `self.a.__contains__(n)`), and so do
    `self.a.max() > 1` and `self.g > 1` with `self.g = np.sqrt(2)`; `self.a is None`, `len(self.a)`
    and `self.a.shape` do not. `int()`/`float()` break only on integer
    NumPy values: `int(np.lcm(3, 4))` and `int(np.floor(4))` break, `int(np.sqrt(4))`,
    `float(np.sqrt(4))` and `int(np.floor(2.5))` do not; so a conversion is reported only where
    every NumPy source gives an integer whatever its arguments (`np.lcm`, `np.gcd`), and
    `bool()` always. A NumPy value used only in arithmetic with tensors (`x / np.sqrt(d)`) or
    as a size does not break and is not reported (but `int()` of it as a size does, and is a
    known gap when the conversion is not reported). `np.random` draws are GM910's; NumPy calls that
    break by themselves (`np.isin`, `np.ndim`, `np.allclose`, ...) are GM917's. `np.issubdtype` of
    constants is folded while tracing (0 breaks): its result is a Python bool, not reported.

    ## Example
    ```python
    def chunk_len(config):
        return np.lcm(config.lsh_chunk, config.local_chunk)

    class Model(nn.Module):
        def forward(self, x):
            lcm = chunk_len(self.config)
            if x.shape[-1] % lcm != 0:
                x = nn.functional.pad(x, (0, lcm - x.shape[-1] % lcm))
            return x
    ```

    ## Fix
    Under compile, the NumPy call becomes its `math` equivalent when its arguments are Python
    numbers, checked while tracing; eager runs the NumPy call unchanged:
    ```python
    return (
        math.lcm(config.lsh_chunk, config.local_chunk)
        if torch.compiler.is_compiling()
        and isinstance(config.lsh_chunk, int)
        and isinstance(config.local_chunk, int)
        else np.lcm(config.lsh_chunk, config.local_chunk)
    )
    ```
    `import math` is added when the file does not import it.

    ## Fix safety
    Safe for `lcm`, `gcd` (ints), `prod` (a list or tuple of ints), `sqrt` (a number >= 0:
    `math.sqrt` raises on a negative one where NumPy gives nan; both are correctly rounded),
    `floor`/`ceil` (a finite number, as `float(math.floor(a))`: NumPy returns a float): the same
    number. Under compile the value is then a Python number where the original had a NumPy value
    traced as a tensor; only code that checks its type (`isinstance(v, np.integer)`) tells them
    apart. When a check fails while tracing, the original NumPy call runs (the break stays).
    Unsafe for `log`, `log2`, `log10`, `exp`: libm and torch's kernels may differ in the last bit.

    ## When no fix is offered
    An attribute set in `__init__` (which runs eagerly): store a Python value (`.tolist()`,
    `float()`) or a tensor buffer there instead. Other NumPy functions, arguments that are not
    names, attributes or numbers (they would be evaluated twice), keyword arguments, a value that is also used as a NumPy object (an attribute
    read or an index on it or on the local name it is assigned to: `math.prod(ms)` has no `.astype`).
    A value turned into a Python number first (`np.prod(ms).item()`, `int(np.lcm(a, b))`) is not
    followed: Dynamo breaks at that call (GM901, or this rule's conversion) and the test after it
    reads a Python number.
    """

    CODE = "GM915"
    NAME = "numpy-value-in-compiled-code"
    FIX = "sometimes"
    MESSAGE = ("{what} on a NumPy value breaks the graph: Dynamo traces NumPy values as tensors, and this one "
               "comes from `{call}` (line {line}); compute it with Python numbers (`math`)")
    ATTR_MESSAGE = ("{what} on a NumPy value breaks the graph: Dynamo traces NumPy values as tensors, and "
                    "`self.{attr}` holds one (stored line {line})")

    VALID = [
        Valid(
            """
            import math
            import numpy as np
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    lcm = math.lcm(self.a, self.b)
                    if x.shape[-1] % lcm != 0:
                        x = x + 1
                    return x / np.sqrt(self.d)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import math

            import numpy as np
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    lcm = np.lcm(self.a, self.b)
                    if x.shape[-1] % lcm != 0:
                        x = x + 1
                    return x
            """,
            expected_replacement="""
            import math

            import numpy as np
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    lcm = math.lcm(self.a, self.b) if torch.compiler.is_compiling() and isinstance(self.a, int) and isinstance(self.b, int) else np.lcm(self.a, self.b)
                    if x.shape[-1] % lcm != 0:
                        x = x + 1
                    return x
            """,
        ),
        Invalid(
            """
            import numpy as np
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if np.sin(self.a) > 0.5:
                        x = x + 1
                    return x
            """
        ),
    ]

    def _check(self, node: cst.CSTNode, expr: cst.BaseExpression, what: str) -> None:
        func = self.compiled_function(node)
        if func is None or not self.facts.function(func).value(expr).numpy:
            return
        found = [s for s in NV.sources(self.facts, func, expr) if self._may_reach(func, expr, s)]
        if not found:
            return
        attrs = [n for _, n in found if isinstance(n, cst.Attribute)]
        found = [(h, n) for h, n in found if isinstance(n, cst.Call)]
        if attrs and not found:  # made in `__init__`, outside compiled code: nothing to rewrite here
            store = self.facts.numpy_store(func, attrs[0].attr.value)
            line = self.get_metadata(PositionProvider, store).start.line if store is not None else None
            head = self.ATTR_MESSAGE.format(what=what, attr=attrs[0].attr.value, line=line)
            self.report_fix(node, head, NoFix("the NumPy value is made outside compiled code; store a Python "
                                              "value (`.tolist()`, `float()`) or a tensor buffer instead"), at=expr)
            return
        holder, call = found[0]
        outcome = None
        for h, c in found:
            got = numpy_math.fix(self, c, NV.numpy_call(self.facts.bindings, c))
            if not isinstance(got, NoFix) and self._object_use(h, c):
                got = NoFix("the NumPy value is also used as an object (an attribute, an index), which a Python number is not")
            if not isinstance(got, NoFix):
                outcome, call = got, c
                break
            outcome = outcome or got
        line = self.get_metadata(PositionProvider, call).start.line
        head = self.MESSAGE.format(what=what, call=f"{self.facts.bindings.qualify(call.func).replace('numpy.', 'np.')}(...)",
                                   line=line)
        self.report_fix(node, head, outcome, at=expr)

    def _object_use(self, holder: cst.FunctionDef, call: cst.Call) -> bool:
        """The value of `call` (through arithmetic, or a local name it is assigned to) has an attribute
        read or is indexed: `math.prod(ms)` is an int, and `numpy.prod(ms).item()` would fail while
        tracing (pykeen's `check_factors`: Dynamo gave up on the whole frame)."""
        node, up = call, self.parent(call)
        while isinstance(up, (cst.BinaryOperation, cst.UnaryOperation)):
            node, up = up, self.parent(up)
        if isinstance(up, (cst.Attribute, cst.Subscript)) and up.value is node:
            return True
        if not (isinstance(up, cst.Assign) and node is up.value or isinstance(up, cst.AnnAssign) and node is up.value):
            return False
        targets = [t.target for t in up.targets] if isinstance(up, cst.Assign) else [up.target]
        names = {t.value for t in targets if isinstance(t, cst.Name)}
        walk = _Receivers()
        fastwalk.visit(holder, walk)
        return any(isinstance(r.value, cst.Name) and r.value.value in names for r in walk.found)

    def _may_reach(self, func: cst.FunctionDef, read: cst.CSTNode, source: tuple) -> bool:
        """A NumPy call of this function written after the read, with no loop around the read, cannot
        give the value read (mmpretrain's `_set_range`: `value = np.clip(...)` inside the `if` whose
        test reads the parameter `value`)."""
        holder, call = source
        if holder is not func or context.in_loop(read, self.parent):
            return True
        end = self.get_metadata(PositionProvider, read).end
        made = self.get_metadata(PositionProvider, call).start
        return (made.line, made.column) < (end.line, end.column)  # also a call inside the read

    def visit_If(self, node: cst.If) -> None:
        self._check(node, node.test, "`if`")

    def visit_While(self, node: cst.While) -> None:
        self._check(node, node.test, "`while`")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if not NV.compile_branch(self.facts.bindings, node):
            self._check(node, node.test, "a conditional expression")

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node, node.test, "`assert`")

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in CONVERSIONS and len(node.args) == 1 \
                and self.facts.bindings.qualify(node.func) is None and not node.args[0].star:
            if node.func.value != "bool" and not self._integer_valued(node, node.args[0].value):
                return
            self._check(node, node.args[0].value, f"`{node.func.value}()`")

    def _integer_valued(self, node: cst.CSTNode, expr: cst.BaseExpression) -> bool:
        """Every NumPy source of `expr` gives an integer (`np.lcm`, `np.gcd`): measured on torch 2.13,
        `int()`/`float()` of an integer NumPy value breaks, of a floating one (`np.sqrt(4)`,
        `np.floor(2.5)`) does not. Where the dtype depends on the argument (`np.floor` of an int
        is an int), nothing is reported: precision first."""
        func = self.compiled_function(node)
        if func is None:
            return False
        found = NV.sources(self.facts, func, expr)
        return bool(found) and all(isinstance(c, cst.Call) and self.facts.bindings.qualify(c.func) in INTEGER_RESULTS
                                   for _, c in found)



class _Receivers(cst.CSTVisitor):
    """Every attribute read and subscript below a node (their `.value` is the object used)."""

    def __init__(self) -> None:
        self.found: list[cst.Attribute | cst.Subscript] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.found.append(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.found.append(node)
