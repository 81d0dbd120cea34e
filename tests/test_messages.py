"""Under compile, an f-string message keeps its values where torch 2.13 formats them in the graph
(dtypes, dim(), config numbers: `torch._assert_async(c, f"...")`, no break, no recompile); where it
cannot (sizes would specialise dynamic shapes, tensors and torch.Size break), the constant parts
are kept and the finding says so."""
from __future__ import annotations

import sys
import textwrap

import pytest

from graphmend_lint import engine, settings

TEMPLATE = textwrap.dedent("""\
    import torch
    from torch import nn


    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = type("C", (), {{"limit": 100.0}})()

        def forward(self, x):
            {check}
            return x + 1
    """)


def fix(check: str):
    result = engine.check(TEMPLATE.format(check=check).encode(), settings.Settings(), fix=True)
    before = engine.check(TEMPLATE.format(check=check).encode(), settings.Settings())
    return result.source.decode(), before.findings


def test_assert_keeps_formattable_values():
    fixed, findings = fix('assert (x.abs() < 1e4).all(), f"{x.dtype} input of {x.dim()} dims beyond {self.config.limit}"')
    assert ('torch._assert_async(\n                (x.abs() < 1e4).all(),\n'
            '                f"{x.dtype} input of {x.dim()} dims beyond {self.config.limit}",\n') in fixed
    assert "constant parts" not in findings[0].message


@pytest.mark.parametrize("value", ["x.shape", "tuple(x.shape)", "x.shape[0]", "x.sum()", "len(x)"])
def test_sizes_and_tensors_are_left_out_and_the_finding_says_so(value):
    fixed, findings = fix(f'assert (x.abs() < 1e4).all(), f"bad input {{{value}}}"')
    assert f'"bad input <{value}: not available under torch.compile>"' in fixed.split("else:")[1]
    assert f"torch cannot format `{{{value}}}` inside a graph" in findings[0].message


def test_raise_keeps_formattable_values():
    fixed, findings = fix('if (x > 1e4).any():\n            raise ValueError(f"values beyond {self.config.limit}")')
    assert 'torch._assert_async(\n' in fixed and 'f"values beyond {self.config.limit}"' in fixed.split("else:")[1]
    assert "constant parts" not in findings[0].message


def test_torch_assert_keeps_formattable_values():
    fixed, _ = fix('torch._assert((x.abs() < 1e4).all(), f"dtype {x.dtype}")')
    assert 'torch._assert_async((x.abs() < 1e4).all(), f"dtype {x.dtype}")' in fixed.split("elif __debug__:")[1]  # python -O drops it as it drops torch._assert


@pytest.mark.slow
def test_the_kept_message_compiles_without_a_break_and_raises_in_full(tmp_path):
    torch = pytest.importorskip("torch")
    fixed, _ = fix('assert (x.abs() < 1e4).all(), f"{x.dtype} input beyond {self.config.limit}"')
    path = tmp_path / "fixed_messages.py"
    path.write_text(fixed)
    sys.path.insert(0, str(tmp_path))
    try:
        import fixed_messages
    finally:
        sys.path.remove(str(tmp_path))
    graphs = []

    def count(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    m = fixed_messages.M()
    torch._dynamo.reset()
    compiled = torch.compile(m, backend=count)
    for n in (4, 5, 6):  # automatic dynamic shapes: one recompile at most, never one per size
        assert torch.equal(compiled(torch.ones(n, 3)), torch.ones(n, 3) + 1)
    assert len(graphs) <= 2
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match=r"torch.float32 input beyond 100.0"):
        torch.compile(m, backend="aot_eager")(torch.full((2, 3), 1e5))
    with pytest.raises(AssertionError, match=r"torch.float32 input beyond 100.0"):
        m(torch.full((2, 3), 1e5))  # eager: the original assert
    torch._dynamo.reset()
