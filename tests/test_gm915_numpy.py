"""GM915: NumPy values in compiled code. The originals break (Dynamo traces NumPy values as
tensors), the fixed copies do not, and a failed trace-time check runs the NumPy original."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fixture_io import FIXTURES  # noqa: E402
from test_gm1_compiled import _call, _make, _same  # noqa: E402

CASES = ["invalid_lcm_helper.py", "invalid_sqrt_test.py"]


@pytest.mark.parametrize("name", CASES)
def test_original_breaks_fixed_does_not(name):
    case = FIXTURES / "GM915" / name
    orig, inputs = _make(case, "no")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "nf")
    for args in inputs:
        assert _call(orig, args, "aot_eager")[2] >= 1
        assert _call(fixed, args, "aot_eager")[2] == 0


def test_check_fails_while_tracing_runs_numpy():
    """Chunk lengths that are NumPy ints fail `isinstance(..., int)`: the NumPy call runs (the
    break stays) and the result is the eager one."""
    import numpy as np

    case = FIXTURES / "GM915" / "invalid_lcm_helper.py"
    orig, inputs = _make(case, "co")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "cf")
    for m in (orig, fixed):
        m.config.lsh_chunk = np.int64(4)
    want, want_g, _ = _call(orig, inputs[1])
    got, got_g, breaks = _call(fixed, inputs[1], "aot_eager")
    assert _same(want, got, exact=True) and _same(want_g, got_g, exact=True)
    assert breaks >= 1
