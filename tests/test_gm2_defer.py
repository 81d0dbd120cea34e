"""log-strategy = "defer" for print(): eager output unchanged, and under torch.compile the same
lines are printed (values at call time, same order) while the graph stays whole; prints in
frames Dynamo inlines are dropped by torch 2.13's reordering (measured here)."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import torch
from fixture_io import FIXTURES
from harness import load

from graphmend_lint import engine
from graphmend_lint.settings import Settings

CASE = Path(__file__).parent / "fixtures" / "GM201" / "invalid_print_deferrable.py"
DEFER = Settings(select=("GM201",), log_strategy="defer")


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    fixed = engine.check(CASE.read_bytes(), DEFER, fix=True)
    assert fixed.fixed and not fixed.findings
    path = tmp_path_factory.mktemp("defer") / "deferred.py"
    path.write_bytes(fixed.source)
    return load(CASE, "defer_orig"), load(path, "defer_fixed"), fixed.source.decode()


def _run(module, compiled: bool, args) -> tuple[str, int]:
    """stdout of one call (under no_grad, so tensor reprs carry no grad_fn) and graphs compiled."""
    torch.manual_seed(0)
    fn, _ = module.make()
    graphs = 0

    def backend(gm, example_inputs):
        nonlocal graphs
        graphs += 1
        return gm.forward

    torch._dynamo.reset()
    if compiled:
        fn = torch.compile(fn, backend=backend)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), torch.no_grad():
        fn(*(a.clone() for a in args))
    torch._dynamo.reset()
    return buf.getvalue(), graphs


def test_fixed_code_stands_on_torch_alone(modules):
    _, _, source = modules
    assert "graphmend" not in source.replace("_graphmend_print", "").replace("graphmend-lint", "")
    assert "reorderable_logging_functions.add(_graphmend_print)" in source


def test_defer_fixes_are_safe_by_default():
    findings = engine.check(CASE.read_bytes(), DEFER).findings
    assert [f.code for f in findings] == ["GM201"] * 4
    assert all(f.safety.value == "safe" for f in findings)
    # the helper `scale`, which Dynamo inlines into forward's frame (where a deferred call is
    # never replayed), gets the guard; forward's prints are deferred
    assert ["defer" in f.message for f in findings] == [True] * 3 + [False]


@pytest.mark.parametrize("rows", [2, 3])
def test_compiled_run_prints_what_eager_prints(modules, rows):
    orig, fixed, _ = modules
    args = (torch.randn(rows, 4),)
    eager_orig, _ = _run(orig, False, args)
    eager_fixed, _ = _run(fixed, False, args)
    compiled_fixed, graphs_fixed = _run(fixed, True, args)
    compiled_orig, graphs_orig = _run(orig, True, args)
    assert eager_fixed == eager_orig  # eager: byte for byte
    starts = [line.split()[0] for line in eager_orig.splitlines() if not line.startswith(" ")]
    assert starts == ["block", "rows", "scale", "done"]
    # compiled: the same lines with the same values (h before h.mul_), in order; except that
    # torch 2.13 drops deferred calls made in frames Dynamo inlines (here `scale`), as the guard would.
    eager_root = "".join(line for line in eager_orig.splitlines(keepends=True) if not line.startswith("scale"))
    assert compiled_fixed == eager_root
    assert graphs_fixed == 1
    assert graphs_orig > graphs_fixed


def test_defer_is_the_default_and_guard_an_option():
    default = engine.check(CASE.read_bytes(), Settings(select=("GM201",)), fix=True).source.decode()
    assert default == engine.check(CASE.read_bytes(), DEFER, fix=True).source.decode()
    guarded = engine.check(CASE.read_bytes(), Settings(select=("GM201",), log_strategy="guard"), fix=True)
    source = guarded.source.decode()
    assert "_graphmend_print" not in source and source.count("if not torch.compiler.is_compiling():") == 4


def test_not_deferred_falls_back_to_guard():
    src = b'''import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        y = x * 2
        print("kw", y, sep="|")
        print(*[y])
        print(f"{y.sum().item():.3f}")
        print("computed", self.describe(y))
        return y
'''
    findings = engine.check(src, DEFER).findings
    assert len(findings) == 4 and all("guard it" in f.message for f in findings)
    # `self.describe(y)` may change state (a method of the model's own): guarded, compiled code would
    # skip it, so that one gets no fix (audit: sam2's `logging.info(..., self.load_state_dict(...))`)
    assert "may have a side effect (`self.describe()`)" in findings[3].message and findings[3].safety == "none"
    fixed = engine.check(src, DEFER, fix=True).source.decode()
    assert "_graphmend_print" not in fixed and fixed.count("is_compiling()") == 1  # adjacent guards merged
    assert fixed.count("\n            print(") == 3
    assert '\n        print("computed", self.describe(y))' in fixed


def test_no_helper_above_a_late_import():
    src = b'''from torch import nn


class M(nn.Module):
    def forward(self, x):
        y = x * 2
        print("late", y)
        return y


import torch
'''
    fixed = engine.check(src, DEFER, fix=True).source.decode()
    assert "_graphmend_print" not in fixed and "if not torch.compiler.is_compiling():" in fixed


CAPTURED = (FIXTURES / "GM201" / "invalid_print_captured.py").read_text(encoding="utf-8")


def test_print_whose_text_is_read_back_gets_no_fix():
    """transformers 5.18's model_debugging_utils prints a tensor into a StringIO and parses it: a
    guard (or deferral) would leave the text empty under compile. `file=sys.stderr` is output only."""
    result = engine.check(CAPTURED.encode(), Settings(), fix=True)
    assert result.source.decode().count("is_compiling") == 1, result.source.decode()  # the stderr print only
    left = sorted((f.line, f.message.split("no fix: ")[-1].removesuffix(")")) for f in result.findings)
    assert left == [(14, "its output is read back (`redirect_stdout`): skipping it under compile would change that text"),
                    (17, "its output is read back (`file=`): skipping it under compile would change that text")]


def test_captured_print_is_not_rewritten_by_a_neighbours_helper_fix():
    """The deferred helper's statement fix rewrites every print of its statement: not a captured one."""
    source = CAPTURED.replace("    def forward(self, x):\n", "    def forward(self, x):\n        print(\"start\")\n")
    fixed = engine.check(source.encode(), Settings(), fix=True).source.decode()
    assert "_graphmend_print(\"start\")" in fixed, fixed
    assert "            print(x.sum())\n            text = buf.getvalue()" in fixed, fixed
    assert "        print(\"a\", file=out)\n" in fixed, fixed
