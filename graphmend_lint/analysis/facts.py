"""Per-module facts (ModuleFacts), computed once by the file's context and read by every rule."""
from __future__ import annotations

import weakref

import libcst as cst

from . import external, numpy_values
from .bindings import Bindings, dotted
from .scope import CompiledScope
from .tensors import (BUFFER, NUMPY, NUMPY_ATTR, FunctionFacts, Value, module_layer_attrs, number_attrs, numpy_attrs,
                      returns_tensor, tensor)

__all__ = ["ModuleFacts"]


class ModuleFacts:
    """Per-module facts, computed once (by the file's context) and shared by every rule of a run.
    `ext`: the file's facts from the project index (none: the file alone)."""

    def __init__(self, module: cst.Module, compiled_scope: str = "reachable",
                 ext: external.FileFacts = external.EMPTY) -> None:
        self.module = module
        self.bindings = Bindings.of(module, ext.guards, ext.never)
        self.scope = CompiledScope(module, self.bindings, mode=compiled_scope, ext=ext)
        self._functions: dict[cst.FunctionDef, FunctionFacts] = {}
        self._layers: dict[cst.ClassDef, dict[str, str]] = {}
        self._numpy_stores: dict[cst.ClassDef, dict[str, cst.BaseExpression]] = {}
        self._stored: dict[cst.ClassDef, set[str]] = {}  # the attributes each class stores
        self._caller_map: dict | None = None
        self._params_active: set = set()

    def function(self, func: cst.FunctionDef) -> FunctionFacts:
        """Tensor facts of one function (computed on first use)."""
        facts = self._functions.get(func)
        if facts is None:
            cls = self.scope.index.class_of.get(func)
            attrs: dict[str, str] = {}
            if cls is not None:
                nearer: set[str] = set()  # attributes a nearer class stores (a subclass rebinding one)
                for c in self.scope.class_bases(cls):
                    for k, v in self._class_attrs(c).items():
                        if k not in attrs and not (v == NUMPY_ATTR and k in nearer):
                            attrs[k] = v
                    nearer |= self._stored[c]
                for entry in self.scope.ext.buffers:  # registered by a base class of another file
                    owner, _, name = entry.partition("\t")
                    if owner == cls.name.value:
                        attrs.setdefault(name, BUFFER)
            me = weakref.ref(self)  # not `self`: a cycle would keep the module's tree for the collector
            facts = self._functions[func] = FunctionFacts(
                func, self.bindings, attrs, lambda name, f=func: me()._from_callers(f, name),
                lambda call, f=func: me()._from_callee(f, call))
        return facts

    def _class_attrs(self, cls: cst.ClassDef) -> dict[str, str]:
        """`self.x` -> what it holds, from the class's own methods (module_layer_attrs, numpy_attrs)."""
        if cls not in self._layers:
            made, self._stored[cls] = numpy_attrs(cls, self.bindings)
            self._numpy_stores[cls] = made
            self._layers[cls] = {**module_layer_attrs(cls, self.bindings), **dict.fromkeys(made, NUMPY_ATTR)}
        return self._layers[cls]

    def numpy_store(self, func: cst.FunctionDef, attr: str) -> cst.BaseExpression | None:
        """The NumPy value `__init__` stores in `self.<attr>`, for a method `func` of a class that has one."""
        cls = self.scope.index.class_of.get(func)
        for c in self.scope.class_bases(cls) if cls is not None else ():  # the nearest class that stores it
            self._class_attrs(c)
            if attr in self._stored[c]:
                return self._numpy_stores[c].get(attr)
        return None

    def _from_callee(self, func: cst.FunctionDef, call: cst.Call) -> Value | None:
        """NUMPY when the same-file function or `self.` method `call` calls returns a numpy value
        (reformer's `_get_least_common_mult_chunk_len` returns `np.lcm(...)`); a tensor when it is
        annotated to return one (fla's `prepare_chunk_offsets(...) -> torch.LongTensor`) or every
        value it returns is one (st-moe's `has_only_one_value` returns `(t == t[0]).all()`); else None."""
        callee = numpy_values.callee_of(self, func, call)
        if callee is None or callee is func or ("callee", callee) in self._params_active:
            return None
        memo = self.__dict__.setdefault("_callee_memo", {})
        if callee not in memo:
            self._params_active.add(("callee", callee))
            try:
                values = [self.function(callee).value(r) for r in numpy_values.returns(callee)]
            finally:
                self._params_active.discard(("callee", callee))
            memo[callee] = NUMPY if values and any(v.numpy for v in values) and not any(
                v.data_dependent for v in values) else returns_tensor(callee, self.bindings) or (
                _join_tensors(values) if values and len(values) <= 8 else None)
        return memo[callee]

    def number_attrs(self, func: cst.FunctionDef) -> frozenset[str]:
        """`self.x` attributes of `func`'s class that are Python numbers (tensors.number_attrs)."""
        cls = self.scope.index.class_of.get(func)
        if cls is None:
            return frozenset()
        got = getattr(self, "_numbers", None)
        if got is None:
            got = self._numbers = {}
        if cls not in got:
            got[cls] = number_attrs(cls)
        return got[cls]

    # -- parameters handed in by same-file callers ----------------------------
    def _callers(self) -> dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]]:
        if self._caller_map is None:
            idx = self.scope.index
            out: dict[cst.FunctionDef, list] = {}
            for caller, calls in idx.calls.items():
                owner = idx.class_of.get(caller)
                for call in calls:
                    name = dotted(call.func)
                    target = idx.functions.get(name) if name else None
                    if target is None and owner is not None and name and name.startswith("self.") \
                            and name.count(".") == 1:
                        target = self.scope.method(owner, name[5:])
                    if target is not None and target is not caller:
                        out.setdefault(target, []).append((caller, call))
            self._caller_map = out
        return self._caller_map

    def _from_callers(self, func: cst.FunctionDef, name: str) -> Value | None:
        """The value every same-file call of `func` passes for parameter `name`, when all are tensors."""
        key = (func, name)
        if key in self._params_active:
            return None
        sites = self._callers().get(func, [])
        if not sites or len(sites) > 20:
            return None
        params = [*func.params.posonly_params, *func.params.params]
        is_method = func in self.scope.index.class_of and params and params[0].name.value in ("self", "cls")
        pos = [p.name.value for p in params][1 if is_method else 0:]
        self._params_active.add(key)
        try:
            vals = []
            for caller, call in sites:
                arg = None
                for i, a in enumerate(call.args):
                    if a.star:
                        return None
                    if a.keyword is not None and a.keyword.value == name or \
                            a.keyword is None and i < len(pos) and pos[i] == name:
                        arg = a.value
                if arg is None:
                    return None
                v = self.function(caller).value(arg)
                if not v.is_tensor:
                    return None
                vals.append(v)
        finally:
            self._params_active.discard(key)
        return tensor(all(v.zero_dim for v in vals), vals[0].dtype if len({v.dtype for v in vals}) == 1 else None)


def _join_tensors(values: list[Value]) -> Value | None:
    """A tensor when every value a helper returns is one (titans' `divisible_by` returns
    `(num % den) == 0`, a bool tensor for tensor arguments: a mask), else None."""
    if not all(v.is_tensor for v in values):
        return None
    dtypes = {v.dtype for v in values}
    return tensor(all(v.zero_dim for v in values), dtypes.pop() if len(dtypes) == 1 else None)
