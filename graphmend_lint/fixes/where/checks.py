"""Trace-time checks: a missing proof that is a Python constant while Dynamo traces (a type, a
dtype, a shape) becomes a check of the compile-only form. Each returns (missing proof, check)."""
from __future__ import annotations

import libcst as cst

from ...analysis import tables as T
from ...analysis.bindings import dotted
from ...analysis.tensors import bool_literal, number_literal
from ..syntax import code, literal_int, strip_parens
from .values import Values
from .verdict import FLOAT_DTYPES


class Checks(Values):
    def index_guard(self, n: cst.Subscript) -> tuple[list[str], list[str]] | None:
        """`x[idx]`, `x[:, 0]`, `x[1:, idx]`, `m[:, None, :]`, `m[..., None]`: (the tensor indices, the
        trace-time checks under which the indexing cannot raise once each tensor index is 0 where its
        branch is not taken), or None for other forms. `x` must have a dim for each index other than
        `None` and `...` (`x.dim() >= k`); a tensor index must be a long tensor (not a mask, whose
        result shape depends on the data) and the dim it indexes non-empty; an integer index within
        its dim's size. After `...` only slices and `None` (their dims count from the end)."""
        base = dotted(n.value)
        if base is None or base.split(".")[0] in self.local or not n.slice or self.mask_index(n):
            return None  # a bool mask index: the long-index check below could never hold
        parts = [el.slice for el in n.slice]
        ellipsis = [p for p in parts if isinstance(p, cst.Index) and isinstance(p.value, cst.Ellipsis)]
        if len(ellipsis) > 1 or ellipsis and not all(
                isinstance(p, cst.Slice) or _none(p) or p in ellipsis for p in parts):
            return None
        tensor = code(self.torch("torch.Tensor"))
        checks = [] if self.is_tensor(n.value) else [f"isinstance({base}, {tensor})"]
        names: list[str] = []
        d = 0  # the dim of `x` the next index applies to
        for part in parts:
            if _none(part) or part in ellipsis:
                continue  # a new dim of size 1, or the dims left
            d += 1
            if isinstance(part, cst.Slice):
                for bound in (part.lower, part.upper, part.step):
                    if bound is not None and literal_int(bound) is None:
                        return None
                if part.step is not None and literal_int(part.step) == 0:
                    return None  # slice step cannot be zero
                continue
            k = literal_int(part.value)
            if k is not None:
                checks.append(f"{base}.shape[{d - 1}] > {k}" if k >= 0 else f"{base}.shape[{d - 1}] >= {-k}")
                continue
            name = dotted(part.value)
            if name is None or name in ("None", "True", "False") or name.split(".")[0] in self.local:
                return None
            is_t = "" if self.is_tensor(part.value) else f"isinstance({name}, {tensor}) and "
            checks.append(f"{is_t}{name}.dtype == {code(self.torch('torch.long'))}")
            checks.append(f"{base}.shape[{d - 1}] > 0")
            names.append(name)
        if d:  # too many indices raise; a 0-d tensor takes no slice
            checks.insert(0 if self.is_tensor(n.value) else 1, f"{base}.dim() >= {d}")
        if not checks:
            return names, []  # only `None` and `...`: they cannot raise
        return names, list(dict.fromkeys(checks))

    def mask_index(self, n: cst.Subscript) -> str | None:
        """The index of `x[..., m, ...]` that is a bool tensor (a comparison, say), if any: the result's
        shape depends on the data, so no compile-only form can compute it in both branches."""
        for el in n.slice:
            if isinstance(el.slice, cst.Index) and self.ff.value(el.slice.value).dtype == "bool":
                return code(el.slice.value)  # a Python bool (a comparison of non-tensors) fails the check too
        return None

    def masked_fill(self, call: cst.Call) -> tuple[str, str | None] | None:
        """`x.masked_fill(m, v)` (or `torch.masked_fill(x, m, v)`) raises unless `m` is a bool tensor
        that broadcasts to `x` and `v` fits `x`'s dtype; when its branch is not taken the `if` never
        ran it. (missing proof, trace-time check or None) for such a call, None for other calls.
        The mask: a name, a name with basic indexing (its index checked by `index_guard`, visited
        first), or one compared with a number (bool, the name's shape). The broadcast checked keeps
        `x`'s shape. The value: a number literal, `float("-inf")`-like, `torch.finfo(x.dtype).min`."""
        op, recv, rest = self.op_name(call)
        if op != "masked_fill" or recv is None:
            return None
        why = (f"`{code(call)}` raises when its branch is not taken unless the mask is a bool tensor that "
               f"broadcasts to `{code(recv)}` and the value fits its dtype")
        x = dotted(recv)
        if x is None or x.split(".")[0] in self.local or len(rest) != 2 or any(a.keyword or a.star for a in rest):
            return why, None
        mask, value = strip_parens(rest[0].value), rest[1].value
        if isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1 and self.number(mask.comparisons[0].comparator)[0]:
            shaped, bool_dtype = strip_parens(mask.left), True
        else:
            shaped, bool_dtype = mask, False
        base = shaped.value if isinstance(shaped, cst.Subscript) else shaped
        if dotted(base) is None or dotted(base).split(".")[0] in self.local:
            return why, None
        tensor = code(self.torch("torch.Tensor"))
        m = code(shaped)
        out = []
        if isinstance(shaped, cst.Subscript):  # the index first (its dims), here rather than apart:
            guard = self.index_guard(shaped)  # the checks are sorted, isinstance ones first
            if guard is None or guard[0]:
                return why, None
            out += guard[1]
        elif not self.is_tensor(shaped):
            out.append(f"isinstance({m}, {tensor})")
        if not self.is_tensor(recv):
            out.append(f"isinstance({x}, {tensor})")
        if not bool_dtype:
            out.append(f"{m}.dtype == {code(self.torch('torch.bool'))}")
        out.append(f"{m}.dim() <= {x}.dim() and all(a in (1, b) for a, b in zip({m}.shape[::-1], {x}.shape[::-1]))")
        fits = self._fill_value(value, x)
        if fits is None:
            return why, None
        return why, " and ".join(out + fits)

    def _fill_value(self, value: cst.BaseExpression, x: str) -> list[str] | None:
        """The checks under which `masked_fill` can store `value` in `x` (it raises on overflow, on
        -inf in an integer dtype), or None when `value` is of no known form."""
        floating = [] if self.is_float(cst.parse_expression(x)) else [f"{x}.is_floating_point()"]
        parsed = float_literal(value) if isinstance(value, cst.Call) else None
        if parsed is not None:
            v = abs(parsed)
            if v != v or v == float("inf"):  # nan, inf: every floating dtype holds them
                return floating
            return None if v > 3e38 else floating + ([f"{x}.dtype != {code(self.torch('torch.float16'))}"] if v > 65504 else [])
        if isinstance(value, cst.Attribute) and value.attr.value in ("min", "max") and isinstance(value.value, cst.Call) \
                and self.b.qualify(value.value.func) == "torch.finfo" and len(value.value.args) == 1:
            arg = value.value.args[0].value
            return floating if code(arg) == f"{x}.dtype" else None
        inner = value.expression if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) else value
        if not isinstance(inner, (cst.Integer, cst.Float)):
            return None
        v = float(inner.evaluated_value)
        if v > 3e38:
            return None
        if v in (0.0, 1.0) and inner is value:
            return []  # every dtype holds 0 and 1 (not -1: uint8)
        return floating + ([f"{x}.dtype != {code(self.torch('torch.float16'))}"] if v > 65504 else [])

    def tensor_data(self, call: cst.Call) -> tuple[str | None, str | None]:
        """`torch.tensor(self.factors, dtype=torch.float32, device=x.device)`: it cannot raise when the
        data is a flat list or tuple of numbers, a Python constant while tracing, so the compile-only
        form can check it. (missing proof, check) or (None, None) for other constructors."""
        if self.b.qualify(call.func) not in ("torch.tensor", "torch.as_tensor") or not call.args:
            return None, None
        data, rest = call.args[0], call.args[1:]
        literal = _number_literals(data.value)
        name = dotted(data.value) if not literal else None
        if data.keyword is not None or data.star or name is None and not literal:
            return None, None
        for a in rest:
            kw = a.keyword.value if a.keyword is not None else None
            if kw == "dtype" and (self.b.qualify(a.value) or "").startswith("torch.") and \
                    (self.b.qualify(a.value) or "")[6:] in FLOAT_DTYPES | {"int64", "int32", "long", "int"}:
                continue
            if kw == "device" and isinstance(a.value, cst.Attribute) and a.value.attr.value == "device":
                continue
            return None, None
        if literal:  # `torch.tensor(False)`, `torch.tensor([0.5, 1])`: nothing to check
            return "", None
        return (f"`{name}` is not provably a flat list of numbers (`{code(call.func)}` raises on other data "
                "when its branch is not taken)",
                f"isinstance({name}, (list, tuple)) and all(isinstance(v, (int, float)) for v in {name})")

    def like_data(self, call: cst.Call) -> tuple[str | None, str | None]:
        """`torch.zeros_like(h)`, `torch.full_like(h, 0.5)`: it cannot raise when `h` is a tensor
        (a Python constant while tracing); (missing proof, check), or (None, None) for other forms."""
        q = self.b.qualify(call.func) or ""
        if q not in ("torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like") or not call.args:
            return None, None
        first, rest = call.args[0], call.args[1:]
        name = dotted(first.value)
        if first.keyword is not None or first.star or name is None or name.split(".")[0] in self.local:
            return None, None
        if q == "torch.full_like":
            if len(rest) != 1 or rest[0].keyword is not None or not self.number(rest[0].value)[0]:
                return None, None
        elif rest:
            return None, None
        why = f"`{name}` is not provably a tensor (`{code(call.func)}` raises on other values when its branch is not taken)"
        if self.is_tensor(first.value):
            return "", None  # proved
        return why, f"isinstance({name}, {code(self.torch('torch.Tensor'))})"

    def empty_check(self, call: cst.Call) -> tuple[str, str] | None:
        """`x.amax()` raises on an empty `x` (`x.std()` warns on one element): the element count is
        a shape, a Python constant while Dynamo traces (sizes 0 and 1 are always specialized), so the
        compile-only form can check it instead of refusing. (missing proof, check) or None."""
        op, recv, rest = self.op_name(call)
        name = dotted(recv) if recv is not None else None
        if name is None and recv is not None:  # `h.abs().amax()`: a shape-keeping chain of `h`
            chain = self.chain(recv)
            name = chain.base if chain is not None else None
            recv = cst.Name(name) if name is not None else recv
        if name is None or op not in T.RAISES_ON_EMPTY | T.WARNS_ON_EMPTY or op not in T.REDUCTIONS:
            return None
        if op in T.WARNS_ON_EMPTY and (rest or call.args and self.b.qualify(call.func) is None):
            return None  # a reduction over one dim warns on a size-1 dim: not a count of elements
        least = 1 if op in T.WARNS_ON_EMPTY else 0
        check = f"{name}.numel() > {least}"
        if not self.is_tensor(recv):
            check = f"isinstance({name}, {code(self.torch('torch.Tensor'))}) and {check}"
        verb = "warns on fewer than two elements" if least else "raises on an empty tensor"
        return f"`{code(call.func)}` {verb} when its branch is not taken", check


def _none(part: cst.BaseSlice) -> bool:
    """The index `None` (a new dim of size 1)."""
    return isinstance(part, cst.Index) and isinstance(part.value, cst.Name) and part.value.value == "None"


def float_literal(call: cst.Call) -> float | None:
    """The value of `float("<literal>")` when Python parses the string (`float("-inf")`), else None."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "float" and len(call.args) == 1
            and isinstance(call.args[0].value, cst.SimpleString) and call.args[0].keyword is None
            and not call.args[0].star):
        return None
    try:
        return float(call.args[0].value.evaluated_value)
    except (ValueError, TypeError):
        return None


def _number_literals(e: cst.BaseExpression) -> bool:
    """A number or bool literal, or a flat list or tuple of them: data `torch.tensor` always takes."""
    def one(x: cst.BaseExpression) -> bool:
        return number_literal(x) is not None or bool_literal(x)

    if isinstance(e, (cst.List, cst.Tuple)):
        return all(not isinstance(el, cst.StarredElement) and one(el.value) for el in e.elements)
    return one(e)
