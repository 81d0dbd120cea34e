"""GM917's NumPy tables against the installed torch: a name listed as untraced has no twin in
torch._numpy (Dynamo breaks at the call), a name listed as returning a Python value has one; on the
NumPy release the tables were measured with, every untraced top-level function is listed."""
from __future__ import annotations

import numpy as np
import pytest

from graphmend_lint.analysis import numpy_values as NV

misc = pytest.importorskip("torch._dynamo.variables.misc")
TWINS = misc.get_np_to_tnp_map()


def _functions() -> dict[str, object]:
    return {n: getattr(np, n) for n in dir(np) if not n.startswith("_") and callable(getattr(np, n, None))
            and not isinstance(getattr(np, n), type)}


def test_untraced_names_have_no_twin():
    present = {n: f for n, f in _functions().items() if n in NV.UNTRACED}
    assert present, "none of the listed names exists in this NumPy"
    assert sorted(n for n, f in present.items() if f in TWINS) == []


def test_python_value_names_have_a_twin():
    fns = _functions()
    assert sorted(n for n in NV.NOT_ARRAY if n in fns and fns[n] not in TWINS) == []


def test_the_tables_are_disjoint_and_not_values_of_gm915():
    assert not NV.UNTRACED & NV.NOT_ARRAY
    assert NV.breaking_call("numpy.isin") == "GB0294"
    assert NV.breaking_call("numpy.ndim") == "GB0208"
    assert NV.breaking_call("numpy.sum") is None and NV.breaking_call("numpy.random.rand") is None
    assert NV.breaking_call("numpy.linalg.norm") is None  # submodules: not measured, not reported


@pytest.mark.skipif(np.__version__.split(".")[:2] != ["2", "4"], reason="measured on NumPy 2.4")
def test_every_untraced_function_is_listed():
    missing = sorted(n for n, f in _functions().items() if f not in TWINS and n not in NV.UNTRACED)
    assert missing == []
