"""GM1xx fixes under torch.compile (CPU): the compiled fixed code computes what the eager original computes.

Every GM10x fixture with a `make()` and a safe fix: under `aot_eager`, outputs and gradients (inputs
and parameters, train mode) equal the unfixed code's in eager, bit for bit, and Dynamo's graph_breaks
counter shows the breaks gone. A few small cases also run under Inductor (close, not bitwise: Inductor
fuses). The compile-only forms' trace-time checks are driven both ways (equal and different shapes,
floating and integer dtypes), and LayerDrop with layerdrop 0.0 and 0.5 with dropout in the layers.
"""
from __future__ import annotations

import contextlib
import logging
import warnings

import pytest
import torch
from fixture_io import FIXTURES, fixture_cases, grad_off_fix
from harness import load

# other rules whose fixes are compile-only forms checked the same way
COMPILE_ONLY_FAMILIES = {"GM915"}  # GM3xx: test_gm3_compiled.py (good and bad inputs)
CASES = [c for c in fixture_cases() if (c.parent.name.startswith("GM10") or c.parent.name in COMPILE_ONLY_FAMILIES) and "def make(" in c.read_text(encoding="utf-8")
         and c.with_name(c.stem + ".fixed.py").exists()]
# fixes whose compiled form waits for gradients off (inference): with gradients on the `if` runs
GRAD_OFF = [c for c in CASES if grad_off_fix(c)]
INDUCTOR = ["GM101/invalid_shape_mismatch.py", "GM101/invalid_branch_only_indexing.py", "GM101/invalid_reduction_maybe_empty.py",
            "GM101/invalid_unknown_dtype.py", "GM104/invalid_layerdrop_encoder.py", "GM101/invalid_return_after_setups.py",
            "GM101/invalid_masked_fill_indexed.py", "GM101/invalid_masked_update_view.py"]


def _module(path, tag):
    return load(path, f"gm1c_{tag}_{path.parent.name}_{path.stem.replace('.', '_')}")


def _make(path, tag):
    torch.manual_seed(0)
    return _module(path, tag).make()


def _leaves(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _leaves(v)]
    return []


class _Breaks(logging.Handler):
    """Dynamo's graph_breaks log: one record per break."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += record.name.endswith("__graph_breaks")


@contextlib.contextmanager
def _graph_breaks():
    handler, dynamo = _Breaks(), logging.getLogger("torch._dynamo")
    torch._logging.set_logs(graph_breaks=True)
    consoles = [(h, h.level) for n in list(logging.root.manager.loggerDict) if n.startswith("torch")
                for h in logging.getLogger(n).handlers]
    for h, _ in consoles:
        h.setLevel(logging.CRITICAL)  # keep the log off the console
    dynamo.addHandler(handler)
    try:
        yield handler
    finally:
        dynamo.removeHandler(handler)
        torch._logging.set_logs()
        for h, level in consoles:
            h.setLevel(level)


def _call(fn, args, backend=None, seed=0):
    """Outputs, gradients (inputs, then parameters; None kept) and graph breaks of one call."""
    args = tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args)
    params = list(fn.parameters()) if isinstance(fn, torch.nn.Module) else []
    torch._dynamo.reset()
    run = fn if backend is None else torch.compile(fn, backend=backend)
    torch.manual_seed(seed)
    with warnings.catch_warnings(), _graph_breaks() as log:
        warnings.simplefilter("ignore")
        out = run(*args)
    breaks = log.count
    torch._dynamo.reset()
    outs = [t for t in _leaves(out) if t.requires_grad]
    inputs = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad] + params
    grads = list(torch.autograd.grad(sum(o.float().sum() for o in outs), inputs, allow_unused=True)) if outs else []
    return _leaves(out), grads, breaks


def _same(a: list, b: list, exact: bool) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if (x is None) != (y is None):
            return False
        if x is None:
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        ok = torch.equal(x, y) if exact else torch.allclose(x.float(), y.float(), rtol=1e-4, atol=1e-5, equal_nan=True)
        if not ok:
            return False
    return True


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_aot_eager_fixed_equals_eager_original(case):
    orig, inputs = _make(case, "o")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "f")
    expected = getattr(_module(case, "meta"), "BREAKS_AFTER_FIX", 0)
    for i, args in enumerate(inputs):
        want, want_g, _ = _call(orig, args)
        got, got_g, breaks = _call(fixed, args, "aot_eager")
        assert _same(want, got, exact=True), f"input {i}: compiled outputs differ from the eager original"
        assert _same(want_g, got_g, exact=True), f"input {i}: compiled gradients differ from the eager original"
        if grad_off_fix(case):  # gradients on: the original `if` runs, with its breaks
            expected = _call(orig, args, "aot_eager")[2]
        assert breaks == expected, f"input {i}: {breaks} graph breaks after the fix"


@pytest.mark.parametrize("name", INDUCTOR)
def test_inductor_fixed_close_to_eager_original(name):
    case = FIXTURES / name
    orig, inputs = _make(case, "io")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "if")
    for args in inputs:
        want, want_g, _ = _call(orig, args)
        got, got_g, breaks = _call(fixed, args, "inductor")
        assert _same(want, got, exact=False) and _same(want_g, got_g, exact=False)
        assert breaks == (_call(orig, args, "inductor")[2] if grad_off_fix(case) else 0)


def test_shape_check_falls_back_to_the_if():
    """Branch values (1, 4) and (3, 4): torch.where alone would broadcast to (3, 4); the trace-time
    shape check runs the original `if` instead (one break, the eager result)."""
    case = FIXTURES / "GM101" / "invalid_shape_mismatch.py"
    orig, _ = _make(case, "so")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "sf")
    for x in (torch.ones(3, 4), -torch.ones(3, 4)):
        want, want_g, _ = _call(orig, (x.requires_grad_(),))
        for backend in ("aot_eager", "inductor"):
            got, got_g, breaks = _call(fixed, (x,), backend)
            assert _same(want, got, exact=backend == "aot_eager") and _same(want_g, got_g, exact=backend == "aot_eager")
            assert breaks == 1
    h = orig.proj(torch.ones(3, 4))
    assert orig(torch.ones(3, 4)).shape == (1, 4)
    assert torch.where(h.mean() > 0, h.mean(dim=0, keepdim=True), h).shape == (3, 4)


def test_dtype_check_falls_back_to_the_if():
    """An integer tensor fails `h.is_floating_point()` while tracing: the `if` runs, as in eager."""
    case = FIXTURES / "GM101" / "invalid_unknown_dtype.py"
    orig, _ = _make(case, "do")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "df")
    for x in (torch.tensor([[2, -5], [3, 1]]), torch.tensor([[-2, 5], [-3, -1]])):
        want, _, _ = _call(orig, (x,))
        got, _, breaks = _call(fixed, (x,), "aot_eager")
        assert _same(want, got, exact=True) and breaks == 1


def test_empty_check_falls_back_to_the_if():
    """An empty `h` fails `h.numel() > 0` while tracing: the `if` runs, whose test is False, and
    `amax` (which raises on an empty tensor) never runs, as in eager."""
    case = FIXTURES / "GM101" / "invalid_reduction_maybe_empty.py"
    orig, _ = _make(case, "eo")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "ef")
    args = (torch.randn(0, 4, requires_grad=True), torch.tensor(-10.0))
    want, want_g, _ = _call(orig, args)
    with pytest.raises(IndexError, match="non-zero size"):
        orig.proj(args[0]).amax(dim=0)  # what torch.where alone would have run
    for backend in ("aot_eager", "inductor"):
        got, got_g, _ = _call(fixed, args, backend)
        assert _same(want, got, exact=True) and _same(want_g, got_g, exact=True)


def test_index_guard_untaken_and_other_shapes():
    """The out-of-range index of the untaken branch is 0 under compile, so neither aot_eager (IndexError)
    nor inductor (its bounds assert) raises; an index of another length gives rows of another shape,
    and the trace-time shape check runs the original `if` (one break, the eager result)."""
    case = FIXTURES / "GM101" / "invalid_branch_only_indexing.py"
    orig, _ = _make(case, "xo")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "xf")
    x = torch.randn(4, 3, requires_grad=True)
    with pytest.raises(IndexError):
        torch.where(torch.tensor(False), x[torch.tensor([9, 0, 1, 2])], x)  # torch.where alone
    for idx, breaks in ((torch.tensor([9, 0, 1, 2]), 0), (torch.tensor([2, 1]), 1), (torch.tensor([2, 9]), 1)):
        want, want_g, _ = _call(orig, (x, idx))
        for backend in ("aot_eager", "inductor"):
            got, got_g, n = _call(fixed, (x, idx), backend)
            assert _same(want, got, exact=True) and _same(want_g, got_g, exact=True), (backend, idx)
            assert n == breaks, (backend, idx)


def test_one_sided_read_keeps_no_gradient():
    """`self.gain` is read in one branch only: with gradients on the `if` runs, and the untaken
    branch leaves `gain.grad` None, as in eager."""
    case = FIXTURES / "GM101" / "invalid_one_sided_param.py"
    orig, inputs = _make(case, "go")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "gf")
    torch._dynamo.reset()
    untaken = inputs[1][0].detach().requires_grad_()
    torch.compile(fixed, backend="aot_eager")(untaken).sum().backward()
    assert untaken.grad is not None and fixed.gain.grad is None


def test_grad_off_cases_exist():
    assert {c.name for c in GRAD_OFF} >= {"invalid_one_sided_param.py", "invalid_module_call_shared.py"}


def _nan_same(a: list, b: list, exact: bool) -> bool:
    """Equal (NaN where NaN): bitwise, or (Inductor's own kernels) within float32 rounding."""
    def same(x, y):
        x, y = torch.nan_to_num(x, nan=0.0), torch.nan_to_num(y, nan=0.0)
        return torch.equal(x, y) if exact else torch.allclose(x, y, rtol=1e-5, atol=1e-6)
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype and torch.equal(x.isnan(), y.isnan())
                                    and same(x, y) for x, y in zip(a, b))


DOUBLE_WHERE = ["GM101/invalid_sqrt_in_elif_chain.py", "GM101/invalid_elif_chain.py", "GM101/invalid_rescale_by_max.py",
                "GM101/invalid_reduction_maybe_empty.py", "GM101/invalid_return_after_shadow.py",
                "GM102/invalid_ifexp_rescale_by_max.py"]


@pytest.mark.parametrize("name", DOUBLE_WHERE)
def test_double_where_exact_with_gradients(name):
    """Branch values whose ops are not exact under torch.where's zero gradient (sqrt, tanh, sigmoid
    in an `elif` chain; `h - h.amax()`, not a chain of ops): each arm's input is guarded by the tests
    that take it (`torch.where(c0, 1.0, torch.where(c1, h, 1.0))`), so with gradients on the
    compiled form runs in one graph and gives the eager original's values and gradients, also where
    the untaken arm sees NaN or -inf (plain torch.where gives NaN gradients there)."""
    case = FIXTURES / name
    fixed_path = case.with_name(case.stem + ".fixed.py")
    assert "is_grad_enabled" not in fixed_path.read_text(encoding="utf-8")
    orig, inputs = _make(case, "dw_o")
    fixed, _ = _make(fixed_path, "dw_f")
    fixed.load_state_dict(orig.state_dict())
    with torch.no_grad():  # identity layer: the untaken arm sees the input's NaN and -inf as they are
        for m in (orig, fixed):
            m.proj.weight.copy_(torch.eye(4))
            m.proj.bias.zero_()
    first, *rest = inputs[0]
    odd = []
    for bad in (float("nan"), float("-inf")):
        x = first.detach().clone()
        x.view(-1)[0] = bad
        odd.append((x.requires_grad_(), *rest))
    for args in [*inputs, *odd]:
        want, want_g, _ = _call(orig, args)
        for backend in ("aot_eager", "inductor"):
            got, got_g, breaks = _call(fixed, args, backend)
            assert breaks == 0, backend
            exact = backend == "aot_eager"
            assert _nan_same(want, got, exact) and _nan_same(want_g, got_g, exact), (backend, args)


def test_plain_where_gives_nan_gradients_there():
    """What the guard prevents: torch.where alone, the untaken sqrt / amax at NaN."""
    h = torch.tensor([[float("nan"), 0.5, 1.0, -1.0]], requires_grad=True)
    y = torch.where(h.mean() > 1, torch.sqrt(h), torch.where(h.mean() < -1, h * 2, h))
    (g,) = torch.autograd.grad(y.sum(), h)
    assert not torch.isfinite(g).all()
    h = torch.tensor([[float("nan"), 0.5], [1.0, -1.0]], requires_grad=True)
    y = torch.where(h.abs().amax() > 1, h - h.abs().amax(), h)
    (g,) = torch.autograd.grad(y.sum(), h)
    assert not torch.isfinite(g).all()


@pytest.mark.parametrize("case", GRAD_OFF, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_grad_off_form_compiles_in_one_graph(case):
    """Under no_grad (inference) the compiled form runs: no break, the eager original's outputs."""
    orig, inputs = _make(case, "no")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "nf")
    for args in inputs:
        args = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
        for backend in ("aot_eager", "inductor"):
            with torch.no_grad():
                want, _, _ = _call(orig, args)
                got, _, breaks = _call(fixed, args, backend)
            assert _same(want, got, exact=backend == "aot_eager") and breaks == 0, backend


class _Dropping(torch.nn.Module):
    """LayerDrop around layers with dropout: the compiled run must draw the same random numbers."""

    def __init__(self, module, layerdrop):
        super().__init__()
        self.inner = module.Encoder(layerdrop)
        for i, layer in enumerate(self.inner.layers):
            self.inner.layers[i] = torch.nn.Sequential(layer, torch.nn.Dropout(0.5))

    def forward(self, x):
        return self.inner(x)


@pytest.mark.parametrize("layerdrop,breaks", [(0.0, 0), (0.5, None)])
def test_layerdrop_rng_stream_and_breaks(layerdrop, breaks):
    """Train mode, dropout after every layer. With `fallback_random` (the setting under which compiled
    random ops reproduce eager's) the fixed code compiled gives the eager original's outputs and
    gradients, with layerdrop 0.0 in one graph. With 0.5 the draw still decides in Python: Dynamo
    still gives up on the loop (the fix changes nothing there), and the result is still the eager one."""
    case = FIXTURES / "GM104" / "invalid_layerdrop_encoder.py"
    torch.manual_seed(0)
    orig = _Dropping(_module(case, "lo"), layerdrop).train()
    torch.manual_seed(0)
    fixed = _Dropping(_module(case.with_name(case.stem + ".fixed.py"), "lf"), layerdrop).train()
    x = torch.randn(4, 8, requires_grad=True)
    for seed in (1, 2, 3):
        want, want_g, _ = _call(orig, (x,), seed=seed)
        for backend in ("aot_eager", "inductor"):
            with torch._inductor.config.patch(fallback_random=True):
                got, got_g, n = _call(fixed, (x,), backend, seed=seed)
            assert _same(want, got, exact=True) and _same(want_g, got_g, exact=True), (backend, seed)
            if breaks is not None:
                assert n == breaks
            else:
                assert n >= 1


NESTED = FIXTURES / "GM102" / "invalid_ifexp_nested.py"


def test_nested_ternary_keeps_the_order_of_what_runs_before_it():
    """`y = self.drop(x) + self.tap(h) * (gate if (h * self.tap.calls).norm() > 4 else h)`: the
    compiled form binds the branch values (to compare their shapes) and so binds `self.drop(x)` and
    `self.tap(h)` first, in order. Binding only the test and values first (the Tap's count read before
    its call) takes the other branch on the first input: the fixture tells the two orders apart."""
    fixed_path = NESTED.with_name(NESTED.stem + ".fixed.py")
    text = fixed_path.read_text(encoding="utf-8")
    bound = "            y_part = self.drop(x)\n            y_part2 = self.tap(h)\n"
    test = "            cond = (h * self.tap.calls).norm() > 4\n"
    assert bound + test in text
    swapped = fixed_path.with_name("_swapped_nested.py")
    swapped.write_text(text.replace(bound + test, test + bound), encoding="utf-8")
    try:
        orig, inputs = _make(NESTED, "no")
        fixed, _ = _make(fixed_path, "nf")
        wrong, _ = _make(swapped, "nw")
        args = inputs[0]
        want, want_g, _ = _call(orig, args)
        got, got_g, breaks = _call(fixed, args, "aot_eager")
        assert _same(want, got, exact=True) and _same(want_g, got_g, exact=True) and breaks == 0
        bad, _, _ = _call(wrong, args, "aot_eager")
        assert not _same(want, bad, exact=False)
    finally:
        swapped.unlink()


def test_nested_ternary_falls_back_on_other_shapes_and_dtypes():
    """A (1, 4) gate: the traced shapes differ, the original choice runs (one break, eager's result,
    where torch.where alone would broadcast). An integer scale fails `scale.is_floating_point()`."""
    orig, _ = _make(NESTED, "so")
    fixed, _ = _make(NESTED.with_name(NESTED.stem + ".fixed.py"), "sf")
    big = torch.full((2, 4), 3.0, requires_grad=True)
    gate = torch.tensor([[1.0, -0.5, 2.0, 0.5]], requires_grad=True)
    scale = torch.tensor([0.5, 2.0, 1.0, 0.25], requires_grad=True)
    for args, grads in (((big, gate, scale), True), ((big, gate.detach().expand(2, 4), torch.tensor([-1, 2, 0, 1])), False)):
        want, want_g, _ = _call(orig, args)
        got, got_g, breaks = _call(fixed, args, "aot_eager")
        assert _same(want, got, exact=True) and (not grads or _same(want_g, got_g, exact=True))
        assert breaks == 1


def test_nested_ternary_with_dropout_before_it():
    """Train mode, dropout 0.5 evaluated before the ternary (bound first): with the RNG seeded alike the
    compiled fixed code draws what the eager original draws; no break."""
    for backend in ("aot_eager", "inductor"):
        orig, inputs = _make(NESTED, "do")
        fixed, _ = _make(NESTED.with_name(NESTED.stem + ".fixed.py"), "df")  # fresh Tap counts
        orig.drop.p = fixed.drop.p = 0.5
        for seed, args in enumerate(inputs):
            want, want_g, _ = _call(orig, args, seed=seed)
            with torch._inductor.config.patch(fallback_random=True):
                got, got_g, breaks = _call(fixed, args, backend, seed=seed)
            exact = backend == "aot_eager"
            assert _same(want, got, exact) and _same(want_g, got_g, exact), (backend, seed)
            assert breaks == 0


@pytest.mark.parametrize("name,breaks", [("invalid_masked_fill_indexed.py", (1, 1, 1)),
                                         ("invalid_masked_update_indexed.py", (2, 2, 1))])
def test_masked_checks_fall_back_to_the_if(name, breaks):
    """Masks the update would raise on (a float mask, one that does not fit the updated tensor, one
    with too few dims for its index), none of them selecting anything: eager never runs the update;
    the trace-time checks fail, so the compiled code runs the `if` too (one break per failed check,
    the eager result) where the update alone or torch.where would have raised. (A 1-d mask fits
    `pad[..., None, :]`: that update runs alone. Gradients off: the updated tensor is a parameter.)"""
    case = FIXTURES / "GM101" / name
    orig, inputs = _make(case, "mo")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "mf")
    head = inputs[0][:-1]
    pads = (torch.zeros(2, 3), torch.zeros(2, 4, dtype=torch.bool), torch.zeros(3, dtype=torch.bool))
    for pad, expected in zip(pads, breaks):
        with pytest.raises((RuntimeError, IndexError)):
            _call(orig, (*head, torch.ones_like(pad)))  # the update itself, when it runs
        with torch.no_grad():
            want, want_g, _ = _call(orig, (*head, pad))
            got, got_g, n = _call(fixed, (*head, pad), "aot_eager")
        assert _same(want, got, exact=True) and _same(want_g, got_g, exact=True), pad
        assert n == expected, pad


LAYERDROP_COND = FIXTURES / "GM104" / "invalid_layerdrop_cond.py"


def _drop_call(model, args, backend, seed):
    """`_call`, plus the next random numbers after the forward (the draws must stay in order)."""
    torch._dynamo.reset()
    run = model if backend is None else torch.compile(model, backend=backend)
    x = args[0].detach().clone().requires_grad_()
    torch.manual_seed(seed)
    with _graph_breaks() as log:
        out = run(x, *args[1:])
    after = torch.rand(4)
    params = list(model.parameters())
    grads = torch.autograd.grad(out.sum(), [x, *params], allow_unused=True)
    torch._dynamo.reset()
    return out, list(grads), log.count, after


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_layerdrop_cond_unsafe_fix(mode):
    """LayerDrop 0.5 in seven loop shapes (GM104/invalid_layerdrop_cond.py), layers without random ops:
    the unsafe torch.cond form compiled (aot_eager) gives the eager original's outputs and draws under
    the same seed with no break (the original breaks in train mode); gradients are equal, except that
    a skipped layer's parameters get zeros where eager leaves None (what the fix message says). In eval
    mode the compiled path runs the original loop body: an unconditional draw whose value goes unused
    is then dropped by AOTAutograd, in the original compiled as in the fixed code."""
    module, fixed_module = _module(LAYERDROP_COND, "ldo"), _module(LAYERDROP_COND.with_name(LAYERDROP_COND.stem + ".unsafe.fixed.py"), "ldf")
    torch.manual_seed(0)
    orig = module.Encoder().train(mode == "train")
    fixed = fixed_module.Encoder().train(mode == "train")
    fixed.load_state_dict(orig.state_dict())
    args = (torch.randn(2, 8), torch.ones(2, 8))
    assert _drop_call(orig, args, "aot_eager", 0)[2] == (1 if mode == "train" else 0)
    zeros = 0
    for seed in range(3):
        want, want_g, _, want_after = _drop_call(orig, args, None, seed)
        if mode == "eval":
            want_after = _drop_call(orig, args, "aot_eager", seed)[3]
        got, got_g, breaks, got_after = _drop_call(fixed, args, "aot_eager", seed)
        assert torch.equal(want, got) and torch.equal(want_after, got_after) and breaks == 0, seed
        for w, g in zip(want_g, got_g):
            if w is None:
                zeros += g is not None
                assert g is None or not g.any()
            else:
                assert g is not None and torch.allclose(w, g, rtol=1e-5, atol=1e-6), seed
    assert (zeros > 0) == (mode == "train")


def test_layerdrop_cond_dropout_in_the_layer_changes_gradients():
    """With dropout inside the layers (train mode) the compiled outputs still equal eager's, but the
    backward of torch.cond re-runs the taken layer with new random numbers: its gradients differ from
    eager's (the fix message says so; why the fix is unsafe beyond zeros for None)."""
    module, fixed_module = _module(LAYERDROP_COND, "ldro"), _module(LAYERDROP_COND.with_name(LAYERDROP_COND.stem + ".unsafe.fixed.py"), "ldrf")
    torch.manual_seed(0)
    orig = module.Encoder(dropout=0.3).train()
    fixed = fixed_module.Encoder(dropout=0.3).train()
    fixed.load_state_dict(orig.state_dict())
    args = (torch.randn(2, 8), torch.ones(2, 8))
    differ = 0
    for seed in range(3):
        want, want_g, _, want_after = _drop_call(orig, args, None, seed)
        got, got_g, breaks, got_after = _drop_call(fixed, args, "aot_eager", seed)
        assert torch.equal(want, got) and torch.equal(want_after, got_after) and breaks == 0, seed
        differ += not torch.allclose(want_g[0], got_g[0], rtol=1e-5, atol=1e-6)
    assert differ > 0


MODULE_ARM = FIXTURES / "GM101" / "invalid_module_call_arm.py"


def test_module_call_with_a_hook_runs_the_if():
    """A forward hook on the module, or a global one, fails the trace-time check: the `if` runs, so the
    hook runs as often as in the original compiled (where torch.where alone would run it for the
    untaken branch too), with the original's results. (A hook on `self.proj` keeps only that `if`'s
    break; the other arms still compile.)"""
    orig, inputs = _make(MODULE_ARM, "ho")
    fixed, _ = _make(MODULE_ARM.with_name(MODULE_ARM.stem + ".fixed.py"), "hf")
    for register in (lambda f: orig.proj.register_forward_hook(f) and fixed.proj.register_forward_hook(f),
                     torch.nn.modules.module.register_module_forward_hook):
        calls: list[str] = []
        handle = register(lambda m, i, o, calls=calls: calls.append(type(m).__name__))
        try:
            for args in inputs[:2]:
                args = tuple(a.detach() for a in args)
                with torch.no_grad():
                    calls.clear()
                    want, _, want_breaks = _call(orig, args, "aot_eager")
                    want_calls = sorted(calls)
                    calls.clear()
                    got, _, breaks = _call(fixed, args, "aot_eager")
                assert _same(want, got, exact=True) and sorted(calls) == want_calls and 0 < breaks <= want_breaks
        finally:
            if isinstance(handle, torch.utils.hooks.RemovableHandle):
                handle.remove()
            for m in (orig.proj, fixed.proj):
                m._forward_hooks.clear()


def test_module_call_dropout_in_train_mode_runs_the_if():
    """Train-mode Dropout fails `not self.drop.training`: the `if` runs, and draws only where its
    branch is taken, as in eager (same seed, same outputs); in eval mode one graph."""
    case = FIXTURES / "GM101" / "invalid_module_call_dropout.py"
    orig, inputs = _make(case, "do")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "df")
    for train, breaks in ((True, 1), (False, 0)):
        orig.train(train), fixed.train(train)
        for seed, args in enumerate(inputs):
            args = tuple(a.detach() for a in args)
            with torch.no_grad():
                want, _, _ = _call(orig, args, seed=seed)
                got, _, n = _call(fixed, args, "aot_eager", seed=seed)
            assert _same(want, got, exact=True) and n == breaks, (train, seed)


def test_module_call_unsafe_cond_with_gradients_on():
    """The unsafe second step (torch.cond for gradients on): compiled with gradients on, no break, the
    eager original's outputs and input gradients on every branch; the parameters of a module whose
    branch is not taken get zeros where eager leaves None (what the fix message says)."""
    orig, inputs = _make(MODULE_ARM, "uo")
    fixed, _ = _make(MODULE_ARM.with_name(MODULE_ARM.stem + ".unsafe.fixed.py"), "uf")
    zeros = 0
    for i, args in enumerate(inputs):
        want, want_g, _ = _call(orig, args)
        for backend in ("aot_eager", "inductor"):
            got, got_g, breaks = _call(fixed, args, backend)
            exact = backend == "aot_eager"
            assert _same(want, got, exact) and _same(want_g[:1], got_g[:1], exact) and breaks == 0, (i, backend)
            for w, g in zip(want_g[1:], got_g[1:]):
                if w is None:
                    assert g is None or not g.any()
                    zeros += g is not None
                else:
                    assert _same([w], [g], exact), (i, backend)
    assert zeros > 0


def test_module_call_unsafe_step_says_what_changes():
    """The second step is reported on the safe form's original `elif`, unsafe, naming the change."""
    from graphmend_lint import engine
    from graphmend_lint.fixes.safety import Safety
    from graphmend_lint.settings import Settings
    source = MODULE_ARM.with_name(MODULE_ARM.stem + ".fixed.py").read_bytes()
    findings = engine.check(source, Settings(unsafe_fixes=True)).findings
    assert [f.safety for f in findings] == [Safety.UNSAFE] * 3
    assert "`self.proj`'s parameters get zero gradients instead of None" in findings[0].message
    assert "`self.act` has no parameters" in findings[2].message


def test_masked_updates_fall_back_with_gradients_or_an_integer_dtype():
    """Where the trace-time checks fail the `if` runs, as in eager: rag's two fills on tensors that
    autograd tracks (`not ll.requires_grad`: train mode, gradients on), wav2vec2's `-inf` into an
    integer `logits[1:]` (`is_floating_point()`; eager never stores it when no negative equals the
    positive). Checks that hold: the update alone, no break (the original breaks)."""
    fills = FIXTURES / "GM101" / "invalid_masked_fill_two_tensors.py"
    orig, inputs = _make(fills, "go")
    fixed, _ = _make(fills.with_name(fills.stem + ".fixed.py"), "gf")
    for model in (orig, fixed):
        model.train().requires_grad_(True)
    for x, target in inputs:
        args = (x.detach().requires_grad_(), target)
        want, want_g, _ = _call(orig, args)
        got, got_g, breaks = _call(fixed, args, "aot_eager")
        assert _same(want, got, exact=True) and _same(want_g, got_g, exact=True)
        assert breaks == _call(orig, args, "aot_eager")[2] >= 1
    view = FIXTURES / "GM101" / "invalid_masked_update_view.py"
    orig, inputs = _make(view, "vo")
    fixed, _ = _make(view.with_name(view.stem + ".fixed.py"), "vf")
    q, negatives, _ = inputs[1]
    for logits, expected in ((torch.arange(6).reshape(3, 2), 1), (torch.randn(3, 2), 0)):
        with torch.no_grad():  # `logits` is a parameter: with gradients on the `if` runs (next test)
            want, _, _ = _call(orig, (q, negatives, logits))
            got, _, breaks = _call(fixed, (q, negatives, logits), "aot_eager")
        assert _same(want, got, exact=True) and breaks == expected
        assert _call(orig, (q, negatives, logits), "aot_eager")[2] == 1
        assert _call(fixed, (q, negatives, logits), "aot_eager")[2] == 1


def test_masked_update_of_a_caller_tensor_saved_for_backward():
    """monai VISTA3D's form: the caller saved the tensor for backward (`y = w * t`), the mask selects
    nothing. The update alone would still bump the tensor's version, so `y.backward()` would raise
    where the `if` never ran it; the fix's `not torch.is_grad_enabled()` runs the `if` (one break).
    Left (rules/GM101.md): a tensor saved with gradients on and then updated in a no_grad call."""
    case = FIXTURES / "GM101" / "invalid_masked_update_of_caller_tensor.py"
    fixed = _module(case.with_name(case.stem + ".fixed.py"), "sv").Combine()
    assert "is_grad_enabled" in case.with_name(case.stem + ".fixed.py").read_text(encoding="utf-8")
    run = torch.compile(fixed.combine, backend="aot_eager")
    w, t = torch.randn(2, 3, requires_grad=True), torch.randn(2, 3)
    y = (w * t).sum()  # saves t
    with _graph_breaks() as log:
        run(t, torch.zeros(2, 3, dtype=torch.bool))
    y.backward()  # the unguarded update alone raised here
    assert torch.equal(w.grad, t) and log.count == 1
    for where in ("update alone", "no_grad call"):
        torch._dynamo.reset()
        w, t = torch.randn(2, 3, requires_grad=True), torch.randn(2, 3)
        y = (w * t).sum()
        if where == "update alone":
            t[torch.zeros(2, 3, dtype=torch.bool)] = -1
        else:
            with torch.no_grad(), _graph_breaks() as log:
                run(t, torch.zeros(2, 3, dtype=torch.bool))
            assert log.count == 0
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_buffer_tests_are_real_breaks():
    """GM101/invalid_buffer_test.py: the test it reports on a registered buffer is the graph break
    Dynamo logs; the None test of a buffer is none."""
    case = FIXTURES / "GM101" / "invalid_buffer_test.py"
    model = _module(case, "buf").ActNorm(4)
    _, _, breaks = _call(model, (torch.randn(3, 4),), "aot_eager")
    reported = [line for line in case.with_name(case.stem + ".findings.txt").read_text(encoding="utf-8").splitlines()
                if " GM101 " in line]
    assert breaks == len(reported) == 1


def test_ones_multiply_keeps_special_values_and_falls_back():
    """GM101 ones.py: where the mask is all ones the product runs alone under compile and gives the
    input itself, NaN, infinities and -0.0 included (outputs and gradients, train mode); a float64
    mask with float32 hidden states would change the product's dtype: the check keeps the `if`."""
    case = FIXTURES / "GM101" / "invalid_ones_multiply.py"
    orig, _ = _make(case, "so")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), "sf")
    x = torch.randn(2, 3, 4)
    x[0, 0, 0], x[1, 2, 1], x[0, 1, 2] = float("nan"), float("-inf"), -0.0
    for mask in (torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.bool)):
        args = (x.clone().requires_grad_(), mask)
        want, want_g, _ = _call(orig.train(), args)
        got, got_g, breaks = _call(fixed.train(), args, "aot_eager")
        assert breaks == 0
        for a, b in zip(want + want_g, got + got_g):
            torch.testing.assert_close(b, a, rtol=0, atol=0, equal_nan=True)
    zamba = FIXTURES / "GM101" / "invalid_ones_multiply_unsqueeze.py"
    orig, inputs = _make(zamba, "zo")
    fixed, _ = _make(zamba.with_name(zamba.stem + ".fixed.py"), "zf")
    h, ones = inputs[0]
    for mask, expected in ((ones.double(), 1), (ones, 0)):
        want, _, _ = _call(orig, (h, mask))
        got, _, breaks = _call(fixed, (h, mask), "aot_eager")
        assert _same(want, got, exact=True) and breaks == expected
        assert _call(orig, (h, mask), "aot_eager")[2] == 1


def _autocast_case(tag):
    case = FIXTURES / "GM101" / "invalid_autocast_float32_op.py"
    orig, inputs = _make(case, tag + "o")
    fixed, _ = _make(case.with_name(case.stem + ".fixed.py"), tag + "f")
    fixed.load_state_dict(orig.state_dict())
    return orig, fixed, inputs


def test_autocast_check_under_cpu_autocast_and_torchscript():
    """CPU autocast keeps `exp`'s bfloat16 (test_gm1_tables): the fix runs there (`h.is_cpu`), one
    graph, outputs and gradients equal to the eager original's under autocast. The check is one
    TorchScript compiles (`torch.is_autocast_enabled(device)` it does not): the fixed module scripts."""
    orig, fixed, inputs = _autocast_case("ac")
    for args in inputs:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            want, want_g, _ = _call(orig, args)
            got, got_g, breaks = _call(fixed, args, "aot_eager")
        assert want[0].dtype == torch.bfloat16
        assert _same(want, got, exact=True) and _same(want_g, got_g, exact=True) and breaks == 0
    scripted = torch.jit.script(fixed)
    for args in inputs:
        assert torch.equal(scripted(*args), orig(*args))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_autocast_keeps_the_dtype_of_the_untaken_value():
    """CUDA autocast runs `exp` in float32: torch.where(c, h.exp(), h) is float32 on both branches,
    the `if` keeps float16 where it is False. The checked fix runs the `if` there."""
    orig, fixed, inputs = _autocast_case("cu")
    orig, fixed = orig.cuda(), fixed.cuda()
    for args in inputs:
        args = tuple(a.detach().cuda().requires_grad_(a.requires_grad) for a in args)
        with torch.autocast("cuda", dtype=torch.float16):
            want, _, _ = _call(orig, args)
            got, _, _ = _call(fixed, args, "aot_eager")
            h = orig.proj(args[0])
            unchecked = torch.where(args[1].sum() > 0, h.exp(), h) * 2  # the fix without the check
        assert _same(want, got, exact=True)
        assert unchecked.dtype == torch.float32 and want[0].dtype == (
            torch.float32 if args[1].sum() > 0 else torch.float16)


def test_returned_parameter_alias_makes_the_fix_unsafe():
    """vLLM's `cast_overflow_tensors` returns the caller's tensor itself where nothing overflows; a
    caller that modifies the result in place modifies its own tensor too. Under compile torch.where
    returns a new tensor, so that caller's tensor stays as it was: the fix is only offered as unsafe
    (and the eager path, the `if`, is unchanged)."""
    case = FIXTURES / "GM101" / "invalid_parameter_returned_unchanged.py"
    assert not case.with_name(case.stem + ".fixed.py").exists()
    orig, _ = _make(case, "ao")
    fixed, _ = _make(case.with_name(case.stem + ".unsafe.fixed.py"), "af")
    x = torch.ones(2, 3)
    want = orig(x)
    assert torch.equal(want, torch.full((2, 3), 2.0))
    assert torch.equal(fixed(x), want)
    assert torch.equal(torch.compile(orig, backend="aot_eager")(x), want)
    torch._dynamo.reset()
    got, breaks = torch.compile(fixed, backend="aot_eager")(x), _call(fixed, (x,), "aot_eager")[2]
    torch._dynamo.reset()
    assert breaks == 0 and torch.equal(got, torch.ones(2, 3))  # the caller's `h` was not doubled


def test_parameter_returned_from_a_branch_makes_the_fix_unsafe():
    """The return form of the test above (`if c: return t, sizes` / `return t * 2, sizes`): `t` is the
    caller's own tensor where the branch runs, so the fix is unsafe; `sizes`, the same in every
    branch, is returned as it is (no torch.where, its identity kept)."""
    case = FIXTURES / "GM101" / "invalid_parameter_returned_from_a_branch.py"
    assert not case.with_name(case.stem + ".fixed.py").exists()
    unsafe = case.with_name(case.stem + ".unsafe.fixed.py")
    assert "torch.where((sizes == sizes[0]).all(), t, t * 2), sizes" in unsafe.read_text(encoding="utf-8")
    orig, _ = _make(case, "bo")
    fixed, _ = _make(unsafe, "bf")
    x, same = torch.ones(2, 3), torch.tensor([4, 4])
    want = orig(x, same)
    assert torch.equal(want, torch.full((2, 3), 2.0)) and torch.equal(fixed(x, same), want)
    assert torch.equal(torch.compile(orig, backend="aot_eager")(x, same), want)
    torch._dynamo.reset()
    got = torch.compile(fixed, backend="aot_eager")(x, same)
    torch._dynamo.reset()
    assert torch.equal(got, torch.ones(2, 3))  # the caller's `h` was not doubled: why the fix is unsafe

