"""Differential fuzzing: generated programs are linted and fixed, and the fixes must hold up.

For every program (tests/fuzzgen.py): the linter does not crash, every fix compiles and is
idempotent, nothing is reported on static tests or in uncompiled code, and a SAFE fix keeps eager
outputs, gradients, exceptions, prints, log records, warnings and module state on inputs that
run every branch. A few programs are also compiled: the fix never adds graph breaks.
`python perf/fuzz.py --examples 10000` runs the same oracle on many more programs.
"""
from __future__ import annotations

import collections
import os
import re
from pathlib import Path

import fuzzcheck
import fuzzgen
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmend_lint import engine, runner

EXAMPLES = int(os.environ.get("GRAPHMEND_FUZZ_EXAMPLES", "200"))
REGRESSIONS = sorted((Path(__file__).parent / "fuzz_regressions").glob("*.py"))


@st.composite
def programs(draw):
    return fuzzgen.generate(fuzzgen.DrawChooser(draw))


def _report(program, out) -> str:
    lines = [f"{kind}: {detail}" for kind, detail in out.failures]
    return "\n".join(lines + ["--- program ---", program.source, "--- harness ---", program.harness,
                              "--- safe fix ---", out.fixed_source])


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(programs())
def test_generated_programs(program):
    out = fuzzcheck.check_program(program.source, program.harness)
    assert not out.failures, _report(program, out)


def test_generator_exercises_every_pattern():
    """The generated programs reach every rule family, with SAFE and UNSAFE fixes, and run every branch."""
    codes, safety, kinds = collections.Counter(), collections.Counter(), collections.Counter()
    coverage = []
    for seed in range(40):
        program = fuzzgen.generate(fuzzgen.RandomChooser(seed))
        kinds[program.kind] += 1
        for f in engine.check(program.source.encode(), fuzzcheck.UNSAFE).findings:
            codes[f.code] += 1
            safety[(f.code[:3], f.safety.value)] += 1
        if seed < 10:
            coverage.append(fuzzcheck.check_program(program.source, program.harness, coverage=True).covered)
    assert {"GM101", "GM102", "GM201", "GM202", "GM203", "GM301", "GM302"} <= set(codes), codes
    for family in ("GM1", "GM2", "GM3"):
        assert safety[(family, "safe")] > 0, (family, safety)
    assert safety[("GM1", "unsafe")] > 0 and safety[("GM1", "none")] > 0, safety
    assert set(kinds) == {"module", "decorated", "compile-call", "compiled-instance"}
    assert sum(coverage) / len(coverage) > 0.85, coverage


def test_fixed_programs_compile_with_no_more_breaks():
    """explain() compiles, which is slow: only a handful of programs with SAFE fixes."""
    measured = []
    for seed in range(200):
        program = fuzzgen.generate(fuzzgen.RandomChooser(seed))
        if not {"tensor-test", "log"} <= program.features:
            continue
        out = fuzzcheck.check_program(program.source, program.harness, breaks=True)
        assert not out.failures, _report(program, out)
        if out.breaks is not None:
            measured.append(out.breaks)
        if len(measured) == 3:
            break
    assert len(measured) == 3
    assert any(after < before for before, after in measured), measured


def test_fixed_programs_compiled_match_the_eager_original():
    """SAFE GM1xx fixes are compile-only forms or LayerDrop guards: what they must get right is the
    compiled run. A few programs (compiling is slow), LayerDrop ones among them: the fixed program
    under aot_eager gives the original's eager outputs, gradients and module state."""
    checked, layerdrop = 0, 0
    for seed in range(400):
        program = fuzzgen.generate(fuzzgen.RandomChooser(seed))
        wanted = "layerdrop" in program.features if layerdrop < 2 else "tensor-test" in program.features
        if not wanted:
            continue
        safe = [f for f in engine.check(program.source.encode(), fuzzcheck.UNSAFE).findings
                if f.code.startswith("GM1") and f.safety is engine.Safety.SAFE]
        if not safe:
            continue
        out = fuzzcheck.check_program(program.source, program.harness, compiled=True)
        assert not out.failures, _report(program, out)
        checked += 1
        layerdrop += "layerdrop" in program.features
        if checked == 5:
            break
    assert checked == 5 and layerdrop >= 2


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: p.name)
def test_fuzz_regression(path):
    """Programs the fuzzer broke. One whose rule is not fixed yet says so in KNOWN_FAILURE: it must
    still fail (strict xfail), so the marker goes as soon as the rule is fixed."""
    source = path.read_text(encoding="utf-8")
    known = re.search(r'^KNOWN_FAILURE = "(.*)"$', source, re.M)
    breaks = re.search(r"^CHECK_BREAKS = True$", source, re.M) is not None
    compiled = re.search(r"^CHECK_COMPILED = True$", source, re.M) is not None  # the SAFE fix under aot_eager too
    out = fuzzcheck.check_program(source, breaks=breaks, compiled=compiled)
    if known:
        assert out.failures, f"{path.name} passes now: remove KNOWN_FAILURE"
        pytest.xfail(known.group(1))
    assert not out.failures, out.failures
    if breaks:  # the SAFE fix was compiled and counted (more breaks would be a failure above)
        assert out.breaks is not None, out
        assert not fuzzcheck.more_breaks(out.breaks, out.fallbacks), (out.breaks, out.fallbacks)
    if re.search(r"^UNSAFE_FIX_CHANGES_COMPILED = True$", source, re.M):
        # eager runs the original (compile-only fix); the hazard the rule declines shows under compile
        assert out.unsafe_source and out.unsafe_source != source, "no UNSAFE fix offered any more"
        _, _, inputs = fuzzcheck._build(source, "", "orig")
        assert fuzzcheck._compiled_problem(source, out.unsafe_source, "", inputs), \
            "the UNSAFE fix compiled no longer differs from the eager original: the regression is moot"
    if re.search(r"^UNSAFE_FIX_CHANGES_EAGER = True$", source, re.M):
        # the program does tell the fix apart: the hazard the rule declines is real
        assert out.unsafe_differs, "the UNSAFE fix no longer changes eager behaviour: the regression is moot"


def test_more_breaks_compares_eager_fallbacks_first():
    """(breaks before, after), (eager fallbacks before, after): the cases the fuzz runs met."""
    inf = float("inf")
    assert fuzzcheck.more_breaks((2, 3), (0, 0))
    assert fuzzcheck.more_breaks((0, inf), (0, 0))  # a fix that makes Dynamo skip the whole frame
    assert fuzzcheck.more_breaks((3, 1), (0, 1))  # fewer graphs, but code now runs in eager
    assert not fuzzcheck.more_breaks((2, 2), (0, 0))
    assert not fuzzcheck.more_breaks((0, 4), (1, 0))  # seed 340: print in `try` guarded, the rest now traced
    assert not fuzzcheck.more_breaks((0, inf), (1, 1))  # seed 371: in eager from the same loop break on


def test_oracle_catches_a_wrong_fix(monkeypatch):
    source = ("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
              "    def forward(self, x, mask=None):\n        print('x', x.shape)\n        return x * 2\n")
    harness = fuzzgen._make("fn = Model()", [])
    assert fuzzcheck.check_program(source, harness).failures == []
    real = engine.check

    def wrong(source, s, fix=False):
        result = real(source, s, fix=fix)
        if fix and result.fixed:
            result.source = result.source.replace(b"print('x'", b"print('changed', 'x'")
        return result

    monkeypatch.setattr(fuzzcheck.engine, "check", wrong)
    kinds = {kind for kind, _ in fuzzcheck.check_program(source, harness).failures}
    assert "mismatch" in kinds

    def broken(source, s, fix=False):
        result = real(source, s, fix=fix)
        if fix and result.fixed:
            result.source += b"\nreturn return\n"
        return result

    monkeypatch.setattr(fuzzcheck.engine, "check", broken)
    kinds = {kind for kind, _ in fuzzcheck.check_program(source, harness).failures}
    assert "unparsable" in kinds


LAYOUTS = {
    "crlf": lambda b: b.replace(b"\n", b"\r\n"),
    "bom": lambda b: b"\xef\xbb\xbf" + b,
    "tabs": lambda b: re.sub(rb"(?m)^((?:    )+)", lambda m: b"\t" * (len(m.group(1)) // 4), b),
    "latin-1": lambda b: b"# -*- coding: latin-1 -*-\n" + b.replace(b"'step'", "'\xe9tape'".encode("latin-1")),
}


@settings(max_examples=int(os.environ.get("GRAPHMEND_FUZZ_LAYOUT_EXAMPLES", "25")), deadline=None, database=None,
          derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(), st.sampled_from(sorted(LAYOUTS)))
def test_fix_keeps_the_file_layout(tmp_path_factory, program, layout):
    """Fixing a program written with CRLF, a BOM, tabs or latin-1 gives the fix of the plain program,
    written the same way (through the CLI's read/fix/write path)."""
    plain = program.source.encode()
    if layout == "latin-1":
        plain = plain.replace(b"'step'", "'\xe9tape'".encode())
    expected = engine.check(plain, fuzzcheck.SAFE, fix=True).source
    path = tmp_path_factory.mktemp("layout") / "prog.py"
    path.write_bytes(LAYOUTS[layout](program.source.encode()))
    out = runner.check_file(path, fuzzcheck.SAFE, fix=True)
    assert out.error is None, out.error
    if layout == "latin-1":
        assert path.read_bytes() == LAYOUTS[layout](expected.replace("'\xe9tape'".encode(), b"'step'"))
    else:
        assert path.read_bytes() == LAYOUTS[layout](expected)


@pytest.mark.slow
def test_compiled_oracle_allows_torch_compiles_own_exceptions():
    """Seed 3688: an `assert` on a tensor inside `try: ... except AssertionError` (left as it is: no
    fix in a `try`) raises RuntimeError under torch.compile in the original too; the compiled oracle
    blames a fix only for what the compiled original does not do."""
    program = fuzzgen.generate(fuzzgen.RandomChooser(3688))
    out = fuzzcheck.check_program(program.source, program.harness, compiled=True)
    assert out.safe_fixes and not out.failures, _report(program, out)


@pytest.mark.slow
def test_compiled_oracle_replays_the_calls_before_the_input():
    """Seed 10792: the compiled original, called on inputs 0..1 as the fixed program was, also gives
    the Linear's parameters zero gradients where eager gives None (its output is unused after a break:
    AOTAutograd fills that graph output's gradient with zeros); run on input 1 alone it did not, and
    the oracle blamed the fix."""
    program = fuzzgen.generate(fuzzgen.RandomChooser(10792))
    out = fuzzcheck.check_program(program.source, program.harness, compiled=True)
    assert out.safe_fixes and not out.failures, _report(program, out)


def test_torch_compile_leaks_nan_through_an_unused_graph_output_without_any_fix():
    """Seed 10962 (summary_9400_12399.md): a value with a NaN derivative whose graph output gets no
    gradient (replaced after a break) still runs its backward under aot_eager, with a zero gradient,
    and 0 * NaN reaches the input. No fix here; a fix that removes a break before such a value puts it
    in the same graph as values that do get gradients, which is how that seed showed it. If this
    fails, torch no longer does it."""
    import torch

    def step(x, c):
        h = x * 1.0
        z = x * 2
        h = h + torch.sqrt(h)  # derivative NaN where x < 0
        if not torch.all(c >= 0):  # a graph break
            h = torch.ones_like(h) * 3  # no gradient flows to the sqrt
        return h + z.mean()

    x = torch.tensor([[-1.0, 2.0], [3.0, -4.0]], requires_grad=True)
    eager = torch.autograd.grad(step(x, -torch.ones(2, 2)).sum(), x)[0]
    torch._dynamo.reset()
    try:
        compiled = torch.autograd.grad(torch.compile(step, backend="aot_eager")(x, -torch.ones(2, 2)).sum(), x)[0]
    finally:
        torch._dynamo.reset()
    assert torch.equal(eager, torch.full((2, 2), 2.0))
    assert torch.equal(compiled.isnan(), x.detach() < 0)


def test_the_no_gradient_excuse_is_narrow():
    """fuzzcheck._no_gradient_either_way: only "no input gets a gradient" on both sides counts."""
    import torch

    g = torch.ones(2)
    assert fuzzcheck._no_gradient_either_way([None], [])
    assert fuzzcheck._no_gradient_either_way([None, None], [])
    assert not fuzzcheck._no_gradient_either_way([g], [])
    assert not fuzzcheck._no_gradient_either_way([None, g], [])
    assert not fuzzcheck._no_gradient_either_way([], [])
    assert not fuzzcheck._no_gradient_either_way([None], [None])  # compared as usual


def test_torch_compile_drops_the_flag_of_a_no_grad_view_after_a_break_without_any_fix():
    """Why the excuse above exists (GM101_7.py): with no fix and nothing breaking after the `no_grad`
    block, the compiled output already differs from eager in `requires_grad` alone. If this fails,
    torch keeps eager's flag now: the excuse can go."""
    import torch

    def step(x, c):
        h = x * 1.0
        with torch.no_grad():
            if torch.any(c > 0):
                h = torch.sqrt(h)
            else:
                h = h[0]
        return h * 1.5 - 1

    x = torch.rand(3, 4, requires_grad=True)
    c = -torch.ones(3, 4)
    eager = step(x, c)
    torch._dynamo.reset()
    try:
        compiled = torch.compile(step, backend="aot_eager")(x, c)
    finally:
        torch._dynamo.reset()
    assert torch.equal(eager.detach(), compiled.detach())
    assert torch.autograd.grad(eager.sum(), x, allow_unused=True) == (None,)
    assert eager.requires_grad and not compiled.requires_grad


def test_torch_compile_gives_a_no_grad_view_a_gradient_after_two_breaks_without_any_fix():
    """Why GM202_1.py is torch.compile's: with no fix, a `print` and then an `.item()` breaking inside a
    `no_grad` block after a view `h = h[0]` make the compiled `h * 2` pass a gradient to `x`, where eager
    gives none (torch 2.13, aot_eager). If this fails, torch keeps eager's autograd here now: retry
    GM202_1.py and drop its KNOWN_FAILURE when it passes."""
    import torch

    def step(x, c0):
        h = x * 1.0
        with torch.no_grad():
            print("a break first")
            h = h[0]
            if c0.sum().item() > 0:
                h = h.clamp(-1, 1)
        return h * 2

    grads = []
    for compiled in (False, True):
        x = torch.rand(3, 4, requires_grad=True)
        torch._dynamo.reset()
        try:
            fn = torch.compile(step, backend="aot_eager") if compiled else step
            out = fn(x, -torch.ones(2))
        finally:
            torch._dynamo.reset()
        grads.append(torch.autograd.grad(out.sum(), x, allow_unused=True)[0])
    assert grads[0] is None
    assert grads[1] is not None and torch.equal(grads[1][0], torch.full((4,), 2.0))
