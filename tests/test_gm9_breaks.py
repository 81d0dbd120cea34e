"""GM9xx findings against Dynamo itself: every finding of a GM9 fixture sits on a line where
torch breaks the graph, every break of an invalid fixture is predicted, valid fixtures do not break,
and the configs named in the messages do (or do not) remove the break."""
from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
import torch
from fixture_io import FIXTURES
from harness import load

from graphmend_lint import engine
from graphmend_lint.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from perf import coverage  # noqa: E402

pytestmark = pytest.mark.slow
CASES = sorted(p for p in FIXTURES.glob("GM9*/*.py") if p.name.startswith(("valid_", "invalid_"))
               and p.suffixes == [".py"] and "def make(" in p.read_text(encoding="utf-8"))
SCALARS = {"capture_scalar_outputs": True}
SHAPES = {"capture_dynamic_output_shape_ops": True}
# rule -> (config, does it remove the break?) as the rule pages say
CONFIG = {
    "GM901": (SCALARS, True), "GM902": (SCALARS, True), "GM903": (SCALARS, True), "GM904": (SCALARS, True),
    "GM905": (SHAPES, True), "GM906": (SCALARS, True),
    "GM907": ({**SCALARS, **SHAPES}, False), "GM908": ({**SCALARS, **SHAPES}, False),
    "GM909": ({**SCALARS, **SHAPES}, False), "GM910": ({**SCALARS, **SHAPES}, False),
    "GM911": ({**SCALARS, **SHAPES}, False), "GM913": ({**SCALARS, **SHAPES}, False), "GM914": ({**SCALARS, **SHAPES}, False),
    "GM916": ({**SCALARS, **SHAPES}, False), "GM917": ({**SCALARS, **SHAPES}, False),
    "GM919": ({"allow_rnn": True}, True), "GM920": ({**SCALARS, **SHAPES}, False),
    "GM921": ({**SCALARS, **SHAPES}, False), "GM922": ({"trace_autograd_ops": True}, True),
    "GM923": ({**SCALARS, **SHAPES}, False),
}


def _build(case: Path):
    module = load(case, f"gm9_{case.parent.name}_{case.stem}")
    torch.manual_seed(0)
    return module.make()


def _breaks_here(case: Path, config: dict | None = None) -> set[int]:
    fn, inputs = _build(case)
    with torch._dynamo.config.patch(**(config or {})):
        breaks = coverage.compiled_breaks(fn, inputs)
    torch._dynamo.reset()
    return {b.line_in(str(case)) for b in breaks} - {None}


def _graphs(case: Path) -> int:
    fn, inputs = _build(case)
    count = [0]

    def backend(gm, example_inputs):
        count[0] += 1
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend)
    for args in inputs:
        out = compiled(*args)
        if hasattr(out, "__next__"):
            list(out)
    torch._dynamo.reset()
    return count[0]


# Known gaps, measured by this test (torch 2.13 CPU); strict: the test fails once they are mended.
KNOWN_GAPS = {
    "GM915/invalid_lcm_helper.py": "line 31 breaks (a NumPy value used as a size, `h.new_zeros(padding, ...)`, "
                                   "after the break at 29) and GM915 does not report sizes",
}


def _case_param(p: Path):
    cid = f"{p.parent.name}/{p.name}"
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[cid])] if cid in KNOWN_GAPS else []
    return pytest.param(p, id=cid, marks=marks)


@pytest.mark.parametrize("case", [_case_param(p) for p in CASES])
def test_findings_are_the_measured_breaks(case):
    findings = engine.check(case.read_bytes(), Settings()).findings
    lines = {f.line for f in findings}
    if case.parent.name == "GM912":  # a generator frame is skipped whole: no break message, 0 graphs
        assert _breaks_here(case) == set()
        assert (_graphs(case) == 0) == case.name.startswith("invalid_")
        return
    breaks = _breaks_here(case)
    helpers = [f.fix_range[::2] for f in findings if f.code == "GM918"]  # the helper's lines: its breaks are inside
    if helpers:
        assert all(any(a <= b <= z for b in breaks) for a, z in helpers)
        lines = {f.line for f in findings if f.code != "GM918"} | {b for b in breaks if any(a <= b <= z for a, z in helpers)}
    assert breaks == lines


@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith("invalid_") and c.parent.name in CONFIG],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_config_named_in_the_page(case):
    config, removes = CONFIG[case.parent.name]
    if "CONFIG_KEEPS_BREAKS = True" in case.read_text(encoding="utf-8"):  # the finding's message says so
        removes = False
    assert bool(_breaks_here(case, config)) is not removes


def test_requires_grad_method_breaks_with_gradients_on():
    """GM916's `.requires_grad_(True)` breaks only with gradients on (measured on torch 2.13), which the
    fixtures' break test (under no_grad) does not see: the same check, in grad mode."""
    case = FIXTURES / "GM916" / "invalid_requires_grad_method.py"
    module = load(case, "gm9_requires_grad_method")
    fn, inputs = module.make_training()
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="eager")
    breaks = coverage.capture_breaks(lambda: [compiled(*args) for args in inputs])
    torch._dynamo.reset()
    findings = engine.check(case.read_bytes(), Settings()).findings
    assert {b.line_in(str(case)) for b in breaks} - {None} == {f.line for f in findings} == {12}


# A sample construction of each layer in analysis/tables.PARAMETER_LAYERS, and of it with its flag off.
_LAYER_ARGS = {"Linear": (4, 4), "Bilinear": (2, 2, 2), "Embedding": (3, 2), "EmbeddingBag": (3, 2), "PReLU": (),
               "MultiheadAttention": (4, 2), "TransformerEncoderLayer": (4, 2), "TransformerDecoderLayer": (4, 2),
               "LayerNorm": (4,), "RMSNorm": (4,), "GroupNorm": (1, 4), "LazyLinear": (4,), "LazyConv1d": (2, 1),
               "LazyConv2d": (2, 1), "LazyConv3d": (2, 1)}


@pytest.mark.parametrize("q", sorted(__import__("graphmend_lint.analysis.tables", fromlist=["x"]).PARAMETER_LAYERS))
def test_parameter_layers_table_matches_torch(q):
    """GM923's table: each layer makes parameters when built (unless its flag says not), and building one
    in compiled code breaks the graph at the call."""
    from graphmend_lint.analysis.tables import PARAMETER_LAYERS

    name = q.rsplit(".", 1)[1]
    cls = getattr(torch.nn, name)
    args = _LAYER_ARGS.get(name, (2, 2, 1) if name.startswith("Conv") else (4, 4) if name.endswith("Cell")
                           or name in ("LSTM", "GRU", "RNN") else (4,))
    flag = PARAMETER_LAYERS[q]
    with_params = {flag[0]: True} if flag and not flag[2] else {}
    assert list(cls(*args, **with_params).parameters()), q
    if flag:
        assert not list(cls(*args, **{flag[0]: False}).parameters()), q
        assert list(inspect.signature(cls).parameters).index(flag[0]) == flag[1], q  # the flag's position

    def build():
        return cls(*args, **with_params)

    torch._dynamo.reset()
    breaks = coverage.compiled_breaks(build, [()])
    torch._dynamo.reset()
    assert any("torch.nn.Parameter()" in (b.reason or "") for b in breaks), q


@pytest.mark.parametrize("build", [lambda: torch.nn.Parameter(torch.ones(2)),
                                   lambda: torch.nn.Parameter(torch.ones(2), requires_grad=False),
                                   lambda: torch.nn.Embedding.from_pretrained(torch.ones(3, 2)),
                                   lambda: torch.nn.EmbeddingBag.from_pretrained(torch.ones(3, 2))],
                         ids=["Parameter", "Parameter-no-grad", "Embedding.from_pretrained",
                              "EmbeddingBag.from_pretrained"])
def test_parameter_constructors_break(build):
    """GM923's PARAMETER: each breaks the graph at `torch.nn.Parameter()` when called in compiled code."""
    torch._dynamo.reset()
    breaks = coverage.compiled_breaks(build, [()])
    torch._dynamo.reset()
    assert any("torch.nn.Parameter()" in (b.reason or "") for b in breaks)

