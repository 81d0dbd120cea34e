"""Issue 24: a fix changes nothing but the break.

The random stream: a LayerDrop / random-transform fix (`draw < p` decided while tracing when
p <= 0.0) must keep every draw, in order, in eager and compiled code. AOTAutograd drops a draw
whose value is unused (`aot_eager`, and inductor without `fallback_random`), which shifts every later
random number; the fixed code keeps it alive. Measured here: the original in eager against the
fixed code compiled, same seed, with random ops after the site (dropout, a further `torch.rand`).
"""
from __future__ import annotations

import re

import warnings

import pytest
import torch
from fixture_io import FIXTURES
from harness import load
from torch._dynamo.testing import CompileCounterWithBackend

TRANSFORM = FIXTURES / "GM101" / "invalid_random_transform.py"
LAYERDROP = FIXTURES / "GM104" / "invalid_layerdrop_encoder.py"
FLIP = FIXTURES / "GM101" / "invalid_random_flip_param_default.py"  # p defaults to 0.5; make() passes 0.0
APPLY = FIXTURES / "GM101" / "invalid_random_apply_skip.py"  # `if torch.rand(1) >= self.p: return img`


def _load(path, tag):
    return load(path, f"fid_{tag}_{path.parent.name}_{path.stem.replace('.', '_')}")


def _fixed(path):
    return path.with_name(path.stem + ".fixed.py")


def _run(model, x, seed, backend=None, calls=3):
    """Outputs of a few calls, then the next random number drawn after them, and the graphs made."""
    torch._dynamo.reset()
    counter = CompileCounterWithBackend(backend) if backend else None
    run = torch.compile(model, backend=counter) if counter else model
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = [run(x) for _ in range(calls)]
    after = torch.rand(4)
    torch._dynamo.reset()
    return outs, after, counter.frame_count if counter else 0


class _Dropping(torch.nn.Module):
    """LayerDrop around layers with dropout after each: later random numbers depend on every draw."""

    def __init__(self, module, layerdrop):
        super().__init__()
        self.inner = module.Encoder(layerdrop)
        for i, layer in enumerate(self.inner.layers):
            self.inner.layers[i] = torch.nn.Sequential(layer, torch.nn.Dropout(0.5))

    def forward(self, x):
        return self.inner(x)


def _with_dropout(model):
    """A random op after the site: its mask depends on every earlier draw."""
    return torch.nn.Sequential(model, torch.nn.Dropout(0.5))


def _models(case):
    torch.manual_seed(0)
    if case is LAYERDROP:
        orig, fixed = _Dropping(_load(case, "o"), 0.0), _Dropping(_load(_fixed(case), "f"), 0.0)
    else:
        orig, fixed = _with_dropout(_load(case, "o").Model()), _with_dropout(_load(_fixed(case), "f").Model())
    fixed.load_state_dict(orig.state_dict())
    return orig, fixed


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("case", [TRANSFORM, LAYERDROP, FLIP, APPLY], ids=lambda p: p.stem)
def test_random_stream_kept_under_aot_eager(case, train):
    """aot_eager with its defaults (no fallback_random): equal outputs and the same next random
    numbers as the eager original, and the break gone (one graph per call site)."""
    orig, fixed = _models(case)
    orig.train(train), fixed.train(train)
    x = torch.randn(2, 8)
    for seed in (1, 2):
        want, want_after, _ = _run(orig, x, seed)
        got, got_after, graphs = _run(fixed, x, seed, "aot_eager")
        assert _same(want, got) and torch.equal(want_after, got_after), (seed, want_after, got_after)
        if train or case is not LAYERDROP:
            assert graphs == 1


def test_dropped_draw_would_shift_the_stream():
    """The hazard the kept draw answers: the earlier form, `not (is_compiling() and p <= 0.0)`, lets
    AOTAutograd drop the draw, and the compiled run's later random numbers differ."""
    text = _fixed(TRANSFORM).read_text(encoding="utf-8")
    old, n = re.subn(r"\s*and torch\._assert_async\(.*?\)\s*is None", "", text, count=1, flags=re.S)
    assert n == 1
    path = TRANSFORM.with_name("_dropped_draw.py")
    path.write_text(old, encoding="utf-8")
    try:
        torch.manual_seed(0)
        orig, dropped = _with_dropout(_load(TRANSFORM, "o2").Model()), _with_dropout(_load(path, "d").Model())
        dropped.load_state_dict(orig.state_dict())
        x = torch.randn(2, 8)
        _, want_after, _ = _run(orig, x, 1)
        _, got_after, _ = _run(dropped, x, 1, "aot_eager")
        assert not torch.equal(want_after, got_after)
    finally:
        path.unlink()


@pytest.mark.slow
@pytest.mark.parametrize("case", [TRANSFORM, LAYERDROP], ids=lambda p: p.stem)
def test_random_stream_kept_under_inductor_fallback_random(case):
    """Inductor reproduces eager's random numbers only with `fallback_random`: then the same."""
    orig, fixed = _models(case)
    x = torch.randn(2, 8)
    want, want_after, _ = _run(orig.train(), x, 1)
    with torch._inductor.config.patch(fallback_random=True):
        got, got_after, graphs = _run(fixed.train(), x, 1, "inductor")
    assert _same(want, got) and torch.equal(want_after, got_after) and graphs == 1


# -- no no-op patches ---------------------------------------------------------------------------

NOOP = {
    "GM104/invalid_layerdrop_cond_refused.py": ("GM104", "`self.layerdrop` is only ever set to 0.1 in its class"),
    "GM101/invalid_random_flip_constant.py": ("GM101", "`self.p` is only ever set to 0.5 in its class"),
}


@pytest.mark.parametrize("name", sorted(NOOP))
def test_no_fix_that_leaves_the_trace_unchanged(name):
    """A guard that Dynamo would trace the same way as the original (an enclosing test already
    excludes p <= 0.0, a class that only ever sets p to 0.5, a warning that runs only compiled) is
    not offered."""
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings
    code, why = NOOP[name]
    findings = [f for f in engine.check((FIXTURES / name).read_bytes(), Settings(unsafe_fixes=True)).findings if f.code == code]
    assert findings and all(f.replacement is None and why in f.message for f in findings)


@pytest.mark.parametrize("name,default", [("invalid_random_flip_param_default.py", "0.5"),
                                          ("invalid_random_flip_constant_reset.py", None)])
def test_fix_offered_where_p_may_be_zero(name, default):
    """A parameter default above 0.0, or a class that also sets p to 0.0 elsewhere: no proof of
    p > 0.0, so the guard is offered (and names the default, where there is one)."""
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings
    (f,) = [f for f in engine.check((FIXTURES / "GM101" / name).read_bytes(), Settings()).findings if f.code == "GM101"]
    assert f.replacement is not None and f.safety.value == "safe"
    assert (f"`self.p` defaults to {default} (`__init__`)" in f.message) == (default is not None)


@pytest.mark.parametrize("case", [FLIP, APPLY], ids=lambda p: p.stem)
def test_flip_default_fix_is_not_a_no_op(case):
    """torchvision's `p: float = 0.5` proves nothing about a caller's p. The fixed flip (and the v2
    form, `draw >= p` skips), compiled (aot_eager), gives eager's outputs and random stream at both
    values; at p = 0.0 the guard removes the break (one graph), at 0.5 the break stays (as many
    graphs as the original compiled)."""
    orig_mod, fixed_mod = _load(case, "o3"), _load(_fixed(case), "f3")
    x = torch.randn(2, 8)
    for p in (0.0, 0.5):
        torch.manual_seed(0)
        orig = _with_dropout(orig_mod.Model(p=p)).train()
        fixed = _with_dropout(fixed_mod.Model(p=p)).train()
        fixed.load_state_dict(orig.state_dict())
        want, want_after, _ = _run(orig, x, 3)
        got, got_after, graphs = _run(fixed, x, 3, "aot_eager")
        assert _same(want, got) and torch.equal(want_after, got_after), p
        _, _, before = _run(orig, x, 3, "aot_eager")
        assert before > 1 and graphs == (1 if p == 0.0 else before), (p, before, graphs)


def test_layerdrop_kept_above_zero_gets_the_cond_form_not_the_guard():
    """`if self.training and self.layerdrop > 0.0:` around the draw: the p <= 0.0 guard would leave
    the trace unchanged and is not offered; the unsafe torch.cond form (issue 23) is, which changes it."""
    from graphmend_lint import engine
    from graphmend_lint.fixes.safety import Safety
    from graphmend_lint.settings import Settings
    source = (FIXTURES / "GM104/invalid_layerdrop_guarded.py").read_bytes()
    findings = [f for f in engine.check(source, Settings(unsafe_fixes=True)).findings if f.code == "GM104"]
    assert findings and all(f.safety is Safety.UNSAFE and "torch.cond" in f.message for f in findings)
    fixed = engine.check(source, Settings(unsafe_fixes=True), fix=True).source
    fixed = fixed.decode() if isinstance(fixed, bytes) else fixed
    assert "torch.cond(" in fixed and "<= 0.0 and" not in fixed


# -- imports --------------------------------------------------------------------------------------

def test_fixed_package_still_imports_without_torch(tmp_path):
    """`check --fix` on a package whose helper module has no torch import (diffusers'
    deprecation_utils.py): the helper is still importable where `import torch` fails."""
    import subprocess
    import sys

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "helpers.py").write_text(
        "import warnings\n\n\ndef deprecate(name, message):\n"
        "    warnings.warn(f\"{name} is deprecated: {message}\", FutureWarning, stacklevel=2)\n", encoding="utf-8")
    (pkg / "model.py").write_text(
        "from torch import nn\n\nfrom .helpers import deprecate\n\n\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        deprecate(\"x\", \"use y\")\n        return x + 1\n", encoding="utf-8")
    before = (pkg / "helpers.py").read_text(encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "graphmend_lint", "check", "--no-cache", "--fix", "--exit-zero", "pkg"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert "GM203" in run.stdout and "importable without torch" in run.stdout, run.stdout + run.stderr
    assert (pkg / "helpers.py").read_text(encoding="utf-8") == before
    no_torch = "import sys; sys.modules['torch'] = None; import pkg.helpers; print('ok')"
    out = subprocess.run([sys.executable, "-c", no_torch], cwd=tmp_path, capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


# -- messages kept under compile; validation-fixes ---------------------------------------------

VALIDATION = '''import torch
from torch import nn


class Normalize(nn.Module):
    """torchvision's normalize: the dtype is formattable inside a graph, the tensor value is not."""

    def forward(self, x, std):
        dtype = x.dtype
        if (std == 0).any():
            raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to division by zero.")
        assert (x < 100).all(), f"input too large: max={x.max()}"
        return x / std
'''


def _fixed_module(source: str, tmp_path, name: str, **settings):
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings
    result = engine.check(source.encode(), Settings(can_add_imports=True, **settings), fix=True)
    path = tmp_path / f"{name}.py"
    path.write_bytes(result.source)
    return result, _load(path, name)


def test_compiled_messages_keep_literal_parts_and_name_what_they_cannot_show(tmp_path):
    result, mod = _fixed_module(VALIDATION, tmp_path, "validation")
    assert result.fixed == 2, result.source.decode()
    model = mod.Normalize()
    x = torch.ones(3)
    with pytest.raises(ValueError, match="to torch.float32, leading"):  # eager: the original
        model(x, torch.zeros(3))
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="aot_eager")
    with pytest.raises(RuntimeError, match=r"conversion to torch.float32, leading to division by zero\."):
        compiled(x, torch.zeros(3))
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match=r"input too large: max=<x.max\(\): not available under torch.compile>"):
        compiled(x * 1000, torch.ones(3))
    torch._dynamo.reset()


def test_validation_fixes_setting_makes_gm3_fixes_unsafe():
    from graphmend_lint import engine
    from graphmend_lint.settings import Settings, from_table
    assert from_table({"validation-fixes": "unsafe"}).validation_fixes == "unsafe"
    default = engine.check(VALIDATION.encode(), Settings(unsafe_fixes=True)).findings
    unsafe = engine.check(VALIDATION.encode(), Settings(unsafe_fixes=True, validation_fixes="unsafe")).findings
    assert {f.safety for f in default if f.code.startswith("GM3")} == {engine.Safety.SAFE}
    assert {f.safety for f in unsafe if f.code.startswith("GM3")} == {engine.Safety.UNSAFE}
    assert all("RuntimeError (CPU) or a device-side assert (CUDA)" in f.message for f in unsafe if f.code.startswith("GM3"))
