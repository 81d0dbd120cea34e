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
