"""The shared analysis layer: torch bindings, compiled scope, tensor facts."""
from __future__ import annotations

import libcst as cst
import pytest

from graphmend_lint.analysis import ModuleFacts
from graphmend_lint.analysis.bindings import Bindings


def facts(src: str, scope: str = "reachable"):
    return ModuleFacts(cst.parse_module(src), scope)


def func(f, name: str) -> cst.FunctionDef:
    return next(fn for fn in f.scope.index.all_functions if fn.name.value == name)


@pytest.mark.parametrize("src,expr,qualified", [
    ("import torch as th", "th.where", "torch.where"),
    ("import torch.nn.functional as F", "F.relu", "torch.nn.functional.relu"),
    ("from torch import nn, Tensor", "nn.Module", "torch.nn.Module"),
    ("from torch import nn, Tensor", "Tensor", "torch.Tensor"),
    ("import torch.nn", "torch.nn.Linear", "torch.nn.Linear"),
    ("import numpy as np", "where", None),
])
def test_qualify(src, expr, qualified):
    assert Bindings.of(cst.parse_module(src)).qualify(cst.parse_expression(expr)) == qualified


@pytest.mark.parametrize("src,spelled,needs_import", [
    ("import torch", "torch.where", False),
    ("import torch as th", "th.where", False),
    ("from torch import nn", "torch.where", True),
    ("from torch import where", "where", False),
    # an import inside a function does not bind `torch` for the rest of the file
    ("from torch import nn\ndef make():\n    import torch\n", "torch.where", True),
])
def test_spelling_of_torch_where(src, spelled, needs_import):
    assert Bindings.of(cst.parse_module(src)).spell_or_default("torch.where") == (spelled, needs_import)


SCOPE_SRC = """
import torch
from torch import nn
Module = nn.Module

def helper(x):
    return inner(x)

def inner(x):
    return x

def unrelated(x):
    return x

@torch.compiler.disable
def logged(x):
    return x

class Base(Module):
    def forward(self, x):
        return self.step(x) + helper(x) + logged(x)

    def step(self, x):
        return x

    def __init__(self):
        super().__init__()

class Child(Base):
    def extra(self, x):
        return x

class Plain:
    def forward(self, x):
        return x

def train(x):
    return x

compiled_train = torch.compile(train)

@torch.compile(mode="max-autotune")
def decorated(x):
    return x
"""


def test_compiled_scope_reachable():
    f = facts(SCOPE_SRC)
    compiled = {fn.name.value for fn in f.scope.compiled}
    assert compiled == {"forward", "step", "helper", "inner", "train", "decorated"}
    assert f.scope.module_classes == {"Base", "Child"}
    plain_forward = [fn for fn in f.scope.index.all_functions
                     if fn.name.value == "forward" and f.scope.index.class_of[fn].name.value == "Plain"][0]
    assert not f.scope.is_compiled(plain_forward)


def test_compiled_scope_all():
    f = facts(SCOPE_SRC, scope="all")
    assert {fn.name.value for fn in f.scope.compiled} >= {"unrelated", "extra", "__init__"}
    assert "logged" not in {fn.name.value for fn in f.scope.compiled}


TENSOR_SRC = """
import torch
import torch.nn.functional as F
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, mask, n: int):
        s = x.sum()
        h = self.proj(x)
        probe = 0
"""


@pytest.mark.parametrize("expr,kind,zero_dim,dtype", [
    ("x.sum() > 0", "tensor", True, "bool"),
    ("s > 0", "tensor", True, "bool"),
    ("x.sum(dim=1) > 0", "tensor", False, "bool"),
    ("(x > 0).any()", "tensor", True, "bool"),
    ("torch.isnan(x).any()", "tensor", True, "bool"),
    ("torch.isinf(h).any() or torch.isnan(h).any()", "data", False, None),
    ("not torch.all(mask)", "data", False, None),
    ("torch.equal(x, x)", "data", False, None),
    ("x.item() > 0", "data", False, None),
    ("h", "tensor", False, "float"),
    ("h * 0.5", "tensor", False, "float"),
    ("x.max()", "tensor", True, None),
    ("mask.sum()", "tensor", True, None),
    ("x.dim() == 3", "static", False, None),
    ("x.shape[0] > 1", "static", False, None),
    ("x.dtype == torch.float16", "static", False, None),
    ("mask is None", "static", False, None),
    ("self.training", "static", False, None),
    ("self.config.use_cache", "static", False, None),
    ("isinstance(x, torch.Tensor)", "static", False, None),
    ("n > 2", "static", False, None),
    ("mask", "unknown", False, None),
])
def test_tensor_values(expr, kind, zero_dim, dtype):
    f = facts(TENSOR_SRC)
    ff = f.function(func(f, "forward"))
    v = ff.value(cst.parse_expression(expr))
    assert (v.kind, v.zero_dim, v.dtype) == (kind, zero_dim, dtype)


def test_parameter_rebound_at_the_top_is_shadowed():
    src = """
import torch
from torch import nn

class Rope(nn.Module):
    def forward(self, x, position_ids, seq_len=None, n=None):
        print(n)
        seq_len = torch.max(position_ids) + 1
        n = x.sum()
        return seq_len
"""
    f = facts(src)
    ff = f.function(func(f, "forward"))
    assert ff.shadowed == {"seq_len"}  # `n` is read before it is rebound
    assert ff.value(cst.parse_expression("seq_len")) == ff.value(cst.parse_expression("torch.max(position_ids) + 1"))
    assert ff.value(cst.parse_expression("seq_len")).zero_dim
    assert ff.value(cst.parse_expression("n")).kind == "unknown"


def test_parameter_handed_to_zeros_like_by_every_call_is_a_tensor():
    """`torch.zeros_like(p)` raises TypeError unless `p` is a tensor: a parameter never rebound, handed to
    it in a statement every call reaches, is a tensor (nflows' LogTanh). Not after a `return`/`raise`/
    `yield` (a call may leave before), not inside a branch, not when the parameter is rebound."""
    src = """
import torch
from torch import nn

class M(nn.Module):
    def forward(self, a, b, c, d, e):
        m = a > 0
        out = torch.zeros_like(a)
        if b is None:
            return out
        torch.ones_like(b)
        if c.dim() > 1:
            z = torch.zeros_like(c)
        d = d * 2
        torch.zeros_like(d)
        return out

    def after_raise(self, a):
        if a is None:
            raise ValueError
        return torch.zeros_like(a)
"""
    f = facts(src)
    ff = f.function(func(f, "forward"))
    kinds = {n: ff.value(cst.parse_expression(n)).kind for n in ("a", "m", "b", "c", "e")}
    assert kinds == {"a": "tensor", "m": "tensor", "b": "unknown", "c": "unknown", "e": "unknown"}
    assert ff.value(cst.parse_expression("m")).dtype == "bool"
    assert ff._used_as_tensor() == {"a"}  # `d` is rebound before its use
    g = f.function(func(f, "after_raise"))
    assert g.value(cst.parse_expression("a")).kind == "unknown"
