"""Shared static analysis: which code is compiled, what is a tensor, how torch is spelled.

Rules never walk the module themselves for these facts: they ask `facts_for(module)`.
Nothing here imports torch.
"""
from __future__ import annotations

import libcst as cst

from . import context, external
from .bindings import Bindings
from .scope import CompiledScope
from .tensors import FunctionFacts, Value, module_layer_attrs

__all__ = ["ModuleFacts", "FunctionFacts", "Value", "context", "facts_for"]


class ModuleFacts:
    """Per-module facts, computed once and shared by every rule of a run."""

    def __init__(self, module: cst.Module, compiled_scope: str = "reachable") -> None:
        self.module = module
        self.bindings = Bindings.of(module)
        self.scope = CompiledScope(module, self.bindings, mode=compiled_scope)
        self._functions: dict[cst.FunctionDef, FunctionFacts] = {}
        self._layers: dict[cst.ClassDef, dict[str, str]] = {}

    def function(self, func: cst.FunctionDef) -> FunctionFacts:
        """Tensor facts of one function (computed on first use)."""
        facts = self._functions.get(func)
        if facts is None:
            cls = self.scope.index.class_of.get(func)
            attrs: dict[str, str] = {}
            if cls is not None:
                for c in self.scope.class_bases(cls):
                    if c not in self._layers:
                        self._layers[c] = module_layer_attrs(c, self.bindings)
                    attrs = {**self._layers[c], **attrs}
            facts = self._functions[func] = FunctionFacts(func, self.bindings, attrs)
        return facts


_last: tuple[cst.Module, str, external.FileFacts, ModuleFacts] | None = None


def facts_for(module: cst.Module, compiled_scope: str = "reachable") -> ModuleFacts:
    """Facts for `module` (with the cross-file facts in `external.current()`); the rules of one
    batched visit share one instance."""
    global _last
    ext = external.current()
    if _last is not None and _last[0] is module and _last[1] == compiled_scope and _last[2] == ext:
        return _last[3]
    facts = ModuleFacts(module, compiled_scope)
    _last = (module, compiled_scope, ext, facts)
    return facts
