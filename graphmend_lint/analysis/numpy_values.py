"""NumPy values in compiled code: where a Python-truth test or conversion reads one, and which
`numpy.<f>(...)` calls it comes from.

Dynamo traces NumPy code as tensors (`torch._numpy`), even on Python numbers: measured on torch
2.13 (eager backend, graph_breaks log), `lcm = np.lcm(self.a, self.b)` then
`if x.shape[-1] % lcm != 0:` is 1 break ("Data-dependent branching"), `if np.sqrt(self.a) > 1.5:`
1 break, `int(np.lcm(...))` 1 break; the same code with `math.lcm`/`math.sqrt` 0 breaks. A NumPy
value only used in arithmetic with tensors (`x / np.sqrt(d)`) or as a size does not break.
"""
from __future__ import annotations

import libcst as cst

from .. import fastwalk
from .bindings import dotted
from .tensors import NUMPY_ATTR

# numpy functions whose result is a constant or a Python value, never a traced NumPy value, whatever
# their arguments (`issubdtype` of constants is folded to a Python bool: measured, 0 breaks)
_QUERIES = {"dtype", "finfo", "iinfo", "result_type", "promote_types", "can_cast", "ndim", "shape", "isscalar",
            "issubdtype"}
# numpy names that are constants or types while tracing, not traced values
NOT_VALUES = _QUERIES | {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_"}
# `numpy.<f>` that torch._numpy lacks (torch 2.13, numpy 2.4): Dynamo breaks at the call, GB0294
# "attempted to trace numpy function unsupported by PyTorch", whatever the arguments.
# tests/test_gm917_numpy_calls.py checks the list against the installed torch.
UNTRACED = frozenset({
    "apply_along_axis", "apply_over_axes", "argpartition", "array2string", "array_repr", "array_str",
    "asanyarray", "asarray_chkfinite", "asfortranarray", "asmatrix", "astype", "base_repr",
    "binary_repr", "bitwise_count", "block", "bmat", "busday_count", "busday_offset", "compress",
    "cumulative_prod", "cumulative_sum", "datetime_as_string", "datetime_data", "delete", "digitize",
    "ediff1d", "einsum_path", "extract", "format_float_positional", "format_float_scientific", "frexp",
    "frombuffer", "fromfile", "fromfunction", "fromiter", "frompyfunc", "fromregex", "fromstring",
    "genfromtxt", "get_include", "get_printoptions", "getbufsize", "geterr", "geterrcall",
    "histogram_bin_edges", "info", "insert", "interp", "intersect1d", "is_busday", "isdtype",
    "isfortran", "isin", "isnat", "iterable", "ix_", "lexsort", "load", "loadtxt", "mask_indices",
    "matrix_transpose", "matvec", "may_share_memory", "mintypecode", "nanargmax", "nanargmin",
    "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod",
    "nanquantile", "nanstd", "nansum", "nanvar", "nested_iters", "packbits", "partition", "piecewise",
    "place", "poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul", "polysub",
    "polyval", "printoptions", "promote_types", "putmask", "ravel_multi_index", "require", "roots",
    "save", "savetxt", "savez", "savez_compressed", "select", "set_printoptions", "setbufsize",
    "setdiff1d", "seterr", "seterrcall", "setxor1d", "shares_memory", "show_config", "show_runtime",
    "sort_complex", "spacing", "test", "trapezoid", "trim_zeros", "typename", "union1d", "unique_all",
    "unique_counts", "unique_inverse", "unique_values", "unpackbits", "unravel_index", "unstack",
    "unwrap", "vecdot", "vecmat",
})
# `numpy.<f>` that torch._numpy has but that return a Python value (bool, int, dtype), not an
# array: GB0208 "torch.* op returned non-Tensor" at the call (measured on constants and tensors).
NOT_ARRAY = frozenset({"isscalar", "ndim", "size", "result_type", "can_cast", "iscomplexobj", "isrealobj",
                       "array_equal", "array_equiv", "allclose", "min_scalar_type", "common_type"})
MAX_DEPTH = 8


def numpy_call(b, node: cst.CSTNode) -> str | None:
    """`numpy.<f>` for a call of a NumPy function traced as a tensor computation, else None
    (`numpy.random.*` is GM910's; dtypes and `finfo` are constants)."""
    if not isinstance(node, cst.Call):
        return None
    q = b.qualify(node.func)
    if q is None or not q.startswith("numpy.") or q.startswith("numpy.random.") or q[6:] in NOT_VALUES:
        return None
    if q[6:] in UNTRACED or q[6:] in NOT_ARRAY:  # the call itself breaks: GM917's
        return None
    return q


def _python_value(q: str | None) -> bool:
    """A call of `q` gives a constant or a Python value (a query), or breaks by itself (GM917's)."""
    return breaking_call(q) is not None or (q is not None and q.startswith("numpy.") and q.count(".") == 1
                                            and q[6:] in _QUERIES)


def breaking_call(q: str | None) -> str | None:
    """The graph-break id of a call of `q` (a qualified name) when it is a NumPy function that
    breaks the graph by itself, else None."""
    if q is None or not q.startswith("numpy.") or q.count(".") != 1:
        return None
    if q[6:] in UNTRACED:
        return "GB0294"
    if q[6:] in NOT_ARRAY:
        return "GB0208"
    return None


def _to_python(b, node: cst.CSTNode) -> bool:
    """`v.item()`, `v.tolist()`, `int(v)`/`float(v)`/`bool(v)`: the value read is a Python one (Dynamo
    breaks at the call, where a NumPy `v` is traced, and resumes with its result)."""
    if not isinstance(node, cst.Call):
        return False
    f = node.func
    if isinstance(f, cst.Attribute):
        return f.attr.value in ("item", "tolist") and not node.args
    return isinstance(f, cst.Name) and f.value in ("int", "float", "bool") and b.qualify(f) is None


def compile_branch(b, node: cst.IfExp) -> bool:
    """`a if torch.compiler.is_compiling() and ... else b`: the form a fix writes; under compile `a`."""
    from . import context  # noqa: PLC0415 (context imports this package's modules)
    head = node.test
    while isinstance(head, cst.BooleanOperation) and isinstance(head.operator, cst.And):
        head = head.left
    return context.is_compiling_check(head, b)


def sources(mf, func: cst.FunctionDef, expr: cst.CSTNode) -> list[tuple[cst.FunctionDef, cst.CSTNode]]:
    """The NumPy calls (with the function holding each) whose values `expr` reads: through local
    names' assignments and the returns of same-file functions and `self.` methods it calls; and the
    `self.x` attributes that hold a NumPy value (an Attribute node, not a call)."""
    out: list = []
    seen: set = set()
    _walk(mf, func, expr, out, seen, 0)
    return out


def _walk(mf, func, node, out, seen, depth) -> None:
    if depth > MAX_DEPTH:
        return
    b = mf.bindings
    if isinstance(node, cst.Call) and _python_value(b.qualify(node.func)):
        return  # `np.issubdtype(a.dtype, ...)`, `np.ndim(a)`: not a NumPy value, whatever `a` is
    if _to_python(b, node):
        return  # `np.prod(ms).item()`, `int(np.lcm(a, b))`: a Python number after the call (its own break)
    if isinstance(node, cst.Call) and (b.qualify(node.func) or "").startswith("numpy.random."):
        return  # a draw (GM910/GM918's), whatever its arguments: `np.random.choice(np.arange(n))` is random
    if numpy_call(b, node) is not None or _numpy_attr(mf, func, node):
        if (func, node) not in seen:
            seen.add((func, node))
            out.append((func, node))
        return
    if isinstance(node, cst.IfExp) and compile_branch(b, node):
        _walk(mf, func, node.body, out, seen, depth + 1)  # what compiled code runs
        return
    if isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
        return
    if isinstance(node, cst.Name):
        key = (func, node.value)
        if key in seen:
            return
        seen.add(key)
        for v in mf.function(func).assigned.get(node.value, []):
            if v is not None:
                _walk(mf, func, v, out, seen, depth + 1)
        return
    if isinstance(node, cst.Call):
        callee = callee_of(mf, func, node)
        if callee is not None and (callee, "return") not in seen:
            seen.add((callee, "return"))
            for ret in returns(callee):
                _walk(mf, callee, ret, out, seen, depth + 1)
    for child in node.children:
        _walk(mf, func, child, out, seen, depth)


def _numpy_attr(mf, func, node: cst.CSTNode) -> bool:
    """`self.x` where `__init__` stores a NumPy value (tensors.numpy_attrs): a source of its own."""
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self" \
        and mf.function(func).module_attrs.get(node.attr.value) == NUMPY_ATTR


def callee_of(mf, func: cst.FunctionDef, call: cst.Call) -> cst.FunctionDef | None:
    """The same-file function or `self.` method `call` calls, when one is found."""
    name = dotted(call.func)
    if name is None:
        return None
    idx = mf.scope.index
    if "." not in name and mf.bindings.qualify(call.func) is None:
        return idx.functions.get(name)
    owner = idx.class_of.get(func)
    if owner is not None and name.startswith("self.") and name.count(".") == 1:
        return mf.scope.method(owner, name[5:])
    return None


def returns(func: cst.FunctionDef) -> list[cst.BaseExpression]:
    """The values `func` returns (not those of nested defs)."""
    found: list = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is func

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            if node.value is not None:
                found.append(node.value)

    fastwalk.visit(func, V())
    return found
