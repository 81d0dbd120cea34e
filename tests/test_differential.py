"""Every fixture with a fix and a `make()`: the fix keeps eager behaviour and removes breaks."""
from __future__ import annotations

import pytest
import torch
from fixture_io import fixture_cases, grad_off_fix
from harness import assert_same, graph_breaks, load, observe

CASES = []
for case in fixture_cases():
    if "def make(" not in case.read_text(encoding="utf-8"):
        continue
    for suffix, safe in ((".fixed.py", True), (".unsafe.fixed.py", False)):
        fixed = case.with_name(case.stem + suffix)
        if fixed.exists():
            CASES.append(pytest.param(case, fixed, safe, id=f"{case.parent.name}/{fixed.name}"))


def _build(path, tag):
    module = load(path, f"fixture_{tag}_{path.parent.name}_{path.stem.replace('.', '_')}")
    torch.manual_seed(0)
    fn, inputs = module.make()
    return module, fn, inputs


@pytest.mark.parametrize("case,fixed,safe", CASES)
def test_fix_keeps_eager_behaviour(case, fixed, safe):
    _, orig_fn, inputs = _build(case, "orig")
    _, fixed_fn, _ = _build(fixed, "fixed")
    for i, args in enumerate(inputs):
        o, f = observe(orig_fn, args), observe(fixed_fn, args)
        if safe:
            assert_same(o, f, f"input {i}")


@pytest.mark.parametrize("case,fixed,safe", CASES)
def test_fix_removes_breaks(case, fixed, safe):
    module, orig_fn, inputs = _build(case, "orig")
    _, fixed_fn, _ = _build(fixed, "fixed")
    if safe and grad_off_fix(case):  # the compiled form runs with gradients off (inference)
        assert graph_breaks(fixed_fn, inputs) == graph_breaks(orig_fn, inputs)  # with them on: the `if`
        # inference: inputs that need no grad (one that does, handed on by the `if`, keeps the `if`:
        # test_gm1_rules.test_gradients_off_form_checks_what_the_if_hands_on)
        plain = [tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args) for args in inputs]
        with torch.no_grad():
            before, after = graph_breaks(orig_fn, plain), graph_breaks(fixed_fn, plain)
    else:
        before, after = graph_breaks(orig_fn, inputs), graph_breaks(fixed_fn, inputs)
    assert after == getattr(module, "BREAKS_AFTER_FIX", 0), (before, after)
    assert after < before
