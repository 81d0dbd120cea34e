"""GM3xx fixes under torch.compile (Inductor, CPU): one graph on good input, the check still fires on bad input.

For every GM3 fixture with a `make()` and a fix: each input that passes in eager mode must compile to a
single graph (0 breaks, counted by a backend that wraps Inductor) and give the eager result; each input
that raises in eager mode must raise under compile too, with the message's constant parts.
"""
from __future__ import annotations

import re

import warnings

import pytest
import torch
from fixture_io import fixture_cases
from harness import load
from torch._dynamo.utils import counters
from torch._inductor.compile_fx import compile_fx

CASES = []
for case in fixture_cases():
    if not case.parent.name.startswith("GM3") or "def make(" not in case.read_text(encoding="utf-8"):
        continue
    for suffix in (".fixed.py", ".unsafe.fixed.py"):
        fixed = case.with_name(case.stem + suffix)
        if fixed.exists():
            CASES.append(pytest.param(case, fixed, id=f"{case.parent.name}/{fixed.name}"))


def is_subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def _eager(fn, args):
    try:
        return fn(*args), None
    except Exception as e:  # the behaviour under test
        return None, e


def _breaks() -> int:
    """Graph breaks Dynamo logged, including one before the first op (which makes no graph)."""
    return sum(counters["graph_break"].values())


def _compiled(fn, args):
    graphs = []

    def counting_inductor(gm, example_inputs):
        graphs.append(gm)
        return compile_fx(gm, example_inputs)

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(fn, backend=counting_inductor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return compiled(*args), None, len(graphs)
        except Exception as e:
            return None, e, len(graphs)


def _close(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("case,fixed", CASES)
def test_fixed_check_compiles_and_still_fires(case, fixed):
    module = load(fixed, f"gm3_compiled_{fixed.parent.name}_{fixed.stem.replace('.', '_')}")
    torch.manual_seed(0)
    fn, inputs = module.make()
    good = bad = 0
    for i, args in enumerate(inputs):
        expected, error = _eager(fn, args)
        out, compiled_error, graphs = _compiled(fn, args)
        if error is None:
            good += 1
            assert compiled_error is None, f"input {i}: compiled code raised {compiled_error!r} on good input"
            assert graphs == 1 and _breaks() == 0, f"input {i}: {graphs} graphs, {_breaks()} breaks on good input"
            assert _close(expected, out), f"input {i}: compiled result differs from eager"
        else:
            bad += 1
            assert compiled_error is not None, f"input {i}: the check was dropped under compile"
            if (type(compiled_error), str(compiled_error)) != (type(error), str(error)):
                # the graph assertion: RuntimeError carrying the message's constant parts, and a
                # placeholder naming each value it cannot show
                assert isinstance(compiled_error, RuntimeError), repr(compiled_error)
                message = re.sub(r"<[^<>]*not available under torch\.compile>", "", str(compiled_error))
                if str(error):  # an assert without a message: any RuntimeError ("" under Inductor)
                    assert message and is_subsequence(message, str(error)), f"input {i}: {message!r} vs {error!r}"
    assert good and bad, "make() must give good and bad inputs"
    torch._dynamo.reset()


VALID = [pytest.param(c, id=f"{c.parent.name}/{c.name}") for c in fixture_cases()
         if c.parent.name.startswith("GM3") and c.name.startswith("valid_") and "def make(" in c.read_text(encoding="utf-8")]


@pytest.mark.parametrize("case", VALID)
def test_unflagged_checks_already_compile_to_one_graph(case):
    """What GM3 leaves alone (constant-message asserts, trace-time checks) really has no break."""
    module = load(case, f"gm3_valid_{case.parent.name}_{case.stem}")
    torch.manual_seed(0)
    fn, inputs = module.make()
    for i, args in enumerate(inputs):
        expected, error = _eager(fn, args)
        out, compiled_error, graphs = _compiled(fn, args)
        assert error is None and compiled_error is None, (error, compiled_error)
        assert graphs == 1 and _breaks() == 0, f"input {i}: {graphs} graphs, {_breaks()} breaks"
        assert _close(expected, out)
    torch._dynamo.reset()


def test_compiled_message_formats_number_attributes():
    """Issue 24: `self.vocab_size` (a number) is formatted while tracing, a tensor buffer gets the
    placeholder; the compiled run raises with them and stays one graph on good input."""
    from pathlib import Path
    case = Path(__file__).parent / "fixtures" / "GM301" / "invalid_message_attribute.fixed.py"
    module = load(case, "gm301_message_attribute")
    model, inputs = module.make()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="aot_eager")
    compiled(*inputs[0])
    messages = []
    for args in inputs[1:]:
        with pytest.raises(RuntimeError) as err:
            compiled(*args)
        messages.append(str(err.value))
    torch._dynamo.reset()
    assert "ids must be < vocab_size: 10" in messages[0]
    assert "scale above the limit <self.limit: not available under torch.compile>" in messages[1]
