from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from . import base


class TensorToPythonScalarRule(base.GraphMendRule):
    """
    ## What it does
    Finds `int(t)`, `float(t)` and `bool(t)` of a value the analysis proves to be a tensor, in code
    that runs under `torch.compile` (outside `if`/`while`/`assert` tests, which the GM1xx/GM3xx
    rules report), and the truth Python takes of a tensor there: `not t`, and `t` as the left
    operand of `and`/`or` (open-flamingo's `use_cached = self._use_cached and not
    media_locations.any()`; measured on torch 2.13: each breaks where it is evaluated, "Data
    dependent operator" / "Data-dependent branching", which `capture_scalar_outputs` does not
    remove). Conversions of shapes, sizes, config values and Python numbers are not reported.

    ## Why it breaks the graph
    The conversion calls `Tensor.item()` under the hood: Dynamo breaks with GB0124
    "Unsupported Tensor.item() call with capture_scalar_outputs=False" (measured on torch 2.13:
    2 graphs / 1 break for each of `int`, `float`, `bool`). With
    `torch._dynamo.config.capture_scalar_outputs = True` it is traced (1 graph / 0 breaks).

    ## Example
    ```python
    class Norm(nn.Module):
        def forward(self, x):
            return x / float(x.norm())
    ```

    ## Fix
    Keep the tensor (`x / x.norm()`), or set `capture_scalar_outputs = True`.

    ## Fix safety
    No automatic fix: a 0-d tensor promotes dtypes differently from a Python number and
    cannot be used where Python needs a number (`range`, string formatting, slicing).

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM904"
    NAME = "tensor-to-python-scalar"
    FIX = "none"
    MESSAGE = ("`{conv}()` of a tensor calls `.item()` and breaks the graph (GB0124); keep the value as a "
               "tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    n = int(x.shape[0])
                    scale = float(self.config.scale)
                    return x[:n] * scale
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
                    return x / float(x.norm())
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    k = int((x > 0).sum())
                    return x * k
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            def offsets(lengths: torch.Tensor) -> torch.LongTensor:
                return torch.diff(lengths).cumsum(-1)

            class M(nn.Module):
                def forward(self, x, lengths):
                    return x[: int(offsets(lengths)[-1])]
            """
        ),
    ]

    TRUTH_MESSAGE = ("`{op}` on a tensor calls `bool()`, reads its value and breaks the graph; keep it a tensor "
                     "(`torch.logical_not`, `torch.logical_and`/`logical_or`) or test it where it is used")

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._truth(node, node.expression, "not")

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        # Python tests the left operand's truth; the right one is the value (tested where it is used)
        self._truth(node, node.left, "and" if isinstance(node.operator, cst.And) else "or")

    def _truth(self, node: cst.BaseExpression, operand: cst.BaseExpression, op: str) -> None:
        """open-flamingo's `self._use_cached and not media_locations.any()`, fairseq's
        `m.any() or x.dim() == 3` (measured: each breaks where it is evaluated)."""
        if isinstance(operand, cst.BooleanOperation) or isinstance(operand, cst.UnaryOperation) \
                and isinstance(operand.operator, cst.Not):
            return  # the inner operation reports its own operand
        v = X.value(self, node, operand)
        if v is None or not v.is_tensor or X.in_branch_test(node, self.parent):
            return
        if self._in_truth_operand(node):
            return  # `not (a and t)`: reported once, where the truth is taken
        self.report(node, self.TRUTH_MESSAGE.format(op=op), at=operand)

    def _in_truth_operand(self, node: cst.CSTNode) -> bool:
        up = self.parent(node)
        return isinstance(up, cst.UnaryOperation) and isinstance(up.operator, cst.Not) or \
            isinstance(up, cst.BooleanOperation) and up.left is node

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Name) and func.value in ("int", "float", "bool")) or len(node.args) != 1:
            return
        if X.qualified(self, func) is not None or node.args[0].star or X.chain_has(node.args[0].value, "numpy"):
            return  # conversions of `.numpy()` results are GM903's
        v = X.value(self, node, node.args[0].value)
        if v is None or not v.is_tensor or X.in_branch_test(node, self.parent):
            return
        self.report(node, self.MESSAGE.format(conv=func.value))
