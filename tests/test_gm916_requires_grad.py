"""GM916: `t.requires_grad = True` in compiled code. The original breaks (GB0206); the unsafe fix
(set it only in eager) does not, keeps outputs and parameter gradients, and changes exactly what its
message says: an output that required grad only through that tensor stops requiring it."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fixture_io import FIXTURES  # noqa: E402
from test_gm1_compiled import _call, _make, _same  # noqa: E402

CASE = FIXTURES / "GM916" / "invalid_requires_grad_feature_encoder.py"
FIXED = CASE.with_name(CASE.stem + ".unsafe.fixed.py")


def test_unsafe_fix_removes_the_break_and_keeps_outputs_and_parameter_gradients():
    orig, inputs = _make(CASE, "o916")
    fixed, _ = _make(FIXED, "f916")
    for mode in ("train", "eval"):
        orig.train(mode == "train")
        fixed.train(mode == "train")
        for args in inputs:
            want, want_g, _ = _call(orig, args)
            assert _call(orig, args, "aot_eager")[2] == (1 if mode == "train" else 0)
            for backend in (None, "aot_eager"):
                got, got_g, breaks = _call(fixed, args, backend)
                assert breaks == 0
                assert _same(want, got, exact=True), (mode, backend)
                assert _same(want_g, got_g, exact=True), (mode, backend)


def test_what_the_unsafe_fix_changes_under_compile():
    """With the layers after it frozen, only that tensor made the output require grad."""
    orig, inputs = _make(CASE, "o916f")
    fixed, _ = _make(FIXED, "f916f")
    for m in (orig, fixed):
        m.conv.requires_grad_(False)
    (x,) = inputs[0]
    assert orig(x).requires_grad and fixed(x).requires_grad  # eager: verbatim
    torch._dynamo.reset()
    assert not torch.compile(fixed, backend="aot_eager")(x).requires_grad
    torch._dynamo.reset()
