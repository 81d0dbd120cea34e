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

# numpy names that are constants or types while tracing, not traced values
NOT_VALUES = {"dtype", "finfo", "iinfo", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
              "uint8", "bool_", "result_type", "promote_types", "can_cast", "ndim", "shape", "isscalar"}
MAX_DEPTH = 8


def numpy_call(b, node: cst.CSTNode) -> str | None:
    """`numpy.<f>` for a call of a NumPy function traced as a tensor computation, else None
    (`numpy.random.*` is GM910's; dtypes and `finfo` are constants)."""
    if not isinstance(node, cst.Call):
        return None
    q = b.qualify(node.func)
    if q is None or not q.startswith("numpy.") or q.startswith("numpy.random.") or q[6:] in NOT_VALUES:
        return None
    return q


def compile_branch(b, node: cst.IfExp) -> bool:
    """`a if torch.compiler.is_compiling() and ... else b`: the form a fix writes; under compile `a`."""
    from . import context  # noqa: PLC0415 (context imports this package's modules)
    head = node.test
    while isinstance(head, cst.BooleanOperation) and isinstance(head.operator, cst.And):
        head = head.left
    return context.is_compiling_check(head, b)


def sources(mf, func: cst.FunctionDef, expr: cst.CSTNode) -> list[tuple[cst.FunctionDef, cst.Call]]:
    """The NumPy calls (with the function holding each) whose values `expr` reads: through local
    names' assignments and the returns of same-file functions and `self.` methods it calls."""
    out: list = []
    seen: set = set()
    _walk(mf, func, expr, out, seen, 0)
    return out


def _walk(mf, func, node, out, seen, depth) -> None:
    if depth > MAX_DEPTH:
        return
    b = mf.bindings
    if numpy_call(b, node) is not None:
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
