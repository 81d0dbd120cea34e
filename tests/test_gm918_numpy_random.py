"""GM918: a compiled helper that draws from NumPy's random generator. Under compile the original
breaks at each Python use of a draw and draws with torch's generator (its results differ from
eager); the unsafe fix (`@torch.compiler.disable` on the helper) breaks once, at the call, and
computes exactly what the original computes in eager, in train mode with gradients. Unsafe because
those compiled results differ from the original's compiled ones (the last assertion)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fixture_io import FIXTURES  # noqa: E402
from test_gm1_compiled import _call, _make, _same  # noqa: E402

CASE = FIXTURES / "GM918" / "invalid_spec_augment.py"


def _run(fn, args, backend=None):
    np.random.seed(0)  # _call seeds torch's generator
    return _call(fn, args, backend)


def test_fixed_helper_runs_in_eager_under_compile():
    orig, inputs = _make(CASE, "o")
    fixed, _ = _make(CASE.with_name(CASE.stem + ".unsafe.fixed.py"), "f")
    (args,) = inputs
    want, want_g, _ = _run(orig, args)
    got, got_g, breaks = _run(fixed, args, "aot_eager")
    assert _same(want, got, exact=True) and _same(want_g, got_g, exact=True)
    assert breaks == 1  # the call of the disabled helper
    before, _, breaks_before = _run(orig, args, "aot_eager")
    assert breaks_before >= 2
    assert not _same(want, before, exact=True)  # the unfixed code draws other numbers under compile


def test_eval_mode_does_not_call_the_helper():
    fixed, inputs = _make(CASE.with_name(CASE.stem + ".unsafe.fixed.py"), "e")
    fixed.eval()
    got, _, breaks = _run(fixed, inputs[0], "aot_eager")
    want, _, _ = _run(fixed, inputs[0])
    assert breaks == 0 and _same(want, got, exact=True)


def _gm918(src: str, fix: bool = False):
    import textwrap

    from graphmend_lint import engine
    from graphmend_lint.settings import Settings

    out = engine.check(textwrap.dedent(src).encode(), Settings(unsafe_fixes=True), fix=fix)
    return out, [f for f in out.findings if f.code == "GM918"]


def test_which_helpers_and_where_the_decorator_goes():
    src = """
        import numpy as np
        import torch
        from torch import nn

        def kept_array(n):
            return np.random.rand(n)  # stays an array (a traced tensor): no break, not reported

        @functools.lru_cache(None)
        def outer(n):
            def inner():
                return np.random.rand(1).item()
            return n * inner()

        def steps(n):
            yield np.random.rand(n).tolist()

        def mixed(x):
            return torch.sigmoid(x) * np.random.rand()

        class M(nn.Module):
            def draw(self, n):  # a method: GM910's, not GM918's
                return np.random.rand(n).tolist()

            def forward(self, x):
                eps = np.random.rand(1).item()  # in the forward itself: not GM918's
                return x * outer(eps) + torch.as_tensor(self.draw(2)).sum() + torch.as_tensor(kept_array(2)).sum() \\
                    + sum(torch.as_tensor(s).sum() for s in steps(2)) + mixed(x)
        """
    out, found = _gm918(src)
    assert [(f.line, f.safety.value) for f in found] == [(10, "unsafe"), (15, "none"), (18, "none")]
    assert "`steps` is a generator" in found[1].message
    assert "`mixed` calls torch (`torch.sigmoid`)" in found[2].message
    fixed, _ = _gm918(src, fix=True)
    assert "@functools.lru_cache(None)\n@torch.compiler.disable\ndef outer(n):" in fixed.source.decode()


def test_a_draw_in_a_nested_def_is_fixed_once_in_every_scope():
    """captum's `_expand_and_update_baselines` draws in a def nested in the helper: the decorator on
    the helper covers it (Dynamo traces nothing under a disabled def), also with `compiled-scope =
    "all"`, where every function counts as compiled: one decorator, and no finding left."""
    import textwrap

    from graphmend_lint import engine
    from graphmend_lint.settings import Settings

    src = textwrap.dedent("""
        import numpy as np
        import torch
        from torch import nn

        def helper_nested(x, n):
            def idx(bsz):
                return np.random.choice(bsz, n).tolist()

            return x[idx(x.shape[0])]

        class M(nn.Module):
            def forward(self, x):
                return helper_nested(x, 3)
        """).encode()
    for scope in ("reachable", "all"):
        out = engine.check(src, Settings(unsafe_fixes=True, compiled_scope=scope), fix=True)
        assert out.source.count(b"@torch.compiler.disable") == 1, scope
        assert not [f for f in out.findings if f.code == "GM918"], scope
