"""The oracle for a generated program: lint, fix, compare eager behaviour, count graph breaks.

`check_program(source)` returns an Outcome; `outcome.failures` lists what went wrong (empty when
all is well): crash, unparsable fix, not idempotent, precision (a finding on a static test or in
uncompiled code), mismatch (a SAFE fix changed outputs, gradients, exceptions, prints, log
records, warnings or module state), more breaks after the fix.
"""
from __future__ import annotations

import re

import contextlib
import io
import logging
import math
import sys
import traceback
import types
import warnings
from dataclasses import dataclass, field, replace

import torch
from harness import Observation, observe

from graphmend_lint import engine
from graphmend_lint.rules import ALL_RULES
from graphmend_lint.settings import Settings
from graphmend_lint.verify import recorder

SAFE, UNSAFE = Settings(), Settings(unsafe_fixes=True)
# Fix runs need only the rules that can fix (the others cannot change the output): faster.
FIXERS = tuple(r.CODE for r in ALL_RULES if r.FIX != "none")


@dataclass
class Outcome:
    failures: list = field(default_factory=list)  # (kind, detail)
    findings: dict = field(default_factory=dict)  # code -> count
    safe_fixes: int = 0
    unsafe_fixes: int = 0
    unsafe_differs: bool = False  # an UNSAFE fix changed eager behaviour (allowed, counted)
    unsafe_source: str = ""
    covered: float = 1.0  # share of the compiled code's lines run by the inputs
    breaks: tuple | None = None  # (before, after) when measured
    # (before, after): breaks after which Dynamo runs a frame, or the rest of it, in eager
    fallbacks: tuple | None = None
    fixed_source: str = ""

    def fail(self, kind: str, detail: str) -> None:
        self.failures.append((kind, detail))


def _marked_lines(source: str) -> tuple[set, set]:
    """Lines with static tests (no GM1/GM3 finding) and lines that must get no finding at all."""
    static, never, begin, end = set(), set(), 0, 0
    for i, line in enumerate(source.splitlines(), 1):
        if "# fuzz:static" in line:
            static.add(i)
        if "# fuzz:never" in line:
            never.add(i)
        if "# fuzz:eager-begin" in line:
            begin = i
        if "# fuzz:eager-end" in line:
            end = i
    return static, never | set(range(begin, end + 1))


def _load(source: str, tag: str) -> types.ModuleType:
    module = types.ModuleType("fuzzprog")
    module.__file__ = f"<fuzz-{tag}>"
    exec(compile(source, f"<fuzz-{tag}>", "exec"), module.__dict__)
    return module


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        return a.shape == b.shape and a.dtype == b.dtype and bool(
            torch.equal(torch.isnan(a), torch.isnan(b)) and torch.equal(a[~torch.isnan(a)], b[~torch.isnan(b)]))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _close(a, b) -> bool:
    """_same, up to float rounding: compiled graphs (aot_eager decompositions, fused backward) round
    differently from eager, with or without a fix."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(
            torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-6, equal_nan=True)) if a.is_floating_point() \
            else _same(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return _same(a, b)


def _observe(fn, args):
    """harness.observe, with an error of the backward pass (e.g. an in-place update) as behaviour."""
    try:
        return observe(fn, args)
    except Exception as e:
        return Observation(error=("backward: " + type(e).__name__, str(e)))


def _compare(orig, fixed, args) -> str | None:
    # the same random stream for both (train-mode dropout): a fix keeps every draw
    torch.manual_seed(0)
    o = _observe(orig, args)
    torch.manual_seed(0)
    f = _observe(fixed, args)
    checks = [
        ("exception", o.error, f.error), ("output", o.output, f.output), ("stdout", o.stdout, f.stdout),
        ("log records", o.logs, f.logs), ("warnings", o.warns, f.warns), ("gradients", o.grads, f.grads),
        ("module state", getattr(orig, "calls", None), getattr(fixed, "calls", None)),
    ]
    for what, a, b in checks:
        if not _same(a, b):
            return f"{what} differ: {_short(a)} vs {_short(b)}"
    return None


def _short(value) -> str:
    return repr(value).replace("\n", " ")[:200]


def _coverage(module: types.ModuleType, fn, inputs: list) -> float:
    """Share of the lines of the compiled code (forward/step/helpers) that the inputs run."""
    target = getattr(fn, "forward", fn)
    codes = [getattr(target, "__code__", None)] + [getattr(module, n).__code__ for n in ("helper_body",) if hasattr(module, n)]
    wanted = set()
    stack = [c for c in codes if c is not None]
    while stack:
        code = stack.pop()
        wanted |= {line for _, _, line in code.co_lines() if line is not None and line != code.co_firstlineno}
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    seen: set = set()
    filename = module.__file__

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != filename:
            return None
        seen.add(frame.f_lineno)
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        for args in inputs:
            _observe(fn, args)
    finally:
        sys.settrace(old)
    return len(wanted & seen) / len(wanted) if wanted else 1.0


def _build(source: str, harness: str, tag: str):
    module = _load(source + harness, tag)
    torch.manual_seed(0)
    fn, inputs = module.make()
    return module, fn, inputs


def _compiled_problem(source: str, fixed: str, harness: str, inputs: list) -> str | None:
    """The SAFE-fixed program compiled (aot_eager) against the original in eager: outputs, gradients
    and module state on every input the original accepts, and the random numbers drawn after the call (exceptions, logs and warnings differ by
    design under compile: GM3xx asserts raise RuntimeError, GM2xx guards skip logging)."""
    _, orig_fn, _ = _build(source, harness, "orig")
    _, fixed_fn, _ = _build(fixed, harness, "compiled")
    torch._dynamo.reset()
    compiled = torch.compile(fixed_fn, backend="aot_eager")
    try:
        for i, args in enumerate(inputs):
            before = getattr(orig_fn, "calls", None), getattr(fixed_fn, "calls", None)
            torch.manual_seed(1000 + i)
            o = _observe(orig_fn, args)
            o_after = torch.rand(4)  # the random stream after the call: a fix keeps every draw
            if o.error is not None:
                continue
            f = _observe_compiled(compiled, args, i)
            f_after = torch.rand(4)
            if not torch.equal(o_after, f_after):
                return f"input {i}: compiled random stream differs (a draw was dropped or added)"
            state = [(getattr(fn, "calls", None), b) for fn, b in zip((orig_fn, fixed_fn), before)]
            deltas = [None if now is None else now - b for now, b in state]
            for what, a, b in (("exception", o.error, f.error), ("output", o.output, f.output),
                               ("gradients", o.grads, f.grads), ("module state", *deltas)):
                if what == "gradients" and _no_gradient_either_way(a, b):
                    continue
                if not _close(a, b) and not _torch_differs(source, harness, i, args, what, b):
                    return f"input {i}: compiled {what} differ: {_short(a)} vs {_short(b)}"
    finally:
        torch._dynamo.reset()
    return None


def _no_gradient_either_way(eager: list, compiled: list) -> bool:
    """The eager output requires grad yet no input gets a gradient ([None, ...]), and the compiled
    output does not require grad ([]): the same gradients. A view taken under `no_grad` of a tensor that
    requires grad keeps `requires_grad=True` in eager, with no `grad_fn`; after a graph break inside the
    `no_grad` block AOTAutograd does not keep that flag for what is computed from it in the same graph
    (torch.compile's, with or without a fix: tests/fuzz_regressions/GM101_7.py, test_fuzz.py)."""
    return compiled == [] and bool(eager) and all(g is None for g in eager)


def _torch_differs(source: str, harness: str, i: int, args, what: str, fixed_value) -> bool:
    """The ORIGINAL program compiled gives what the fixed one gave: the difference from eager is
    torch.compile's own, not the fix's (seed 515: a view made under no_grad keeps its autograd
    history under aot_eager, not in eager; seed 3688: an `assert` on a tensor inside `try: ... except
    AssertionError`, which Dynamo turns into a RuntimeError the handler does not catch)."""
    if what not in ("output", "gradients", "exception"):
        return False
    _, orig_fn, inputs = _build(source, harness, "orig-compiled")
    torch._dynamo.reset()
    compiled = torch.compile(orig_fn, backend="aot_eager")
    try:  # the same calls before input `i` as the fixed program had: the same recompiles (seed 10792)
        for j in range(i):
            _observe_compiled(compiled, inputs[j], j)
        c = _observe_compiled(compiled, args, i)
    finally:
        torch._dynamo.reset()
    return _close({"output": c.output, "gradients": c.grads, "exception": c.error}[what], fixed_value)


def _observe_compiled(compiled, args, i: int):
    """A compiled run of input `i`, seeded as the eager run of that input (warnings of torch.compile hidden)."""
    torch.manual_seed(1000 + i)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _observe(compiled, args)


def check_program(source: str, harness: str = "", *, eager: bool = True, breaks: bool = False,
                  coverage: bool = False, idempotence: bool = True, compiled: bool = False) -> Outcome:
    """`harness` (the program's `make()`) is appended to the original and the fixed source to run them.
    `compiled`: also run the SAFE-fixed program under torch.compile (aot_eager) against the original."""
    out = Outcome()
    static, eager_only = _marked_lines(source)
    data = source.encode()
    try:
        compile(source + harness, "<program>", "exec", dont_inherit=True)
    except SyntaxError as e:
        out.fail("invalid-program", f"the generator wrote invalid code: {e.msg} at line {e.lineno}")
        return out
    try:
        findings = engine.check(data, UNSAFE).findings
    except Exception:
        out.fail("crash", "lint: " + traceback.format_exc(limit=-3))
        return out
    for f in findings:
        out.findings[f.code] = out.findings.get(f.code, 0) + 1
        if f.line in eager_only or (f.line in static and f.code.startswith(("GM1", "GM3"))):
            out.fail("precision", f"{f.code} at line {f.line}: {f.message}")
    fixed, remaining = {}, findings
    fixable = {f.safety for f in findings if f.replacement is not None}
    fixers = FIXERS + tuple(sorted({f.code for f in findings if f.replacement is not None}))
    for name, s in (("safe", replace(SAFE, select=fixers)), ("unsafe", replace(UNSAFE, select=fixers))):
        # Skipped runs are exactly "no fix": the engine's loop stops when nothing applies. The
        # unsafe run can only differ from the safe one through an UNSAFE fix offered at some pass.
        if name == "safe" and engine.Safety.SAFE not in fixable:
            fixed["safe"] = source
            continue
        if name == "unsafe" and engine.Safety.UNSAFE not in fixable and not any(
                f.safety is engine.Safety.UNSAFE and f.replacement is not None for f in remaining):
            if "safe" in fixed:
                fixed["unsafe"] = fixed["safe"]
            continue
        try:
            result = engine.check(data, s, fix=True)
        except SyntaxError as e:
            out.fail("unparsable", f"{name} fix: {e.msg} at line {e.lineno}")
            continue
        except Exception:
            out.fail("crash", f"{name} fix: " + traceback.format_exc(limit=-3))
            continue
        try:
            compile(result.source, "<fixed>", "exec", dont_inherit=True)
        except SyntaxError as e:
            out.fail("unparsable", f"{name} fix: {e.msg} at line {e.lineno}")
            continue
        if re.search(rb"graphmend(?!_(print|log|warn)\b|-lint: torch.compile runs it after)", result.source):
            out.fail("imports-linter", f"{name} fix mentions graphmend (beyond the deferred helpers it defines)")
        if idempotence and result.fixed:
            try:
                again = engine.check(result.source, s, fix=True).source
            except Exception:
                out.fail("crash", f"{name} refix: " + traceback.format_exc(limit=-3))
                continue
            if again != result.source:
                out.fail("not-idempotent", f"{name} fix changes again on a second run")
        setattr(out, f"{name}_fixes", result.fixed)
        fixed[name] = result.source.decode()
        if name == "safe":
            remaining = result.findings
    out.fixed_source = fixed.get("safe", "")
    out.unsafe_source = fixed.get("unsafe", "")
    if not eager:
        return out
    _, orig_fn, inputs = _build(source, harness, "orig")
    if coverage:
        module, fn, _ = _build(source, harness, "orig")
        out.covered = _coverage(module, fn, inputs)
    for name in ("safe", "unsafe"):
        if fixed.get(name, source) == source or (name == "unsafe" and fixed.get("unsafe") == fixed.get("safe")):
            continue
        _, orig_fn, _ = _build(source, harness, "orig")
        _, fixed_fn, _ = _build(fixed[name], harness, name)
        for i, args in enumerate(inputs):
            problem = _compare(orig_fn, fixed_fn, args)
            if problem and name == "safe":
                out.fail("mismatch", f"input {i}: {problem}")
                break
            if problem:
                out.unsafe_differs = True
                break
    if compiled and fixed.get("safe", source) != source:
        problem = _compiled_problem(source, fixed["safe"], harness, inputs)
        if problem:
            out.fail("compiled-mismatch", problem)
    if breaks and fixed.get("safe", source) != source:
        measured = _breaks(source, fixed["safe"], harness, inputs)
        if measured:
            out.breaks, out.fallbacks = measured
            if more_breaks(out.breaks, out.fallbacks):
                out.fail("more-breaks", f"graph breaks {out.breaks[0]} -> {out.breaks[1]}, "
                                        f"eager fallbacks {out.fallbacks[0]} -> {out.fallbacks[1]}")
    return out


def _explain(fn, args) -> tuple[int, int, int]:
    """(graphs, breaks, eager fallbacks) Dynamo reports for one call; a frame Dynamo skips
    entirely has 0 graphs. A fallback is a break after which a frame (or its rest) runs in eager:
    in a loop, in a `try` block, ... (Dynamo's graph_breaks log, which explain() does not show)."""
    torch._dynamo.reset()
    # the product's recorder counts the fallbacks in Dynamo's log, kept off the console
    with recorder.Recorder(console_level=logging.CRITICAL) as rec, \
            contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explanation = torch._dynamo.explain(fn)(*args)
    torch._dynamo.reset()
    # explain counts graph_count - 1 breaks, and a resume frame that only hands a value on
    # compiles an empty graph (no op: tests/fuzz_regressions/GM201_1.py): count graphs with ops.
    graphs = sum(any(n.op.startswith("call_") for n in g.graph.nodes) for g in explanation.graphs)
    return explanation.graph_count, max(graphs - 1, 0), rec.fallbacks


def more_breaks(breaks: tuple, fallbacks: tuple) -> bool:
    """Is the fixed program compiled worse? Fewer eager fallbacks is better whatever the graph count:
    a fix that removes a break Dynamo could not resume from (a `print` in a `try` block) lets it
    trace code that ran in eager before, and that code may hold breaks of its own
    (tests/fuzz_regressions/GM201_2.py). With as many fallbacks, the graph count decides, except
    that an original already in eager from a fallback on is not beaten by a fixed one skipped whole."""
    (b0, b1), (e0, e1) = breaks, fallbacks
    if e0 != e1:
        return e1 > e0
    return b1 > b0 and not (e0 and b1 == math.inf)


def _breaks(source: str, fixed: str, harness: str, inputs: list) -> tuple | None:
    """Breaks before/after on the first input the original accepts (explain is slow: one input).

    A frame Dynamo skips entirely (a break inside a loop) runs all in eager: it counts as worse
    than any number of breaks, so a fix that lets it compile with some breaks left is no regression.
    Returns ((before, after), (eager fallbacks before, after)).
    """
    _, orig_fn, _ = _build(source, harness, "orig")
    for args in inputs:
        if _observe(orig_fn, args).error is None:
            _, orig_fn, _ = _build(source, harness, "orig")
            _, fixed_fn, _ = _build(fixed, harness, "safe")
            (g0, b0, u0), (g1, b1, u1) = _explain(orig_fn, args), _explain(fixed_fn, args)
            return ((b0 if g0 else math.inf), (b1 if g1 else math.inf)), (u0, u1)
    return None
