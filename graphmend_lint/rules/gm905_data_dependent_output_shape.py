from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import context
from ..analysis import explain as X
from ..analysis import tables as T
from . import base

DYNAMIC_FUNCS = T.DYNAMIC_FUNCS


class DataDependentOutputShapeRule(base.GraphMendRule):
    """
    ## What it does
    Finds operators whose output shape depends on tensor values, in code that runs under
    `torch.compile`: `nonzero`, `argwhere`, one-argument `torch.where(cond)`, `masked_select`,
    `unique`, `unique_consecutive`, `bincount` (also with `minlength`: torchao's histogram observer),
    and indexing with a boolean mask (`x[x > 0]`, also
    `x[mask] += 1`, which reads `x[mask]` first; an assignment such as `x[mask] = 0` keeps the shape
    and is not reported).

    ## Why it breaks the graph
    Dynamo cannot give the result a static shape: GB0036 "Dynamic shape operator" (measured on
    torch 2.13: 2 graphs / 1 break each). `torch._dynamo.config.capture_dynamic_output_shape_ops =
    True` traces them with unbacked symbolic sizes (1 graph / 0 breaks); `fullgraph=True` turns
    that on too, so "passes fullgraph" does not mean "no break" under a plain `torch.compile`.

    ## Example
    ```python
    class Pos(nn.Module):
        def forward(self, x: torch.Tensor):
            return x[x > 0].sum()
    ```

    ## Fix
    Keep the shape fixed: `torch.where(x > 0, x, 0).sum()`, `masked_fill`, or multiply by the mask;
    otherwise set `capture_dynamic_output_shape_ops = True`.

    ## Fix safety
    No automatic fix: the fixed-shape form differs for reductions such as `mean` or `max`,
    and in what later code receives.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM905"
    NAME = "data-dependent-output-shape"
    FIX = "none"
    MESSAGE = ("`{op}` has a data-dependent output shape and breaks the graph (GB0036); keep shapes fixed "
               "(`torch.where`, `masked_fill`), or set `torch._dynamo.config.capture_dynamic_output_shape_ops = True`")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, mask):
                    x[x < 0] = 0
                    return torch.where(x > 0, x, 0).sum() + x[:, 0].sum()
            """
        ),
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, scores):
                    mask, probs = self.router(x)
                    if self.training:
                        mask = mask.bool()
                    return x[mask[:, 0]] * probs
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
                    mask, probs = self.router(x)
                    mask = mask.bool()
                    return x[mask[:, 0]] * probs
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x: torch.Tensor):
                    return x[x > 0].sum()
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class PromptEncoder(nn.Module):
                def forward(self, points: torch.Tensor, labels: torch.Tensor):
                    points[labels == 1] += self.weight
                    return points
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    idx = torch.nonzero(x > 0)
                    return idx, torch.unique(x)
            """
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        q = X.qualified(self, node.func)
        if q is not None and q.startswith("torch."):
            name = q.rsplit(".", 1)[1]
            if q in (f"torch.{n}" for n in DYNAMIC_FUNCS) or (q == "torch.where" and len(node.args) == 1):
                if X.value(self, node, node) is not None:
                    self.report(node, self.MESSAGE.format(op=f"torch.{name}"))
            return
        attr = X.method_call(node, *DYNAMIC_FUNCS)
        if attr is None:
            return
        v = X.value(self, node, attr.value)
        if v is not None and v.kind != "static" and not self._static_receiver(attr):
            self.report(node, self.MESSAGE.format(op=f".{attr.attr.value}()"))

    def _static_receiver(self, attr: cst.Attribute) -> bool:
        return X.qualified(self, attr.value) is not None  # np.unique, a module function

    def visit_Subscript(self, node: cst.Subscript) -> None:
        up = self.parent(node)
        if X.is_assign_target(node, self.parent) and not isinstance(up, cst.AugAssign):
            return  # `x[mask] = v` keeps the shape; `x[mask] += v` reads `x[mask]` first
        for el in node.slice:
            if isinstance(el.slice, cst.Index) and self._bool_mask(node, el.slice.value):
                self.report(node, self.MESSAGE.format(op="boolean-mask indexing"))
                return

    def _bool_mask(self, node: cst.Subscript, index: cst.BaseExpression) -> bool:
        v = X.value(self, node, index)
        if v is None:
            return False
        if v.is_tensor and v.dtype == "bool":
            return True
        return self._made_bool(node, index)

    def _may_bind_mask(self, use: cst.CSTNode, name: str) -> bool:
        """Some binding of `name` in the function is a `.bool()` call, `~x` or a name (the search
        for the binding that reaches the use is skipped for the rest: most indices)."""
        func = self.compiled_function(use)
        values = self.facts.function(func).assigned.get(name, []) if func is not None else []
        return any(isinstance(v, (cst.Name, cst.Subscript)) or
                   isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.BitInvert) or
                   isinstance(v, cst.Call) and X.method_call(v, "bool") is not None for v in values)

    def _made_bool(self, use: cst.Subscript, index: cst.BaseExpression, depth: int = 0) -> bool:
        """`m = m.bool()` as the binding of `m` that reaches the use (the facts join all bindings of
        a name, so an earlier unknown binding would hide it), in the use's block or one around it
        (vLLM's `if`/`elif` arms); also through `~m` and a name bound to it; `m[:, :, i]` keeps the dtype."""
        while isinstance(index, cst.Subscript) and all(isinstance(e.slice, cst.Slice) or
                                                       isinstance(e.slice.value, (cst.Name, cst.Integer))
                                                       for e in index.slice):
            index = index.value
        if isinstance(index, cst.UnaryOperation) and isinstance(index.operator, cst.BitInvert):
            return self._made_bool(use, index.expression, depth + 1)
        if isinstance(index, cst.Call):
            return X.method_call(index, "bool") is not None and not index.args
        if not isinstance(index, cst.Name) or depth > 4 or not self._may_bind_mask(use, index.value):
            return False
        value = X.last_binding(self, use, index)
        if value is None:
            value = context.reaching_value(use, index.value, self.parent)
        return value is not None and self._made_bool(use, value, depth + 1)

