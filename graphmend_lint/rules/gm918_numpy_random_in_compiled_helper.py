from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid
from libcst.metadata import PositionProvider

from ..analysis import context
from ..analysis import explain as X
from ..fixes.fix import Fix, NoFix
from . import base
from .gm910_python_random_in_compiled_code import NP_NO_ARGS


class NumpyRandomInCompiledHelperRule(base.GraphMendRule):
    """
    ## What it does
    Finds module-level functions that compiled code calls (not a function where compilation
    starts) which draw from NumPy's random generator (`np.random.rand(...)`, `np.random.choice(...)`,
    `np.random.default_rng()`, ...) and turn values into Python ones (`.item()`, `.tolist()`, a
    scalar draw): SpecAugment's `_compute_mask_indices` in transformers' wav2vec2 family is the
    common case. It reports the helper once, at its name; the breaks are inside it.

    ## Why it breaks the graph
    Dynamo traces NumPy through `torch._numpy`, and by default (`use_numpy_random_stream = False`)
    replays `np.random` with torch's generator. Measured on torch 2.13: a helper that draws
    `np.random.rand(1).item()` and `np.random.choice(...)` and builds a mask from them breaks 3 times
    under `torch.compile`, and its compiled result differs from eager (other numbers are drawn, and
    torch's generator moves for later draws such as dropout). Where a draw is turned into a
    Python value (`.item()`, `.tolist()`, `int()`, an `if`), the graph breaks.

    ## Example
    ```python
    def mask_indices(n, p):
        eps = np.random.rand(1).item()
        return np.random.choice(np.arange(n), int(p * n + eps), replace=False)

    class Encoder(nn.Module):
        def forward(self, x):
            if self.training:
                x[:, mask_indices(x.shape[1], 0.1)] = 0
            return x
    ```

    ## Fix
    Run the helper in eager: `@torch.compiler.disable` on it. Dynamo then calls it as a Python
    function: one break at the call instead of the breaks inside it, and NumPy's own generator
    draws the same numbers as in eager.

    ## Fix safety
    Unsafe: eager behaviour does not change (the decorator only tells Dynamo not to trace the
    helper, whose code is kept), but under compile the helper's draws then come from NumPy's
    generator, as in eager, instead of torch's: the compiled masks change, and so do torch's later
    draws (dropout), which no longer advance for the helper. The compiled results become the eager
    ones, yet they differ from the compiled results before the fix. The decorator goes last, next
    to `def`, so it wraps the function before any other decorator.

    ## When no fix is offered
    For a generator, and for a function that also calls torch (its tensor work would run in eager
    too). A draw in a def nested in the function counts for it (the decorator goes on it). Draws in
    methods are not reported here: a method such as fairseq's `extract_features` holds the model's
    own layers (LayerDrop draws `np.random.random()` there), which must stay compiled; GM910 reports
    their scalar draws.
    """

    CODE = "GM918"
    NAME = "numpy-random-in-compiled-helper"
    FIX = "unsafe"
    MESSAGE = ("`{name}` draws from NumPy's random generator (`{call}()`, line {line}) in compiled code: Dynamo "
               "draws with torch's generator instead, so compiled results differ from eager, and the graph breaks "
               "where a draw becomes a Python value")
    TITLE = ("unsafe fix: run `{name}` in eager (`@{decorator}`), one break at its call; under torch.compile "
             "its draws then come from NumPy's generator, as in eager, not from torch's: the compiled results "
             "(and torch's later draws, such as dropout) change")

    VALID = [
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            def mask_indices(n):
                return np.random.choice(np.arange(n), 2, replace=False)

            @torch.compiler.disable
            def disabled(n):
                return np.random.rand(n)

            class M(nn.Module):
                def forward(self, x):
                    return x * torch.rand(()) + torch.as_tensor(disabled(4))

            idx = mask_indices(8)  # not compiled code
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            def mask_indices(n, p):
                eps = np.random.rand(1).item()
                return np.random.choice(np.arange(n), int(p * n + eps), replace=False)

            class M(nn.Module):
                def forward(self, x):
                    return x[:, torch.as_tensor(mask_indices(x.shape[1], 0.5))]
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        q = X.qualified(self, node.func)
        if q is None or not q.startswith("numpy.random.") or self.compiled_function(node) is None:
            return
        assert self.facts is not None
        helper = self.facts.scope.top_def(self.function_of(node))  # type: ignore[arg-type]
        seen = self.__dict__.setdefault("_seen", set())
        if helper in seen:
            return
        seen.add(helper)
        if helper in self.facts.scope.entries or self.facts.scope.index.functions.get(helper.name.value) is not helper:
            return  # methods hold a model's own work (GM910 reports their scalar draws)
        calls = context.calls_below(helper.body)
        if not any(_python_use(c) for c in calls):
            return  # draws kept as arrays do not break
        name = helper.name.value
        line = self.get_metadata(PositionProvider, node).start.line
        message = self.MESSAGE.format(name=name, call=X.dotted(node.func) or q, line=line)
        self.report_fix(helper, message, self._fix(helper, calls), at=helper.name)

    def _fix(self, helper: cst.FunctionDef, calls: list[cst.Call]) -> Fix | NoFix:
        name = helper.name.value
        if _yields(helper):
            return NoFix(f"`{name}` is a generator")
        torch_call = next((q for c in calls if (q := X.qualified(self, c.func) or "").startswith("torch.")), None)
        if torch_call is not None:
            return NoFix(f"`{name}` calls torch (`{torch_call}`), whose work would then run in eager too; "
                         "move the NumPy draws into a function of their own")
        spelled, needs_import = self.spell("torch.compiler.disable")
        decorator = cst.Decorator(cst.parse_expression(spelled))
        return Fix(helper.with_changes(decorators=[*helper.decorators, decorator]), base.Safety.UNSAFE,
                   title=self.TITLE.format(name=name, decorator=spelled), needs_torch_import=needs_import)


def _python_use(call: cst.Call) -> bool:
    """`.item()` / `.tolist()`, or a NumPy scalar draw (GM910's): where a traced draw becomes a Python value."""
    f = call.func
    if not isinstance(f, cst.Attribute) or call.args:
        return False
    draw = isinstance(f.value, cst.Attribute) and f.value.attr.value == "random" and f.attr.value in NP_NO_ARGS
    return f.attr.value in ("item", "tolist") or draw


class _Yield(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested def's yield is its own

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _yields(func: cst.FunctionDef) -> bool:
    v = _Yield()
    func.body.visit(v)
    return v.found
