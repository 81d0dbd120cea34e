"""Tensor facts for expressions in one function: is it a tensor, is it 0-d, its dtype.

`FunctionFacts(func, ...).value(expr)` classifies an expression:
  tensor   - a torch.Tensor (rank and dtype when provable)
  data     - a Python value computed from tensor data (`.item()`, `torch.equal`)
  mixed    - a name bound to a tensor on some paths and to a value known at trace time on others
             (`skip = False; if self.training: skip = torch.rand([]) < p`): a test of it breaks
             where it is a tensor; no fix treats it as one
  static   - known at trace time (shapes, dtypes, config, literals)
  unknown  - anything else (never flagged: precision first)
numpy values are "static" with `numpy=True`: never tensors, and what is computed from them
(`.max()`, arithmetic, subscripts) stays numpy; a name bound to numpy and never to a tensor is numpy.
Local names are followed through their assignments in the same function.
"""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .. import fastwalk  # read-only walk without libcst's node rebuilding
from . import context
from . import tables as T
from .bindings import Bindings, ReadNames, dotted


@dataclass(frozen=True)
class Value:
    kind: str  # "tensor" | "data" | "mixed" | "static" | "unknown"
    zero_dim: bool = False
    dtype: str | None = None  # "bool" | "int" | "float" | None (unknown)
    numpy: bool = False  # a numpy value (kind "static": never a tensor, never flagged)

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    @property
    def data_dependent(self) -> bool:
        """Python truth of this value depends on tensor data (a graph break under Dynamo)."""
        return self.kind in ("tensor", "data", "mixed")


STATIC = Value("static")
UNKNOWN = Value("unknown")
DATA = Value("data")
MIXED = Value("mixed")
NUMPY = Value("static", numpy=True)
NUMPY_MODULES = ("numpy", "np")
_LITERALS = frozenset({cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                       cst.FormattedString})  # classes without subclasses


def tensor(zero_dim: bool = False, dtype: str | None = None) -> Value:
    return Value("tensor", zero_dim, dtype)


def _has_dim_arg(call: cst.Call, skip_first: bool) -> bool:
    args = list(call.args)[1 if skip_first else 0 :]
    return any(a.keyword is None or a.keyword.value in T.DIM_KEYWORDS for a in args if a.star == "")


def _reduction_dtype(rule: str, inp: str | None) -> str | None:
    if rule in ("bool", "int", "float"):
        return rule
    if rule == "sum":
        return "float" if inp == "float" else ("int" if inp in ("int", "bool") else None)
    return inp  # "same"


def number_literal(node: cst.BaseExpression) -> str | None:
    """"int" or "float" for a number literal (with a sign), else None."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    if isinstance(node, cst.Integer):
        return "int"
    if isinstance(node, cst.Float):
        return "float"
    return None


def bool_literal(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value in ("True", "False")


def _join(values: list[Value]) -> Value:
    if not values:
        return UNKNOWN
    if any(v.numpy for v in values) and not any(v.data_dependent for v in values):
        return NUMPY
    if all(v.is_tensor for v in values):
        dtypes = {v.dtype for v in values}
        return tensor(all(v.zero_dim for v in values), dtypes.pop() if len(dtypes) == 1 else None)
    if any(v.kind == "unknown" for v in values):
        return UNKNOWN
    if any(v.kind in ("tensor", "mixed") for v in values) and all(
            v.kind in ("tensor", "mixed") or v.kind == "static" and not v.numpy for v in values):
        return MIXED
    if any(v.data_dependent for v in values):
        return DATA
    return STATIC


class _Assignments(cst.CSTVisitor):
    """name -> assigned values in one function (not descending into nested defs)."""

    def __init__(self, func: cst.FunctionDef | None) -> None:
        self.func = func
        self.values: dict[str, list[cst.BaseExpression | None]] = {}
        self.loops: dict[str, list[cst.BaseExpression]] = {}  # loop target -> what it iterates over
        self.unpacked: set[int] = set()  # ids of the values unpacked by `a, b = value` (in `loops` too)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.func

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self.values.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:  # unpacking: value unknown
                self._bind(el.value, None)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind(t.target, node.value)
            if isinstance(t.target, (cst.Tuple, cst.List)):  # `h, w = sizes[i]`: a tensor's elements
                self.unpacked.add(id(node.value))
                for el in t.target.elements:
                    if isinstance(el, cst.Element) and isinstance(el.value, cst.Name):
                        self.loops.setdefault(el.value.value, []).append(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):  # x += y keeps x's kind when y is a number
            self.values.setdefault(node.target.value, []).append(
                cst.BinaryOperation(node.target, _AUG[type(node.operator)], node.value)
                if type(node.operator) in _AUG else None
            )

    def visit_For(self, node: cst.For) -> None:
        self._bind_loop(node.target, node.iter)

    def _bind_loop(self, target: cst.BaseExpression, it: cst.BaseExpression) -> None:
        """A loop target is bound to None (unknown), as unpackings are; a name that takes the
        elements of `it` (also through `zip(a, b)` and `enumerate(a)` unpacked) records `it`."""
        call = it.func.value if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) else None
        if call == "zip_longest":  # e2-tts: `for t, m in zip_longest(text, mask)` (a None fill raises where used)
            call = "zip"
        parts = target.elements if isinstance(target, (cst.Tuple, cst.List)) else None
        if call in ("zip", "enumerate") and parts is not None and not any(a.star or a.keyword for a in it.args) \
                and not any(isinstance(e, cst.StarredElement) for e in parts):
            if call == "zip" and len(it.args) == len(parts):
                for e, a in zip(parts, it.args):
                    self._bind_loop(e.value, a.value)
                return
            if call == "enumerate" and len(it.args) == 1 and len(parts) == 2:
                self._bind(parts[0].value, None)
                self._bind_loop(parts[1].value, it.args[0].value)
                return
        if call not in ("zip", "enumerate", "range"):
            if isinstance(target, cst.Name):
                self.loops.setdefault(target.value, []).append(it)
            elif parts is not None and all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in parts):
                for e in parts:  # `for h, w in spatial_shapes`: a tensor's rows unpacked are tensors too
                    self.loops.setdefault(e.value.value, []).append(it)
        self._bind(target, None)

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            if item.asname is not None:
                self._bind(item.asname.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)


_AUG = {
    cst.AddAssign: cst.Add(), cst.SubtractAssign: cst.Subtract(), cst.MultiplyAssign: cst.Multiply(),
    cst.DivideAssign: cst.Divide(),
}


class FunctionFacts:
    def __init__(self, func: cst.FunctionDef, bindings: Bindings, module_attrs: dict[str, str],
                 caller_value=None, callee_value=None) -> None:
        self.func = func
        self.caller_value = caller_value  # param name -> Value handed in by every caller, or None
        self.callee_value = callee_value  # a same-file call -> NUMPY when what it returns is numpy, or None
        self.b = bindings
        self.module_attrs = module_attrs  # "attr" -> qualified ctor of self.attr (nn layers)
        collector = _Assignments(func)
        fastwalk.visit(func, collector)
        self.assigned = collector.values
        self.loops = collector.loops
        self._unpacked = collector.unpacked
        self.params: dict[str, cst.Param] = {}
        for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params):
            self.params[p.name.value] = p
        self.shadowed = _shadowed_params(func, set(self.params))
        self._memo: dict[str, Value] = {}  # top-level name values
        self._active: dict[str, Value] = {}  # names being evaluated -> value assumed in a cycle
        self._const_active: set[str] = set()

    # -- compile guards ------------------------------------------------------
    def compile_const(self, expr: cst.BaseExpression, strict: bool = False) -> bool | None:
        """The value of `expr` under torch.compile when constant (context.compile_value), names
        followed through their assignments (`is_tracing = torch.jit.is_tracing() or is_compiling()`)."""
        return context.compile_value(expr, self.b, self._name_const, strict)

    def short_circuited(self, test: cst.BaseExpression) -> bool:
        """Under compile, Python stops evaluating `test` at constant operands before any other:
        `not is_compiling() and x.any()` never evaluates `x.any()` there."""
        if not isinstance(test, cst.BooleanOperation):
            return False
        is_and = isinstance(test.operator, cst.And)
        if self.compile_const(test.left, strict=True) is (not is_and):
            return True
        # `flag and not compiling and x.any()`: a constant operand after others that are not tensors
        parts = context.bool_parts(test, type(test.operator))
        for p in parts[:-1]:
            if self.compile_const(p) is (not is_and):
                return True
            if self.value(p).data_dependent:
                return False
        return False

    def _name_const(self, name: str) -> bool | None:
        values = self.assigned.get(name)
        if not values or name in self.params or name in self._const_active:
            return None
        self._const_active.add(name)
        try:
            got = {self.compile_const(v) if v is not None else None for v in values}
        finally:
            self._const_active.discard(name)
        return got.pop() if len(got) == 1 else None

    # -- names ---------------------------------------------------------------
    def _name(self, node: cst.Name, depth: int) -> Value:
        name = node.value
        if name in ("True", "False", "None", "self", "cls"):
            return STATIC
        if name in self.assigned:
            if name in self.params and node in self._early_reads():
                return self._param(name)  # read before anything rebinds it
            if name in self._active:
                return self._active[name]  # a cycle (`x = x + 1`): the value assumed for x
            if depth > 10:
                return UNKNOWN
            memo = not self._active and depth <= 3
            if memo and name in self._memo:
                return self._memo[name]
            got = self._bound_name(name, depth)
            if memo:
                self._memo[name] = got
            return got
        if name in self.params:
            return self._param(name)
        if self.b.qualify(node) is not None:
            return STATIC  # an imported module or object
        return UNKNOWN

    def _early_reads(self) -> set[cst.Name]:
        """Reads of a parameter that nothing can have rebound yet: in the test of an `if`, or of a
        conditional expression in an assignment, in the function's body or in the `if`/`with`/`try`
        blocks in it (not in loops), when every binding of the name lies in a later statement, in
        that `if`'s branches or in that assignment's targets (espnet's `if inverse_power: inverse_power = 1 / ...`,
        where `inverse_power: bool`). Flow-insensitive, the name would join the parameter with the
        tensors assigned after the test."""
        got = self.__dict__.get("_early")
        if got is None:
            got = self._early = set()
            names = {n for n in self.params if n in self.assigned}  # shadowed too: read by their own rebinding
            if names:
                _early_in(self.func.body.body, names, set(), got)
        return got

    def _bound_name(self, name: str, depth: int) -> Value:
        param = self._param(name) if name in self.params and name not in self.shadowed else None
        vals = self._assigned_values(name, UNKNOWN, depth, param)
        joined = _join(vals)
        if joined.kind == "unknown":
            # `x = x * 2` where x's other bindings are tensors: assume that tensor, check it holds
            seed = _join([v for v in vals if v.kind != "unknown"])
            if seed.is_tensor:
                again = _join(self._assigned_values(name, seed, depth, param))
                if again.is_tensor:
                    return again
        return joined

    def _assigned_values(self, name: str, assume: Value, depth: int, param: Value | None) -> list[Value]:
        """Values of the name's bindings (and the parameter's own), a cycle read as `assume`."""
        self._active[name] = assume
        try:
            values = [self.value(v, depth + 1) if v is not None else UNKNOWN for v in self.assigned[name]]
            iters = self.loops.get(name)
            if iters and self.assigned[name].count(None) == len(iters):  # every unknown binding is a loop's
                elements = iter(iters)
                values = [self._element(next(elements), depth) if v is None else got
                          for v, got in zip(self.assigned[name], values)]
        finally:
            del self._active[name]
        if param is not None:
            values.append(param)
        return values

    def _element(self, it: cst.BaseExpression, depth: int) -> Value:
        """What a loop over `it` binds: a tensor's elements are tensors (`for start in ptr:`)."""
        inner = self.value(it, depth + 1)
        if id(it) in self._unpacked:  # `values, indices = t.max(dim=1)`: dtypes of their own
            return tensor() if inner.is_tensor or self._tuple_of_tensors(it, depth) else UNKNOWN
        return tensor(dtype=inner.dtype) if inner.is_tensor else UNKNOWN

    def _tuple_of_tensors(self, it: cst.BaseExpression, depth: int) -> bool:
        """`torch.aminmax(x)`, `x.chunk(2)`, `torch.linalg.slogdet(a)`: a tuple whose items are tensors."""
        if not isinstance(it, cst.Call):
            return False
        q = self.b.qualify(it.func)
        if q is not None:  # `torch.aminmax`, `torch.linalg.slogdet`; not `torch.__version__.split`
            head, _, last = q.rpartition(".")
            return head in ("torch", "torch.linalg") and last in T.TUPLE_RESULTS
        return isinstance(it.func, cst.Attribute) and it.func.attr.value in T.TUPLE_RESULTS \
            and self.value(it.func.value, depth + 1).is_tensor

    def _param(self, name: str) -> Value:
        ann = self.params[name].annotation
        if ann is not None:
            q = self.b.qualify(_optional_inner(ann.annotation))
            if q in TENSOR_TYPES:
                if number_literal(self.params[name].default) or bool_literal(self.params[name].default):
                    # fastspeech2_conformer's `output_attentions: torch.Tensor | None = False`: the default
                    # says a flag, the annotation a tensor; not provably a tensor (precision first)
                    return UNKNOWN
                return tensor(dtype=TENSOR_TYPES[q])
            if isinstance(ann.annotation, cst.Name) and ann.annotation.value in ("int", "float", "bool", "str"):
                return STATIC
            if q is not None and q.startswith("numpy."):
                return NUMPY
        if self.caller_value is not None and self.params[name].default is None:
            got = self.caller_value(name)  # what every same-file caller hands in
            if got is not None:
                return got
        if name in self._used_as_tensor():
            return tensor()
        return UNKNOWN

    def _used_as_tensor(self) -> set[str]:
        """Parameters that the body hands to `torch.zeros_like(p)` and the like (TypeError unless p is a
        tensor) in a statement of its own that every call reaches: at the top of the body, with no
        `return`/`raise`/`yield` before it, the parameter never rebound. Every run that gets past it had a
        tensor there, and a parameter keeps its value: nflows' `LogTanh.forward(self, inputs)` masks
        `inputs > self.cut_point` and indexes `inputs[mask_middle]` around `outputs = torch.zeros_like(inputs)`
        (Dynamo: a dynamic-shape break at each mask)."""
        got = self.__dict__.get("_as_tensor")
        if got is None:
            got = self._as_tensor = set()
            body = self.func.body.body if isinstance(self.func.body, cst.IndentedBlock) else ()
            for stmt in body:
                if not isinstance(stmt, cst.SimpleStatementLine):
                    if _exits(stmt):
                        break
                    continue
                for small in stmt.body:
                    if isinstance(small, (cst.Return, cst.Raise)) or _exits(small):
                        return got
                    value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign, cst.Expr)) else None
                    if isinstance(value, cst.Call) and self.b.qualify(value.func) in T.TENSOR_ONLY_LIKE and value.args \
                            and value.args[0].keyword is None and not value.args[0].star \
                            and isinstance(value.args[0].value, cst.Name):
                        p = value.args[0].value.value
                        if p in self.params and p not in self.assigned:
                            got.add(p)
        return got

    # -- calls ---------------------------------------------------------------
    def _method(self, call: cst.Call, attr: cst.Attribute, depth: int) -> Value:
        m = attr.attr.value
        recv_node = attr.value
        if m in T.STATIC_METHODS:
            return STATIC
        recv = self.value(recv_node, depth + 1)
        if recv.numpy:  # `a.tolist()`, `a.item()`: Python values (numpy_values._to_python)
            return STATIC if m in ("tolist", "item") and not call.args else NUMPY
        if m in T.DATA_METHODS:
            return DATA
        if recv.kind == "static":
            name = dotted(recv_node)
            return STATIC if name in T.CONFIG_ROOTS else UNKNOWN
        if (m in T.REDUCTIONS or m in T.PREDICATES) and recv.kind == "unknown" and self._foreign(recv_node, depth):
            return UNKNOWN  # `(pd.DatetimeIndex(a) != b).any()`: pandas' (chronos), not a tensor's
        if m in T.REDUCTIONS:
            zero = not _has_dim_arg(call, skip_first=False)
            return tensor(zero, _reduction_dtype(T.REDUCTIONS[m], recv.dtype))
        if m in T.PREDICATES:
            return tensor(recv.zero_dim, "bool")
        if recv.is_tensor:
            if m.endswith("_") and not m.startswith("_") and m not in ("requires_grad_", "share_memory_"):
                return tensor(recv.zero_dim, recv.dtype)  # in place: `torch.empty(n).uniform_()` is that tensor
            if m in T.CAST_METHODS:
                return tensor(recv.zero_dim, T.CAST_METHODS[m])
            if m in T.ELEMENTWISE:
                op = T.ELEMENTWISE[m]
                keeps = op.dtype == "any" or recv.dtype == "float"
                return tensor(recv.zero_dim, recv.dtype if keeps else None)
            if m in T.SHAPE_METHODS or m == "to" and _keeps_dtype(call):
                return tensor(False, recv.dtype)
            if m in T.TENSOR_METHODS:
                return tensor()
        return UNKNOWN

    def _foreign(self, node: cst.BaseExpression, depth: int) -> bool:
        """`node` is computed by a library whose values are not tensors (pandas, scipy...), directly
        or through the function's own names."""
        if depth > 25:
            return False
        if isinstance(node, cst.Call):
            q = self.b.qualify(node.func)
            if q is not None:
                return q.split(".")[0] in T.FOREIGN_MODULES
            return isinstance(node.func, cst.Attribute) and self._foreign(node.func.value, depth + 1)
        if isinstance(node, cst.Name):
            return node.value not in self._active and any(
                v is not None and self._foreign(v, depth + 5) for v in self.assigned.get(node.value, ()))
        if isinstance(node, (cst.Attribute, cst.Subscript)):
            return self._foreign(node.value, depth + 1)
        if isinstance(node, cst.UnaryOperation):
            return self._foreign(node.expression, depth + 1)
        if isinstance(node, (cst.BinaryOperation, cst.Comparison)):
            parts = [node.left, node.right] if isinstance(node, cst.BinaryOperation) else \
                [node.left, *(c.comparator for c in node.comparisons)]
            return any(self._foreign(p, depth + 1) for p in parts)
        return False

    def _self_layer(self, call: cst.Call) -> Value | None:
        name = dotted(call.func)
        if name and name.startswith("self.") and name.count(".") == 1:
            ctor = self.module_attrs.get(name[5:])
            if ctor is not None and ctor.split(".")[-1] in T.FLOAT_MODULES:
                return tensor(dtype="float")
        return None

    def _torch_func(self, call: cst.Call, q: str, depth: int) -> Value:
        short = q.rsplit(".", 1)[-1]
        if q in T.DATA_FUNCS:
            return DATA
        if q in T.STATIC_FUNCS:
            return STATIC
        first = self.value(call.args[0].value, depth + 1) if call.args else UNKNOWN
        if short in T.REDUCTIONS:
            zero = not _has_dim_arg(call, skip_first=True)
            return tensor(zero, _reduction_dtype(T.REDUCTIONS[short], first.dtype))
        if short in T.PREDICATES:
            return tensor(first.zero_dim and first.is_tensor, "bool")
        if short in T.ELEMENTWISE and first.is_tensor:
            op = T.ELEMENTWISE[short]
            keeps = op.dtype == "any" or first.dtype == "float"
            return tensor(first.zero_dim, first.dtype if keeps else None)
        if short in T.TENSOR_FUNCS or short in T.ELEMENTWISE:
            return tensor(dtype=self._dtype_arg(call))
        return UNKNOWN

    def _dtype_arg(self, call: cst.Call) -> str | None:
        """The dtype class a factory's `dtype=torch.bool` keyword names (lightly's
        `torch.eye(n, dtype=torch.bool)`: a mask), else None."""
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "dtype":
                q = self.b.qualify(a.value) or ""
                return T.DTYPE_CLASSES.get(q.rsplit(".", 1)[-1]) if q.startswith("torch.") else None
        return None

    def _call(self, call: cst.Call, depth: int) -> Value:
        func = call.func
        if self.callee_value is not None and (isinstance(func, cst.Name) or dotted(func) is not None
                                              and dotted(func).startswith("self.")):
            got = self.callee_value(call)  # a same-file helper returning a numpy value
            if got is not None:
                return got
        if isinstance(func, cst.Name) and self.b.qualify(func) is None:
            if func.value in T.STATIC_BUILTINS:
                return STATIC
            if func.value in ("max", "min") and len(call.args) >= 2 and all(a.star == "" for a in call.args):
                vals = [self.value(a.value, depth + 1) for a in call.args if a.keyword is None]
                if vals and all(v.is_tensor for v in vals):  # one of the tensors (bool() of their comparison breaks)
                    return _join(vals)
                return UNKNOWN
            if func.value in T.DATA_BUILTINS and call.args:
                arg = self.value(call.args[0].value, depth + 1)
                if arg.numpy:
                    return STATIC  # `int(np.sqrt(n))`: a Python number (GM915 reports the conversion that breaks)
                return DATA if arg.data_dependent else arg if arg.kind == "static" else UNKNOWN
            return UNKNOWN
        layer = self._self_layer(call)
        if layer is not None:
            return layer
        q = self.b.qualify(func)
        if q is not None and q.startswith("torch."):
            return self._torch_func(call, q, depth)
        if q is not None and q.split(".")[0] == "numpy":
            return NUMPY
        if isinstance(func, cst.Attribute):
            return self._method(call, func, depth)
        return UNKNOWN

    # -- expressions ---------------------------------------------------------
    def value(self, node: cst.BaseExpression, depth: int = 0) -> Value:
        if depth > 25:
            return UNKNOWN
        t = node.__class__  # exact classes (none has a subclass): libcst's isinstance goes through ABCMeta
        if t in _LITERALS:
            return STATIC
        if t is cst.Name:
            return self._name(node, depth)
        if t is cst.Attribute:
            if node.attr.value in T.STATIC_ATTRS or dotted(node) in T.CONFIG_ROOTS:
                return STATIC
            name = dotted(node)
            if name is not None and any(name.startswith(r + ".") for r in T.CONFIG_ROOTS):
                return STATIC
            if self.b.qualify(node) is not None:
                return STATIC  # torch.float16, torch.nn.functional, ...
            if isinstance(node.value, cst.Call) and self.b.qualify(node.value.func) in ("torch.finfo", "torch.iinfo"):
                return STATIC  # `torch.finfo(h.dtype).max`: a Python number
            if node.attr.value in ("T", "mT", "H", "real", "imag"):
                inner = self.value(node.value, depth + 1)
                return tensor() if inner.is_tensor else UNKNOWN
            if node.attr.value in ("type", "index") and isinstance(node.value, cst.Attribute) \
                    and node.value.attr.value == "device":
                return STATIC  # `x.device.type == "xla"` (fairseq's has_pads): known while tracing
            if name is not None and name.startswith("self.") and name.count(".") == 1 and (
                    self.module_attrs.get(name[5:]) in (BUFFER, "torch.nn.Parameter", "torch.nn.parameter.Parameter")
                    or self.module_attrs.get(name[5:]) in T.NEW_OBJECT_FUNCS):
                return tensor()  # a buffer, a parameter, or `self.done = torch.tensor(1.0)` (normflows' ActNorm)
            if name is not None and name.startswith("self.") and name.count(".") == 1 \
                    and self.module_attrs.get(name[5:]) == NUMPY_ATTR:
                return NUMPY  # `self.scale = np.array(...)` in __init__ (FeMaSR's codebook_scale)
            return UNKNOWN
        if isinstance(node, cst.Subscript):
            inner = self.value(node.value, depth + 1)
            if inner.numpy:
                return NUMPY  # (a structured array's field, `a["x"]`, too)
            if inner.is_tensor and any(isinstance(e.slice, cst.Index) and isinstance(
                    e.slice.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)) for e in node.slice):
                return UNKNOWN  # `states["n"]` of a param annotated Tensor: a tensor indexed by a string raises
            return inner if inner.kind == "static" else (tensor(dtype=inner.dtype) if inner.is_tensor else UNKNOWN)
        if isinstance(node, cst.Call):
            return self._call(node, depth)
        if isinstance(node, cst.Comparison):
            ops = [node.left, *(c.comparator for c in node.comparisons)]
            if any(isinstance(c.operator, (cst.In, cst.NotIn)) and self.value(c.comparator, depth + 1).numpy
                   for c in node.comparisons):
                return NUMPY  # `n in arr`: Dynamo traces `arr.__contains__(n)` and reads its value (`.item()`)
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
                return STATIC
            vals = [self.value(o, depth + 1) for o in ops]
            if any(v.is_tensor for v in vals):
                zero = all(v.zero_dim if v.is_tensor else number_literal(o) is not None for v, o in zip(vals, ops))
                return tensor(zero and len(ops) == 2, "bool")
            return _join(vals)
        if isinstance(node, cst.BinaryOperation):
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            return self._arith(node, left, right)
        if isinstance(node, cst.UnaryOperation):
            inner = self.value(node.expression, depth + 1)
            if isinstance(node.operator, cst.Not):
                return DATA if inner.data_dependent else inner
            return inner
        if isinstance(node, cst.BooleanOperation):
            if self.compile_const(node, strict=True) is not None or self.short_circuited(node):
                return STATIC  # `not is_compiling() and <tensor test>`: constant under compile
            vals = [self.value(node.left, depth + 1), self.value(node.right, depth + 1)]
            if vals[0].kind == "static" and vals[1].is_tensor:
                # `self.training and torch.rand([]) < p` is the tensor itself when the left is true:
                # a later `if` on it breaks (LayerDrop); not provably bool (it may be `False`).
                return tensor(vals[1].zero_dim, None)
            if any(v.data_dependent for v in vals):
                return DATA
            return _join(vals)
        if isinstance(node, cst.IfExp):
            return _join([self.value(node.body, depth + 1), self.value(node.orelse, depth + 1)])
        if isinstance(node, cst.NamedExpr):  # `(s := x.sum())` is the value it binds
            return self.value(node.value, depth + 1)
        return UNKNOWN

    def _arith(self, node: cst.BinaryOperation, left: Value, right: Value) -> Value:
        if not (left.is_tensor or right.is_tensor):
            return _join([left, right])
        if left.is_tensor and right.is_tensor:
            same = left.dtype if left.dtype == right.dtype else None
            return tensor(left.zero_dim and right.zero_dim, same)
        t, other_node = (left, node.right) if left.is_tensor else (right, node.left)
        num = number_literal(other_node)
        if num is None:  # an unknown or NumPy operand may be an array: the result's rank is not known
            return tensor(False, None) if (left.kind == "unknown" or right.kind == "unknown" or left.numpy
                                           or right.numpy) else tensor(t.zero_dim, None)
        dtype = t.dtype if t.dtype == "float" or (t.dtype == "int" and num == "int" and not isinstance(node.operator, cst.Divide)) else None
        return tensor(t.zero_dim, dtype)

    def condition(self, test: cst.BaseExpression) -> Value:
        """The value Python would call bool() on in `if test:`."""
        return self.value(test)

    def assumed(self, node: cst.BaseExpression, depth: int = 0, seen: frozenset = frozenset()) -> bool:
        """`node` is taken for a tensor only because a reduction or predicate method is called on
        something not known to be one (`bio.atom_mask.sum()`, the field a NumPy array: alphafold3):
        a fix that calls tensor-only methods on it checks `isinstance(..., torch.Tensor)` while tracing."""
        if depth > 25:
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            recv = node.func.value
            if self.b.qualify(node.func) is not None:
                return False  # `torch.sum(x)`: a tensor, or eager raises
            if node.func.attr.value in T.REDUCTIONS or node.func.attr.value in T.PREDICATES:
                if not self.value(recv).is_tensor:
                    return True
            return self.value(recv).is_tensor and self.assumed(recv, depth + 1, seen)
        if isinstance(node, cst.Name):
            if node.value in seen or node.value not in self.assigned:
                return False
            return any(v is not None and self.value(v).is_tensor and self.assumed(v, depth + 1, seen | {node.value})
                       for v in self.assigned[node.value])
        if isinstance(node, cst.Subscript):
            return self.assumed(node.value, depth + 1, seen)
        if isinstance(node, (cst.BinaryOperation, cst.Comparison, cst.BooleanOperation)):
            parts = [node.left, node.right] if not isinstance(node, cst.Comparison) else \
                [node.left, *(c.comparator for c in node.comparisons)]
            return any(self.value(p).is_tensor and self.assumed(p, depth + 1, seen) for p in parts)
        if isinstance(node, cst.UnaryOperation):
            return self.assumed(node.expression, depth + 1, seen)
        return False


TENSOR_TYPES = T.TENSOR_TYPES  # annotations that name a tensor, and the dtype each says


class _Exit(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Return(self, node) -> None:
        self.found = True

    visit_Raise = visit_Yield = visit_Return

    def visit_FunctionDef(self, node) -> bool:
        return False

    visit_Lambda = visit_ClassDef = visit_FunctionDef


def _exits(node: cst.CSTNode) -> bool:
    """A `return`, `raise` or `yield` inside `node` (not in nested defs, lambdas or classes)."""
    v = _Exit()
    fastwalk.visit(node, v)
    return v.found


def returns_tensor(func: cst.FunctionDef, b: Bindings) -> Value | None:
    """A tensor when `func` is annotated to return one (`-> torch.LongTensor`; not `Optional[...]`,
    which may be None), else None."""
    if func.returns is None:
        return None
    q = b.qualify(func.returns.annotation)
    return tensor(dtype=TENSOR_TYPES[q]) if q in TENSOR_TYPES else None


def _optional_inner(ann: cst.BaseExpression) -> cst.BaseExpression:
    """`X | None`, `None | X`, `Optional[X]` -> X."""
    if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
        for a, b in ((ann.left, ann.right), (ann.right, ann.left)):
            if isinstance(b, cst.Name) and b.value == "None":
                return a
    if isinstance(ann, cst.Subscript) and dotted(ann.value) in ("Optional", "typing.Optional") and len(ann.slice) == 1:
        el = ann.slice[0].slice
        if isinstance(el, cst.Index):
            return el.value
    return ann


def _keeps_dtype(call: cst.Call) -> bool:
    """`.to(x.device)`, `.to(device)`, `.to(device=...)`: a move, not a cast."""
    if len(call.args) != 1:
        return False
    arg = call.args[0]
    if arg.keyword is not None:
        return arg.keyword.value == "device"
    name = dotted(arg.value)
    return name is not None and (name.endswith(".device") or name.split(".")[-1] == "device")


def _shadowed_params(func: cst.FunctionDef, params: set[str]) -> set[str]:
    """Parameters rebound by a top-level `p = ...` before any other statement reads them
    (`seq_len = torch.max(position_ids) + 1` in a `forward(self, x, position_ids, seq_len=None)`):
    after that statement the parameter's own value is gone."""
    out: set[str] = set()
    read: set[str] = set()
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else []
    names = _Names()

    def rebinds(stmt: cst.BaseStatement) -> list[str]:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
            return [t.target.value for t in stmt.body[0].targets
                    if isinstance(t.target, cst.Name) and t.target.value in params]
        return []

    last = max((i for i, stmt in enumerate(body) if rebinds(stmt)), default=-1)
    for stmt in body[:last + 1]:  # what later statements read changes nothing
        out.update(p for p in rebinds(stmt) if p not in read)
        names.seen.clear()
        fastwalk.visit(stmt, names)
        read |= names.seen & params
    return out


def _early_in(stmts: list, names: set[str], bound: set[str], got: set[cst.Name]) -> None:
    """FunctionFacts._early_reads over `stmts` in order: `bound` the names bound so far (a loop's, all
    of them: its later statements run before its earlier ones on the next pass)."""
    for stmt in stmts:
        parts = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else [stmt]
        for part in parts:
            for read in _tests_first(part):
                reads = _Reads()
                fastwalk.visit(read, reads)
                before = bound | reads.bound
                got.update(n for n in reads.names if n.value in names and n.value not in before)
            if isinstance(part, cst.If):
                blocks = [part.body.body]
                if isinstance(part.orelse, cst.If):
                    blocks.append([part.orelse])  # elif: its test after this branch's statements
                elif isinstance(part.orelse, cst.Else):
                    blocks.append(part.orelse.body.body)
            elif isinstance(part, cst.With):
                bound.update(n for item in part.items if item.asname is not None
                             for n in context.target_names(item.asname.name))
                blocks = [part.body.body]
            elif isinstance(part, cst.Try):
                blocks = [part.body.body, *(h.body.body for h in part.handlers),
                          *(x.body.body for x in (part.orelse, part.finalbody) if x is not None)]
            else:
                walk = _Assignments(None)
                fastwalk.visit(part, walk)
                bound |= set(walk.values)
                continue
            for block in blocks:
                _early_in(list(block), names, bound, got)


def _tests_first(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """The tests `stmt` runs before it binds anything: an `if`'s, or those of the conditional
    expressions in an assignment's value (`bias = torch.zeros(n) if bias else None` tests the
    parameter). Only tests: the values a rebinding passes on keep the flow-insensitive join."""
    if isinstance(stmt, cst.If):
        return [stmt.test]
    value = stmt.value if isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.Expr, cst.Return)) else None
    if value is None:
        return []
    walk = _IfExpTests()
    fastwalk.visit(value, walk)
    return walk.tests


class _IfExpTests(cst.CSTVisitor):
    """The tests of the conditional expressions below a node, not in lambdas or comprehensions."""

    def __init__(self) -> None:
        self.tests: list[cst.BaseExpression] = []

    def visit_IfExp(self, n: cst.IfExp) -> None:
        self.tests.append(n.test)

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        return False

    def visit_ListComp(self, n) -> bool:
        return False

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp


class _Reads(ReadNames):
    """ReadNames, not inside a lambda or comprehension (whose own names may shadow), and the names
    the expression's `:=` binds."""

    def __init__(self) -> None:
        super().__init__()
        self.bound: set[str] = set()

    def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
        if isinstance(n.target, cst.Name):
            self.bound.add(n.target.value)

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        return False

    def visit_ListComp(self, n) -> bool:
        return False

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp


# Visitors are module-level classes: a class made per call is a cycle, and it would keep the nodes its
# methods' closures hold until the cyclic collector runs (made per call, they were also a cost of their own).
class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def visit_Name(self, n: cst.Name) -> None:
        self.seen.add(n.value)


BUFFER = "torch.Tensor"  # module_layer_attrs' entry for a registered buffer or parameter
NUMPY_ATTR = "numpy"  # the entry for an attribute that holds a NumPy value (numpy_attrs)


def _registered(call: cst.Call) -> str | None:
    """`self.register_buffer("x", <value>)` / `self.register_parameter("x", <value>)`: "x", when the
    value is not the literal None (both raise TypeError unless it is a tensor or None)."""
    if dotted(call.func) not in ("self.register_buffer", "self.register_parameter"):
        return None
    pos = [a.value for a in call.args if a.keyword is None and not a.star]
    kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    name = pos[0] if pos else kw.get("name")
    value = pos[1] if len(pos) > 1 else kw.get("tensor", kw.get("param"))
    if not isinstance(name, cst.SimpleString) or value is None or isinstance(value, cst.Name) and value.value == "None":
        return None
    text = name.evaluated_value
    return text if isinstance(text, str) and text.isidentifier() else None


def module_layer_attrs(cls: cst.ClassDef, b: Bindings) -> dict[str, str]:
    """`self.x = nn.Linear(...)` in a class's methods -> {"x": "torch.nn.Linear"}; a buffer or
    parameter registered by name (`self.register_buffer("x", ...)`) -> {"x": BUFFER}."""
    v = _LayerAttrs(b)
    fastwalk.visit(cls, v)
    for name in v.other & set(v.out):  # `self.x = torch.zeros(n)` here, `self.x = None` there: not known
        if v.out[name] in T.NEW_OBJECT_FUNCS:
            v.out[name] = "?"
    return v.out


class _LayerAttrs(cst.CSTVisitor):
    def __init__(self, b: Bindings) -> None:
        super().__init__()
        self.b = b
        self.out: dict[str, str] = {}
        self.other: set[str] = set()  # attributes also bound to something that is not a known constructor

    def visit_Assign(self, node: cst.Assign) -> None:
        q = self.b.qualify(node.value.func) if isinstance(node.value, cst.Call) else None
        for t in node.targets:
            name = dotted(t.target)
            if not (name and name.startswith("self.") and name.count(".") == 1):
                continue
            if q:
                self.out[name[5:]] = q
            else:
                self.other.add(name[5:])  # `self.x = None`, `self.x = self.x.tolist()`: not a known constructor

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine | cst.SimpleStatementSuite) -> bool:
        for stmt in node.body:  # assignments are small statements: their expressions need no walk
            if isinstance(stmt, cst.Assign):
                self.visit_Assign(stmt)
            elif isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
                name = _registered(stmt.value)
                if name is not None:
                    self.out.setdefault(name, BUFFER)
        return False

    visit_SimpleStatementSuite = visit_SimpleStatementLine


def numpy_attrs(cls: cst.ClassDef, b: Bindings) -> tuple[dict[str, cst.BaseExpression], set[str]]:
    """(attributes `self.x` that hold a NumPy value -> the value stored, every attribute the class stores;
    both empty in a module that does not import NumPy).

    NumPy: every store of `self.x` in the class (nested defs included) is `self.x = <value>` in `__init__`,
    and the value is made by a NumPy call (not `np.random`'s generators), directly or through names
    `__init__` binds: FeMaSR's `codebook_params = np.array(p)` then `self.codebook_scale =
    codebook_params[:, 0]`; not a parameter annotated `np.ndarray` (an annotation is no value). Dynamo traces
    such an attribute as a tensor, so a test of its values breaks (measured on torch 2.13: `n in self.a`,
    `self.a.max() > 1`, `self.a[0] > 1`, `self.g > 1` with `self.g = np.sqrt(2)`; not `self.a is None`,
    `len(self.a)`, `self.a.shape`). A class that calls `setattr` or reads `__dict__` has none."""
    if not any(t == "numpy" or t.startswith("numpy.") for t in b.aliases.values()):
        return {}, set()
    good: dict[str, cst.BaseExpression] = {}
    bad: set[str] = set()
    stored: set[str] = set()
    dynamic = False
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    for part in (*cls.decorators, *cls.bases, *cls.keywords, *body):
        method = part if isinstance(part, cst.FunctionDef) else None
        walk = _Stores(method, nested=True)  # one walk: a method's stores, its nested defs' as not plain
        fastwalk.visit(part, walk)
        dynamic = dynamic or walk.dynamic
        facts = made = None
        for attr, value, _ in walk.stores:
            stored.add(attr)
            if value is None or method is None or method.name.value not in T.INIT_METHODS:
                bad.add(attr)  # stored by another method or a nested def, `+=`, an unpacking
                continue
            facts = facts or FunctionFacts(method, b, {})
            made = _numpy_made(method, b) if made is None else made
            if facts.value(value).numpy and _reads_numpy_call(value, b, made):
                good.setdefault(attr, value)
            else:
                bad.add(attr)  # `self.x = self.x.tolist()` in a branch: not always NumPy
    return ({} if dynamic else {a: v for a, v in good.items() if a not in bad}), stored


def _numpy_call(node: cst.CSTNode, b: Bindings) -> bool:
    q = b.qualify(node.func) if isinstance(node, cst.Call) else None
    return q is not None and q.split(".")[0] == "numpy" and not q.startswith("numpy.random.")


def _reads_numpy_call(expr: cst.CSTNode, b: Bindings, made: set[str]) -> bool:
    """`expr` holds a NumPy call (not `np.random`'s), or a name of `made` (_numpy_made)."""
    v = _Names()
    fastwalk.visit(expr, v)
    return bool(v.seen & made) or _Calls.any_numpy(expr, b)


def _numpy_made(func: cst.FunctionDef, b: Bindings) -> set[str]:
    """Local names of `func` bound (`=`, `:=`) to a value holding a NumPy call or such a name, to a
    fixpoint (as the skeleton's `_numpy_names`, which keeps their statements in a cut def)."""
    binds = _Assignments(func)
    fastwalk.visit(func, binds)
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in binds.values.items():
            if name not in out and any(v is not None and _reads_numpy_call(v, b, out) for v in values):
                out.add(name)
                changed = True
    return out


class _Calls(cst.CSTVisitor):
    def __init__(self, b: Bindings) -> None:
        super().__init__()
        self.b = b
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        if _numpy_call(node, self.b):
            self.found = True

    @classmethod
    def any_numpy(cls, expr: cst.CSTNode, b: Bindings) -> bool:
        v = cls(b)
        fastwalk.visit(expr, v)
        return v.found


_NUMBER_TYPES = {"int", "float"}


def number_attrs(cls: cst.ClassDef) -> frozenset[str]:
    """Attributes `self.x` that are Python numbers: every store in the class's methods is in
    `__init__` (outside loops and nested defs), and binds a number literal or a parameter of
    `__init__` annotated `int`/`float` that the method never rebinds (the annotation is trusted,
    as for a `forward` parameter). Anything else storing `self.x` (another method, `+=`, an
    unpacking, `setattr`) disqualifies it."""
    good: set[str] = set()
    bad: set[str] = set()
    for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []:
        if not isinstance(stmt, cst.FunctionDef):
            continue
        params = {p.name.value: p for p in (*stmt.params.posonly_params, *stmt.params.params,
                                            *stmt.params.kwonly_params)}
        walk = _Stores(stmt)
        fastwalk.visit(stmt, walk)
        rebound, stores = walk.rebound, walk.stores
        for attr, value, top in stores:
            ok = top and stmt.name.value == "__init__" and value is not None
            if ok:
                v = value.expression if isinstance(value, cst.UnaryOperation) and isinstance(
                    value.operator, (cst.Minus, cst.Plus)) else value
                if isinstance(v, (cst.Integer, cst.Float)):
                    pass
                elif isinstance(v, cst.Name) and v.value in params and v.value not in rebound:
                    ann = params[v.value].annotation
                    ok = ann is not None and isinstance(ann.annotation, cst.Name) and \
                        ann.annotation.value in _NUMBER_TYPES
                else:
                    ok = False
            (good if ok else bad).add(attr)
    return frozenset(good - bad)


class _Stores(cst.CSTVisitor):
    """number_attrs' walk of one method: the names it rebinds, and its `self.x` stores as
    (attribute, value or None when not a plain store, outside loops). `nested`: the defs inside it
    are walked too, their stores not plain (and with no method, every def's)."""

    def __init__(self, func: cst.FunctionDef | None, nested: bool = False) -> None:
        super().__init__()
        self.func = func
        self.nested = nested
        self.inner = 0  # defs entered below `func`
        self.depth = 0
        self.rebound: set[str] = set()
        self.stores: list[tuple[str, cst.BaseExpression | None, bool]] = []
        self.dynamic = False  # `setattr(self, ...)`, `self.__dict__`: stores this walk cannot see

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is self.func:
            return True
        self.inner += self.nested
        return self.nested

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node is not self.func:
            self.inner -= self.nested

    def _plain(self, value: cst.BaseExpression | None) -> cst.BaseExpression | None:
        return None if self.inner or self.func is None else value

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "setattr":
            self.dynamic = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "__dict__":
            self.dynamic = True

    def visit_For(self, node) -> None:
        self.depth += 1

    def leave_For(self, node) -> None:
        self.depth -= 1

    visit_While, leave_While = visit_For, leave_For

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        t = node.target
        if isinstance(t, cst.Name):
            self.rebound.add(t.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            name = dotted(t.target)
            if name and name.startswith("self.") and name.count(".") == 1:
                self.stores.append((name[5:], self._plain(node.value), self.depth == 0))
            elif isinstance(t.target, (cst.Tuple, cst.List)):
                for e in t.target.elements:
                    n = dotted(e.value)
                    if n and n.startswith("self."):
                        self.stores.append((n[5:], None, False))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        name = dotted(node.target)
        if name and name.startswith("self."):
            self.stores.append((name[5:], None, False))
        if isinstance(node.target, cst.Name):
            self.rebound.add(node.target.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        name = dotted(node.target)
        if name and name.startswith("self."):
            self.stores.append((name[5:], self._plain(node.value), self.depth == 0))
