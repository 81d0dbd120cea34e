"""Compile guards in every spelling and shape, and the tensor forms of issue 14 (one file each)."""
from __future__ import annotations

import textwrap

import pytest

from graphmend_lint import engine
from graphmend_lint.settings import Settings

HEADER = """
import numpy as np
import torch
import torch._dynamo
from torch import nn
from transformers.utils import is_torchdynamo_compiling


class M(nn.Module):
    def forward(self, x, mask: torch.Tensor, is_training: bool = False):
"""


def findings(body: str) -> list[tuple[int, str]]:
    src = HEADER + textwrap.indent(textwrap.dedent(body), " " * 8) + "        return x\n"
    return sorted((f.line - 11, f.code) for f in engine.check(src.encode(), Settings()).findings)


def messages(body: str) -> list[str]:
    src = HEADER + textwrap.indent(textwrap.dedent(body), " " * 8) + "        return x\n"
    return [f.message for f in engine.check(src.encode(), Settings()).findings]


SPELLINGS = ["torch.compiler.is_compiling()", "torch.compiler.is_dynamo_compiling()",
             "torch._dynamo.is_compiling()", "is_torchdynamo_compiling()"]


@pytest.mark.parametrize("guard", SPELLINGS)
def test_every_spelling_and_shape_guards(guard):
    body = f"""
        if not {guard}:
            print("a")
        if {guard}:
            pass
        else:
            print("b")
        if not {guard} and mask.sum() > 0:
            x = x * 2
        if {guard} or mask.sum() > 0:
            x = x * 2
        y = x if {guard} else print("c")
        flag = {guard}
        if not flag:
            print("d")
        if {guard}:
            return x
        print("after the early return")
    """
    assert findings(body) == []


def test_unguarded_forms_still_break():
    body = """
        if torch.compiler.is_compiling() and mask.sum() > 0:
            x = x * 2
        if mask.sum() > 0 and not torch.compiler.is_compiling():
            x = x * 2
        if not torch.compiler.is_compiling():
            return x
        print("compiled only")
    """
    assert findings(body) == [(1, "GM101"), (3, "GM101"), (7, "GM201")]


def test_torchscript_only_code_does_not_run_compiled():
    body = """
        if torch.jit.is_scripting():
            print("scripting")
            warnings.warn("scripting")
        if not torch.jit.is_scripting():
            print("eager and compiled")
        if torch.jit.is_tracing():
            print("tracing")
        else:
            print("not tracing")
        if torch.jit.is_scripting():
            return x
        print("after")
    """
    assert findings(body) == [(5, "GM201"), (9, "GM201"), (12, "GM201")]


def test_name_bound_to_a_guard_chain_transformers_444():
    """modeling_attn_mask_utils: `is_tracing = torch.jit.is_tracing() or ... or torch._dynamo.is_compiling()`."""
    body = """
        is_tracing = (
            torch.jit.is_tracing()
            or isinstance(x, torch.fx.Proxy)
            or (hasattr(torch, "_dynamo") and torch._dynamo.is_compiling())
        )
        if not is_tracing and torch.all(mask == 1):
            return None
        if (is_training or not is_tracing) and torch.all(mask == 1):
            x = x * 2
    """
    assert findings(body) == [(8, "GM101")]
    assert "only when `is_training` is true" in messages(body)[0]


def test_numpy_is_never_a_tensor():
    body = """
        idxs = []
        idxs = np.array(idxs)
        idxs = np.broadcast_to(idxs[:, :, None], (2, 3, 4)).reshape(2, 12)
        idxs = idxs + np.arange(4)[None, None, :]
        if idxs.max() > x.shape[1] - 1:
            idxs[idxs > 3] = 3
        if np.random.rand(1).item() > 0.5:
            x = x * 2
        eps = np.random.rand(1).item()
    """
    # no GM101 on numpy (it is no torch tensor): the test of a NumPy value is GM915 (Dynamo traces it
    # and breaks there, measured) and the `.item()` of a NumPy draw GM901 (GB0033, measured)
    assert findings(body) == [(5, "GM915"), (9, "GM901")]


def test_layerdrop_through_and():
    body = """
        for layer in self.layers:
            dropout_probability = torch.rand([])
            skip_the_layer = self.training and dropout_probability < self.config.layerdrop
            if not skip_the_layer or self.synced_gpus:
                x = layer(x)
    """
    assert findings(body) == [(4, "GM104")]


def test_mask_stays_boolean_and_item_in_assert():
    body = """
        special = mask == 3
        special = special.unsqueeze(-1).expand_as(x).to(x.device)
        y = x[special]
        assert mask.sum().item() > 0
        if torch.jit.isinstance(x, list):
            x = x + 1
    """
    assert findings(body) == [(3, "GM905"), (4, "GM304")]  # `.item()` in an assert: GM304, not GM901


def test_static_tests_stay_quiet():
    body = """
        if self.training and x.dim() == 3:
            x = x * 2
        if mask is None or isinstance(mask, float):
            x = x + 1
        if is_training and not torch.jit.is_tracing():
            x = x + 1
    """
    assert findings(body) == []


def test_max_of_tensors_from_callers():
    src = textwrap.dedent("""
        import torch
        from torch import nn


        def pick(a, b):
            m = max(a, b)
            if m > 0:
                a = a + 1
            return a


        def never_tensor(a, b):
            if max(a, b) > 0:
                a = a + 1
            return a


        class M(nn.Module):
            def forward(self, x):
                y = never_tensor(1, 2)
                return pick(x.sum(), torch.zeros([])) + y
    """).encode()
    got = sorted((f.line, f.code) for f in engine.check(src, Settings()).findings)
    assert got == [(8, "GM101")]
