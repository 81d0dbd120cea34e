"""GM304: `assert` on `.item()`/`int()`/`float()` of a tensor. The originals break, the fixed
copies do not; a failing check still fails (AssertionError in eager, RuntimeError compiled)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fixture_io import FIXTURES  # noqa: E402
from test_gm1_compiled import _call, _make  # noqa: E402

CASES = ["invalid_lengths_item.py", "invalid_float_scale.py"]


@pytest.mark.parametrize("name", CASES)
def test_original_breaks_fixed_does_not(name):
    case = FIXTURES / "GM304" / name
    orig, inputs = _make(case, "ao")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "af")
    for args in inputs:
        try:
            orig(*args)
        except AssertionError:
            continue  # a bad input: test_gm3_compiled.py checks that the check still fires
        assert _call(orig, args, "aot_eager")[2] >= 1
        assert _call(fixed, args, "aot_eager")[2] == 0


def test_failing_check_still_fails():
    case = FIXTURES / "GM304" / "invalid_lengths_item.py"
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "ff")
    x, too_long = torch.randn(2, 5, 4), torch.tensor([3, 9])
    with pytest.raises(AssertionError):
        fixed(x, too_long)
    torch._dynamo.reset()
    with pytest.raises(RuntimeError):
        torch.compile(fixed, backend="aot_eager")(x, too_long)
    torch._dynamo.reset()


@pytest.mark.parametrize("dtype,slen,lengths", [
    (torch.int8, 200, [100, 120]),  # compared as int8, 200 would be -56: the check would fail
    (torch.uint8, 300, [100, 250]),
    (torch.int16, 40000, [100, 300]),
    (torch.int8, 100, [100, 120]),  # too long: fails in both
])
def test_narrow_integer_lengths_compare_as_python_ints(dtype, slen, lengths):
    """An audit of xlm's fix: `lengths.max().item() <= slen` compares Python ints; the compiled
    `lengths.max() <= slen` turned `slen` into the tensor's dtype (int8: 200 -> -56) and failed where
    eager passed. The compiled form compares `lengths.max().long()`."""
    case = FIXTURES / "GM304" / "invalid_lengths_item.py"
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "fn")
    get_masks = type(fixed).forward.__globals__["get_masks"]
    t = torch.tensor(lengths, dtype=dtype)
    try:
        want = get_masks(slen, t)
    except AssertionError:
        want = None
    torch._dynamo.reset()
    compiled = torch.compile(get_masks, backend="aot_eager")
    if want is None:
        with pytest.raises(RuntimeError):
            compiled(slen, t)
    else:
        assert torch.equal(compiled(slen, t), want)
    torch._dynamo.reset()


def test_numpy_value_taken_for_a_tensor_falls_back_while_tracing():
    """alphafold3's `assert n == int(biomol.atom_mask.sum())` with `atom_mask: np.ndarray`: the value is
    a tensor only by assumption (`.sum()` of something unknown). The compiled form calls `.double()`
    and `.is_floating_point()`, which a NumPy array (traced by Dynamo) lacks: it crashed under
    compile. It now checks `isinstance(..., torch.Tensor)` while tracing and otherwise runs the
    original assert (the break stays); with a tensor it asserts on the tensor (no break)."""
    import numpy as np

    from graphmend_lint import engine
    from graphmend_lint.settings import Settings

    src = b'''import torch
from torch import nn


class M(nn.Module):
    def forward(self, x, bio):
        assert 3 == int(bio.mask.sum())
        return x * 2
'''
    fixed = engine.check(src, Settings(), fix=True).source
    assert b"isinstance(bio.mask.sum(), torch.Tensor)" in fixed
    scope: dict = {}
    exec(compile(fixed, "<fixed>", "exec"), scope)
    model, x = scope["M"](), torch.randn(3)

    class Bio:
        def __init__(self, mask):
            self.mask = mask

    for mask, breaks in ((np.array([1, 1, 1]), 1), (torch.tensor([1, 1, 1]), 0)):
        out, _, got = _call(model, (x, Bio(mask)), "aot_eager")
        assert torch.equal(out[0], x * 2) and got == breaks
    with pytest.raises(AssertionError):
        model(x, Bio(np.array([1, 1])))
    torch._dynamo.reset()
    with pytest.raises(AssertionError):  # the original assert, run where the value is not a tensor
        torch.compile(model, backend="aot_eager")(x, Bio(np.array([1, 1])))
    torch._dynamo.reset()


def test_python_O_drops_the_compiled_check_as_it_drops_the_assert(tmp_path):
    """Audit (alphafold3, GM302): under `python -O` the original assert is gone, in eager and compiled
    runs; the compiled `torch._assert_async` sat in a plain `else:` and still raised. It sits under
    `elif __debug__:` now (GM302/GM303 f-string forms, GM304): nothing raises under -O."""
    import subprocess
    import sys

    fixed = FIXTURES / "GM304" / "invalid_lengths_item.fixed.py"
    assert "elif __debug__" in fixed.read_text(encoding="utf-8")
    script = tmp_path / "run_O.py"
    script.write_text(f"""
import importlib.util, torch
spec = importlib.util.spec_from_file_location("fixed", {str(fixed)!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
m = mod.Masked()
x, too_long = torch.randn(2, 5, 4), torch.tensor([3, 9])
m(x, too_long)
torch.compile(m, backend="aot_eager")(x, too_long)
print("no check ran")
""")
    out = subprocess.run([sys.executable, "-O", str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "no check ran" in out.stdout, out.stderr[-2000:]
