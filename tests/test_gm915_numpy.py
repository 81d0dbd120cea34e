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


def test_numpy_attribute_only_when_every_store_is_numpy(tmp_path):
    """`self.x` counts as a NumPy value only when every store of it in the class is in `__init__`
    and NumPy-valued: a branch that stores `.tolist()` (FeMaSR's `as_list`) or another method's
    store leaves it unknown (precision first). The skeleton keeps the names `__init__` binds to NumPy
    values, so linting it gives the same findings as the whole file."""
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings

    src = b"""import numpy as np
from torch import nn


class M(nn.Module):
    def __init__(self, params, as_list=False):
        super().__init__()
        params = np.array(params)
        scale = params[:, 0]
        self.a = scale
        self.b = params[:, 1]
        if as_list:
            self.b = self.b.tolist()
        self.c = np.sqrt(2)
        self.d = params.tolist()

    def reset(self):
        self.c = 1.0

    def forward(self, x, n: int):
        if n in self.a:
            x = x + 1
        if n in self.b:
            x = x + 2
        if self.c > 1:
            x = x + 3
        if n in self.d:
            x = x + 4
        return x
"""
    for skeleton in (True, False):
        got = [(f.line, f.code) for f in engine.check(src, Settings(skeleton=skeleton)).findings]
        assert got == [(21, "GM915")], skeleton
    path = tmp_path / "m.py"
    path.write_bytes(src)
    from graphmend_lint import parallel

    out = parallel.check_files([path], Settings(), jobs=1, use_cache=False)[0]
    assert [(f.line, f.code) for f in out.findings] == [(21, "GM915")]


@pytest.mark.parametrize("init,forward,reported", [
    # every store must be NumPy and visible: a nested def's store, setattr, a subclass's store rule it out
    ("self.a = np.array([1, 2])\n        def as_list():\n            self.a = self.a.tolist()\n        as_list()",
     "n in self.a", False),
    ("self.a = np.array([1, 2])\n        setattr(self, 'a', [1, 2])", "n in self.a", False),
    # an annotation is no value; NumPy's random generators are not arrays
    ("self.a = sizes", "n in self.a", False),
    ("self.rng = np.random.default_rng(0)", "self.rng.random() > 0.5", False),
    # a name bound with `:=`: the skeleton keeps it, so both ways report it
    ("if (arr := np.array([[1, 2]])) is not None:\n            self.a = arr[:, 0]", "n in self.a", True),
    ("self.a = np.array([1, 2])", "n in self.a", True),
])
def test_numpy_attribute_cases(init, forward, reported):
    """Cases of the review of 45998b3 (/tmp/rev28): the false findings it found measured no break under
    Dynamo; the walrus case breaks (GB0124) and was missed with the skeleton only."""
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings

    src = f"""import numpy as np
import numpy.typing as npt
from torch import nn


class M(nn.Module):
    def __init__(self, sizes: npt.ArrayLike = (32, 64)):
        super().__init__()
        {init}

    def forward(self, x, n: int = 2):
        if {forward}:
            x = x + 1
        return x
""".encode()
    for skeleton in (True, False):
        got = [f.code for f in engine.check(src, Settings(skeleton=skeleton)).findings]
        assert got == (["GM915"] if reported else []), (skeleton, got)


def test_numpy_attribute_rebound_by_a_subclass():
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings

    src = b"""import numpy as np
from torch import nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = np.array([1, 2])


class Sub(Base):
    def __init__(self):
        super().__init__()
        self.a = [1, 2]

    def forward(self, x, n: int = 2):
        if n in self.a:
            x = x + 1
        return x


class Other(Base):
    def forward(self, x, n: int = 2):
        if n in self.a:
            x = x + 1
        return x
"""
    assert [(f.line, f.code) for f in engine.check(src, Settings()).findings] == [(24, "GM915")]


def test_tolist_of_a_numpy_value_is_reported():
    """`.tolist()` of a NumPy array breaks (measured: "Data dependent operator" for ints, GB0109 for floats),
    made in compiled code or stored by `__init__`."""
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings

    src = b"""import numpy as np
from torch import nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = np.array([1, 2])

    def forward(self, x):
        s = self.a.tolist()
        t = np.array([1.0, 2.5]).tolist()
        return x * len(s) * len(t)
"""
    assert [(f.line, f.code) for f in engine.check(src, Settings()).findings] == [(11, "GM902"), (12, "GM902")]

