"""Shared static analysis: which code is compiled, what is a tensor, how torch is spelled.

Rules never walk the module themselves for these facts: they read `ModuleFacts` from the file's
context (`filecontext.FileContext.facts`), built once per module and shared by every rule.
Here: `bindings` (imports), `scope` (compiled code), `tensors` (tensor values), `context` (where
a node sits), `conventions` (generated files, the project's guard helper), `external` and
`project` (cross-file facts), `summary`, `tables`, `explain`, `filecontext`, `facts` (ModuleFacts).
This package imports nothing from rules/, fixes/ or the CLI modules; nothing here imports torch.
Submodules load on first use (PEP 562): the CLI's cached path reads the project index
(`project`, `summary`, `root`) without importing libcst.
"""
from __future__ import annotations

import importlib

__all__ = ["ModuleFacts", "FunctionFacts", "Value", "context"]
_LAZY = {"ModuleFacts": "facts", "FunctionFacts": "tensors", "Value": "tensors", "NUMPY": "tensors",
         "tensor": "tensors", "number_attrs": "tensors", "module_layer_attrs": "tensors",
         "Bindings": "bindings", "dotted": "bindings", "CompiledScope": "scope"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    try:
        return importlib.import_module(f"{__name__}.{name}")  # a submodule: `analysis.context`
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
