"""GM1xx fixes on the fixtures: inputs cover every branch, the fixed code compiles with
fullgraph=True, NaN inputs behave alike, and the traps behind each refusal are real."""
from __future__ import annotations

import contextlib
import sys

import libcst as cst
import pytest
import torch
from fixture_io import FIXTURES, grad_off_fix
from harness import load, observe
from libcst.metadata import MetadataWrapper, PositionProvider

from graphmend_lint import engine
from graphmend_lint.settings import Settings

GM1 = sorted(p for p in FIXTURES.glob("GM10[12]/invalid_*.py") if p.name.count(".") == 1)
WITH_MAKE = [p for p in GM1 if "def make(" in p.read_text(encoding="utf-8")]


def _fixed(case, suffix):
    path = case.with_name(case.stem + suffix)
    return path if path.exists() else None


def _build(path, tag):
    module = load(path, f"gm1_{tag}_{path.stem.replace('.', '_')}")
    torch.manual_seed(0)
    return module.make()


def _lines_run(fn, args, path) -> set[int]:
    lines: set[int] = set()
    target = str(path)

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != target:
            return None
        if event == "line":
            lines.add(frame.f_lineno)
        return tracer

    sys.settrace(tracer)
    try:
        fn(*args)
    except Exception:
        pass
    finally:
        sys.settrace(None)
    return lines


def test_every_fixed_fixture_has_inputs():
    for case in GM1:
        if _fixed(case, ".fixed.py"):
            assert case in WITH_MAKE, f"{case.name}: a safe fix needs make() for the differential test"


def _layerdrop(case) -> bool:
    """A LayerDrop fix keeps the test and both branches; its inputs use layerdrop 0.0, the case it
    decides while tracing (layerdrop > 0: tests/test_gm1_compiled.py)."""
    return "draw of torch.rand" in case.with_name(case.stem + ".findings.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("case", [c for c in WITH_MAKE if "GM101" in str(c) and not _layerdrop(c)], ids=lambda p: p.name)
def test_inputs_take_every_branch_of_flagged_ifs(case):
    source = case.read_text(encoding="utf-8")
    flagged = {f.line for f in engine.check(source.encode(), Settings(unsafe_fixes=True)).findings if f.code == "GM101"}
    wrapper = MetadataWrapper(cst.parse_module(source))
    pos = wrapper.resolve(PositionProvider)
    ifs = [n for n in pos if isinstance(n, cst.If) and pos[n].start.line in flagged]
    fn, inputs = _build(case, "cov")
    runs = [_lines_run(fn, args, case) for args in inputs]
    for node in ifs:
        arms, cur = [], node
        while isinstance(cur, cst.If):
            arms.append(pos[cur.body.body[0]].start.line)
            cur = cur.orelse
        else_line = pos[cur.body.body[0]].start.line if cur is not None else None
        test_line = pos[node].start.line
        if test_line in arms:
            continue  # a one-line body: line events cannot tell it from the test (the compiled tests run both)
        for line in arms:
            assert any(line in r for r in runs), f"no input takes the branch at line {line}"
        if else_line is not None:
            assert any(else_line in r for r in runs), f"no input takes the else at line {else_line}"
        else:
            assert any(test_line in r and not (set(arms) & r) for r in runs), "no input skips the if"


class _Torch:
    """The fixture module's `torch`, with attributes replaced (everything else is torch's)."""

    def __init__(self, real, **replaced) -> None:
        self._real, self._replaced = real, replaced

    def __getattr__(self, name):
        return self._replaced[name] if name in self._replaced else getattr(self._real, name)


@pytest.mark.parametrize("case", [c for c in WITH_MAKE if "GM102" in str(c) and _fixed(c, ".fixed.py") and not _layerdrop(c)],
                         ids=lambda p: p.name)
def test_inputs_take_both_sides_of_flagged_ifexp(case):
    """Every torch.where the fix wrote sees both values of its condition over the inputs. A compile-only
    form runs its compiled path here: the module's `torch.compiler.is_compiling()` answers True."""
    fixed = _fixed(case, ".fixed.py")
    module = load(fixed, f"gm1_ifexp_{fixed.stem.replace('.', '_')}")
    seen: list[bool] = []

    def spy(cond, *rest):
        seen.append(bool(cond))
        return torch.where(cond, *rest)

    module.torch = _Torch(torch, where=spy, compiler=_Torch(torch.compiler, is_compiling=lambda: True))
    torch.manual_seed(0)
    fn, inputs = module.make()
    per_site: dict[int, set] = {}
    for args in inputs:
        seen.clear()
        fn(*args)
        assert seen, "the fixed code ran no torch.where"
        for i, c in enumerate(seen):
            per_site.setdefault(i, set()).add(c)
    assert all(v == {True, False} for v in per_site.values()), per_site


@pytest.mark.parametrize("case", [c for c in WITH_MAKE if _fixed(c, ".fixed.py") or _fixed(c, ".unsafe.fixed.py")],
                         ids=lambda p: p.name)
def test_fixed_code_compiles_with_fullgraph(case):
    """The fixed code compiles to one graph; a safe fix's compiled results equal its eager ones (an
    unsafe compile-only fix may differ there: that is what makes it unsafe)."""
    fixed = _fixed(case, ".fixed.py") or _fixed(case, ".unsafe.fixed.py")
    safe = fixed.name.endswith(".fixed.py") and not fixed.name.endswith(".unsafe.fixed.py")
    fn, inputs = _build(fixed, "fullgraph")
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    mode = torch.no_grad() if grad_off_fix(case) else contextlib.nullcontext()  # its compiled form's mode
    if grad_off_fix(case):  # inference: inputs that need no grad (one that does keeps the `if`)
        inputs = [tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args) for args in inputs]
    try:
        with mode:
            _compare(compiled, fn, inputs, safe)
    finally:
        torch._dynamo.reset()


def _compare(compiled, fn, inputs, safe) -> None:
    for args in inputs:
        args = tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                     for a in args)
        got, want = compiled(*args), fn(*args)
        if not safe:
            continue
        got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            assert torch.allclose(g.float(), w.float(), rtol=1e-5, atol=1e-6, equal_nan=True)


def _nan_equal(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(torch.isnan(a), torch.isnan(b)) and \
        torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0))


def test_fp16_clamp_fix_on_nan_and_inf_inputs():
    case = FIXTURES / "GM101" / "invalid_fp16_overflow_clamp.py"
    orig, _ = _build(case, "nan_o")
    fixed, _ = _build(_fixed(case, ".fixed.py"), "nan_f")
    nan = torch.tensor([[float("nan"), 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]]).half().requires_grad_()
    big = torch.tensor([[60000.0, 1.0, -60000.0, 2.0], [1.0, 2.0, 3.0, 4.0]]).half()
    assert torch.isinf(big + orig.fc(big.float()).half()).any()  # the clamp branch really runs
    for x in (nan, big.requires_grad_()):
        o, f = observe(orig, (x,)), observe(fixed, (x,))
        assert o.error is None and f.error is None
        assert _nan_equal(o.output[0], f.output[0])
        assert all(_nan_equal(a, b) for a, b in zip(o.grads, f.grads))
    assert not torch.isinf(fixed(big)[0]).any()


def test_double_where_keeps_sqrt_gradients_exact():
    """With one condition the fix guards sqrt's input (`torch.where(c, h, 1.0)`): safe."""
    case = FIXTURES / "GM101" / "invalid_sqrt_under_autograd.py"
    assert "torch.sqrt(torch.where(h.min() > 0, h, 1.0))" in _fixed(case, ".fixed.py").read_text(encoding="utf-8")
    orig, _ = _build(case, "dw_o")
    fixed, _ = _build(_fixed(case, ".fixed.py"), "dw_f")
    for x in (torch.tensor([[0.5, -0.5, 1.0, 0.0]]), torch.tensor([[0.5, 0.25, 1.0, 4.0]])):
        o, f = observe(orig, (x.requires_grad_(),)), observe(fixed, (x,))
        assert torch.equal(o.output, f.output) and all(torch.equal(a, b) for a, b in zip(o.grads, f.grads))
        assert all(torch.isfinite(g).all() for g in f.grads)


def test_inplace_trap_unsafe_fix_changes_aliasing():
    """`if` without else keeps the caller's tensor when not taken; torch.where makes a new one. Eager
    runs the `if` unchanged; the compiled path (aot_eager) shows the difference."""
    case = FIXTURES / "GM101" / "invalid_inplace_after.py"
    assert "modified in place later" in case.with_name(case.stem + ".findings.txt").read_text(encoding="utf-8")
    torch.manual_seed(0)
    orig = load(case, "gm1_inplace_o").Shift()
    torch.manual_seed(0)
    fixed = load(_fixed(case, ".unsafe.fixed.py"), "gm1_inplace_f").Shift()
    x = torch.full((1, 4), -100.0) if orig.proj(torch.full((1, 4), -100.0)).sum() <= 0 else torch.full((1, 4), 100.0)
    h1, h2, h3 = torch.ones(1, 4), torch.ones(1, 4), torch.ones(1, 4)
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            assert torch.equal(orig(x, h1), fixed(x, h2))
            assert torch.equal(orig(x, torch.ones(1, 4)), torch.compile(fixed, backend="aot_eager")(x, h3))
    finally:
        torch._dynamo.reset()
    assert torch.equal(h1, torch.full((1, 4), 2.0)) and torch.equal(h2, h1) and torch.equal(h3, torch.ones(1, 4))


def test_torch_cond_is_not_a_safe_rewrite_for_module_branches():
    """Why GM101 offers no torch.cond fix (torch 2.13, eager): the untaken branch's parameters get
    zero gradients instead of none, and the untaken branch is traced, so its errors surface."""
    torch.manual_seed(0)
    a, b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    if torch.tensor(True):
        a(x).sum().backward()
    assert b.weight.grad is None
    a.zero_grad()
    torch.cond(torch.tensor(True), lambda t: a(t), lambda t: b(t), (x,)).sum().backward()
    assert b.weight.grad is not None and not b.weight.grad.any()
    with pytest.raises(IndexError):
        torch.cond(torch.tensor(True), lambda t: t * 2, lambda t: t[10], (x,))
