from __future__ import annotations

import libcst as cst
from fixit import Invalid, Valid

from ..analysis import explain as X
from ..analysis import tables as T
from . import base

SIZE_METHODS = T.SIZE_METHODS  # method -> the arguments before its sizes
SIZE_FUNCS = T.SIZE_FUNCS
SIZE_KEYWORDS = {"torch.nn.functional.one_hot": "num_classes"}  # a size passed by keyword


def _may_be_tensor(e: cst.BaseExpression) -> bool:
    """A form that can hold a tensor: not a literal, `...`, `-1`, a string, None/True/False."""
    return isinstance(e, (cst.Name, cst.Attribute, cst.Call, cst.BinaryOperation, cst.Subscript)) and not (
        isinstance(e, cst.Name) and e.value in ("None", "True", "False"))


class TensorAsSizeRule(base.GraphMendRule):
    """
    ## What it does
    Finds tensors used where Python needs an integer, in code that runs under `torch.compile`:
    slice bounds (`x[:n]` with `n = mask.sum()`, also `x[slice(ptr[i], ptr[i + 1])]`), 0-d integer tensors used as an index
    (`x[i]` with `i = torch.argmax(scores)`: effdet's soft-NMS) and tensors passed as sizes or offsets (one
    element each, or eager raises; `for h, w in spatial_shapes` unpacks a tensor's rows into tensors) to
    `view`, `reshape`, `expand`, `repeat` (lavis's `h.repeat(n, 1)`), `new_zeros`/`new_ones`/`new_empty`, `narrow`,
    `torch.zeros`/`ones`/`empty`, as the count of a list repetition (`[h] * n`), and as `F.one_hot`'s `num_classes` (mixture-of-experts'
    `F.one_hot(indexes, max(indexes.max() + 2, n))`; `capture_scalar_outputs` does not remove that
    break). Shapes, sizes and Python ints are not reported.

    ## Why it breaks the graph
    Dynamo has to turn the tensor into a Python int. For a slice bound that is
    GB0124 "Unsupported Tensor.item() call with capture_scalar_outputs=False", and measured on
    torch 2.13 this break cannot be resumed: Dynamo compiles up to it and runs the REST OF THE
    FUNCTION in eager (`explain()` reports 0 breaks, the graph-break log shows it). For a size
    argument it is GB0033 "Data dependent operator" (measured for `narrow`, `view`, `new_zeros`,
    `torch.zeros`; Longformer's global attention hits it). With
    `torch._dynamo.config.capture_scalar_outputs = True` slices are traced with an unbacked size.

    ## Example
    ```python
    class Head(nn.Module):
        def forward(self, x, mask):
            n = mask.sum()
            return x[:n]
    ```

    ## Fix
    Keep shapes fixed (mask instead of slicing), use `torch.narrow`/`index_select` with
    `capture_scalar_outputs = True`, or move the slicing out of the compiled region.

    ## Fix safety
    No automatic fix: the output shape itself depends on the data.

    ## When no fix is offered
    Always (detection only).
    """

    CODE = "GM906"
    NAME = "tensor-as-size"
    FIX = "none"
    MESSAGE = ("slice bound is a tensor: Dynamo calls `.item()` on it and breaks the graph (GB0124), "
               "running the rest of the function eagerly; keep shapes fixed, or set "
               "`torch._dynamo.config.capture_scalar_outputs = True`")
    INDEX_MESSAGE = ("index is a 0-d integer tensor: Dynamo reads its value (`.item()`) and breaks the graph "
                     "(measured on torch 2.13; `capture_scalar_outputs` does not always remove it); index with a "
                     "1-element tensor (`keepdim=True`) or `torch.gather`")
    REPEAT_MESSAGE = ("a list repeated by a 0-d tensor: Python reads its value and breaks the graph (no config "
                      "removes it, measured on torch 2.13); repeat a tensor instead (`h.expand(n, ...)`, "
                      "`h.repeat(n, 1)`), or pass a Python int")
    CLASSES_MESSAGE = ("`F.one_hot` gets a tensor as `num_classes`: Dynamo reads its value and breaks the graph "
                       "(no config removes it, measured on torch 2.13); pass a Python int")
    SIZE_MESSAGE = ("`{name}` gets a tensor as a size or offset: Dynamo reads its value and breaks the graph "
                    "(GB0033); pass a Python int (a shape), or keep shapes fixed")

    VALID = [
        Valid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, n: int):
                    half = x.shape[1] // 2
                    return x[:, :half] + x[:n, half:]
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
                    n = (mask > 0).sum()
                    return x[:n]
            """
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x, counts):
                    k = counts.max()
                    return x.narrow(-1, 0, k)
            """
        ),
    ]

    def visit_Subscript(self, node: cst.Subscript) -> None:
        for el in node.slice:
            s = el.slice
            if isinstance(s, cst.Index) and s.star is None:  # `x[idx]`, idx = torch.argmax(scores): a 0-d int tensor
                if not _may_be_tensor(s.value):
                    continue
                v = X.value(self, node, s.value)
                if v is not None and v.is_tensor and v.zero_dim and v.dtype == "int":
                    self.report(node, self.INDEX_MESSAGE, at=s.value)
                    return
                continue
            if not isinstance(s, cst.Slice):
                continue
            for bound in (s.lower, s.upper, s.step):
                if bound is None:
                    continue
                v = X.value(self, node, bound)
                if v is not None and v.is_tensor:
                    self.report(node, self.MESSAGE, at=bound)
                    return

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        """`[h] * n` with `n` a 0-d tensor (lavis's BLIP VQA: `[state] * n_answers`): Python needs the count."""
        if not isinstance(node.operator, cst.Multiply):
            return
        for seq, count in ((node.left, node.right), (node.right, node.left)):
            if isinstance(seq, (cst.List, cst.Tuple, cst.ListComp)) and _may_be_tensor(count):
                v = X.value(self, node, count)
                if v is not None and v.is_tensor and v.zero_dim:
                    self.report(node, self.REPEAT_MESSAGE, at=count)
                return

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "slice" and X.qualified(self, node.func) is None:
            for arg in node.args:  # `x[slice(ptr[i], ptr[i + 1])]` (neuralop's segment_csr): slice bounds too
                v = X.value(self, node, arg.value) if not arg.star and _may_be_tensor(arg.value) else None
                if v is not None and v.is_tensor:
                    self.report(node, self.MESSAGE, at=arg.value)
                    return
            return
        q = X.qualified(self, node.func)
        skip = SIZE_FUNCS.get(q) if q is not None else None
        name = q
        attr = X.method_call(node, *SIZE_METHODS)
        if skip is None and attr is not None and q is None:
            skip, name = SIZE_METHODS[attr.attr.value], f".{attr.attr.value}()"
        if skip is None:
            return
        keyword = SIZE_KEYWORDS.get(q) if q is not None else None
        for arg in [*node.args[skip:], *(a for a in node.args[:skip] if a.keyword is not None)]:
            if arg.star or arg.keyword is not None and arg.keyword.value != keyword:
                continue
            v = X.value(self, node, arg.value)
            if v is None:
                return
            if v.is_tensor and (v.zero_dim or not self._bare_parameter(node, arg.value)) \
                    or self._max_of_a_tensor(node, arg.value):  # a tensor there must have one element
                message = self.CLASSES_MESSAGE if keyword is not None else self.SIZE_MESSAGE.format(name=name)
                self.report(node, message, at=arg.value)
                return

    def _bare_parameter(self, node: cst.Call, e: cst.BaseExpression) -> bool:
        """A parameter never rebound, a tensor only by its annotation, which a size often gets wrong
        (transformers 4.44 mixtral's `num_experts: torch.Tensor = None` is an int): 0-d or not reported."""
        if not isinstance(e, cst.Name):
            return False
        facts = self.facts.function(self.compiled_function(node))
        return e.value in facts.params and e.value not in facts.assigned

    def _max_of_a_tensor(self, node: cst.Call, e: cst.BaseExpression) -> bool:
        """`max(idx.max() + 1, n)` / `min(...)`: a 0-d tensor among the arguments, which Dynamo
        keeps a tensor (mixture-of-experts' `F.one_hot(indexes, max(indexes.max() + 1, max_length))`)."""
        if not (isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value in ("max", "min")
                and X.qualified(self, e.func) is None and len(e.args) >= 2):
            return False
        vals = [X.value(self, node, a.value) for a in e.args if a.keyword is None and not a.star]
        return any(v is not None and v.is_tensor and v.zero_dim for v in vals)
