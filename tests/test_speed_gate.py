"""The skeleton's gate (graphmend_lint/gate.py): a compiled def no rule can report in is cut, and a
file with none left is not parsed by libcst at all; every finding stays (test_speed_skeleton.py
checks every fixture and rule example with and without the skeleton)."""
from __future__ import annotations

import ast
import textwrap

import pytest

from graphmend_lint import engine, gate, runner, settings, skeleton
from graphmend_lint.analysis import effects, external
from graphmend_lint.rules import (gm905_data_dependent_output_shape as gm905, gm906_tensor_as_size as gm906,
                                  gm913_backend_flags_context as gm913, gm914_module_cast_in_forward as gm914,
                                  gm919_rnn_module_in_compiled_code as gm919,
                                  gm920_untraceable_context_manager as gm920, gm921_rng_state_in_compiled_code as gm921,
                                  gm922_autograd_grad_in_compiled_code as gm922)

S = settings.Settings()
HEAD = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x, mask=None):\n"


def _hot(body: str, head: str = HEAD) -> bool:
    source = head + textwrap.indent(textwrap.dedent(body), " " * 8)
    tree = ast.parse(source)
    forward = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "forward")
    nodes = [n for stmt in forward.body for n in ast.walk(stmt)]
    return gate.FileGate(tree).may_report(forward, nodes)


def test_the_gate_reads_the_names_the_rules_report():
    """Both read analysis/tables.py: a rule that defines its own table again fails here."""
    assert gate.LOGGER_METHODS == effects.LOGGER_METHODS
    assert gate._CASTS == gm914.CASTS and gate._NOT_LAYERS == gm914.NOT_LAYERS
    assert gate._SIZES == set(gm906.SIZE_METHODS) and gate._SIZE_FUNCS == set(gm906.SIZE_FUNCS)
    assert gate._DYNAMIC == gm905.DYNAMIC_FUNCS
    assert gate._CONTEXTS == set(gm913.FLAGS) | set(gm920.UNTRACEABLE)
    assert set(gm921.RNG_STATE) | set(gm922.GRAD) <= gate._NAMED
    assert gate._RNNS == {q.rsplit(".", 1)[-1] for q in gm919.RNNS}


@pytest.mark.parametrize("body", [
    "if mask is None:\n    return x\nreturn self.proj(x)",
    "if self.training and mask is not None:\n    x = x * 2\nreturn x",
    "h = x.view(x.shape[0], -1)\nif h.dim() == 3:\n    h = h[:, 0]\nreturn h",
    "return torch.log(x)",  # `log` is a logger method only on a logger
    "y = x[..., None, :]\nreturn y.to(x.dtype)",
])
def test_defs_no_rule_can_report_in(body):
    assert not _hot(body)


@pytest.mark.parametrize("body", [
    "if x.sum() > 0:\n    x = x * 2\nreturn x",  # GM101: a reduction of a parameter
    "s = x.mean()\nreturn x if s > 0 else -x",  # GM102 through a name
    "while x.max() > 1:\n    x = x / 2\nreturn x",  # GM103
    "print(x)\nreturn x",  # GM201
    "logger.warning('x')\nreturn x",  # GM202
    "n = int(x.sum())\nreturn x[:n]",  # GM904, GM906
    "return x[mask.bool()]",  # GM905's mask
    "return x.nonzero()",  # GM905
    "v = x.item()\nreturn v",  # GM901
    "for h, w in enumerate(x):\n    x = x.view(h, w)\nreturn x",  # GM906 through a loop
    "assert x.abs().max() < 10, f'{x}'\nreturn x",  # GM302
    "yield x",  # GM912
    "with torch.backends.cudnn.flags(enabled=False):\n    return x",  # GM913
    "x.requires_grad = True\nreturn x",  # GM916
    "torch._check_tensor_all(mask)\nreturn x",  # GM303
    "if torch.compiler.is_compiling() and not torch.is_grad_enabled():\n    return x\nelif mask:\n    return x",
])
def test_defs_a_rule_may_report_in(body):
    assert _hot(body)


def test_a_name_imported_twice_may_be_either():
    """Bindings keeps the last import of a name in source order; the gate does not know which that is."""
    head = "import torch\nfrom torch import nn\ndef f():\n    import jax.numpy as np\nimport numpy as np\n\n\n" \
           "class M(nn.Module):\n    def forward(self, x, mask=None):\n"
    assert _hot("return np.isin(x, [1])", head)


LAYERS = b'''\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, mask=None):
        if mask is not None:
            x = x * mask
        return self.proj(x)


class Head(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return x
'''


def test_a_cut_def_and_an_idle_class_leave_the_findings():
    tree = ast.parse(LAYERS)
    lean = skeleton.skeleton(LAYERS, tree)
    assert b"self.proj(x)" not in lean and b"nn.Linear" not in lean  # Block: nothing to report, nothing read
    assert b"if x.sum() > 0:" in lean
    got = runner._check(LAYERS, tree, S, False).findings
    assert [(f.line, f.code) for f in got] == [(18, "GM101")] == [(f.line, f.code) for f in engine.check(LAYERS, S).findings]


def test_a_file_with_nothing_to_report_is_not_parsed_by_libcst(monkeypatch):
    source = LAYERS.split(b"\n\nclass Head")[0] + b"\n"
    tree = ast.parse(source)
    assert skeleton.skeleton(source, tree) == skeleton.NOTHING
    monkeypatch.setattr(engine, "check", lambda *a, **k: pytest.fail("parsed"))
    assert runner._check(source, tree, S, False).findings == []


def test_a_skeleton_made_before_the_index_is_made_again_when_it_assumed_wrong():
    """The gate reads `self.scale` as no tensor because this file stores a float there; a base class in
    another file registering a buffer of that name (ext.buffers) makes it one: the skeleton is made again."""
    source = b"import torch\nfrom torch import nn\nfrom base import Base\n\n\nclass M(Base):\n" \
             b"    def __init__(self):\n        super().__init__()\n        self.scale = 2.0\n\n" \
             b"    def forward(self, x):\n        if self.scale > 1:\n            x = x * 2\n        return x\n"
    tree = ast.parse(source)
    lean, cut, assumed, _ = skeleton.lean(source, tree)
    assert lean == skeleton.NOTHING and ("buffer", "scale") in assumed
    ext = external.FileFacts(buffers=frozenset({"M\tscale"}))
    assert skeleton.stale((lean, cut, assumed), set(), ext)
    assert not skeleton.stale((lean, cut, assumed), set(), external.FileFacts())
    again = skeleton.skeleton(source, tree, ext=ext)
    assert b"if self.scale > 1:" in again
    assert skeleton.stale((lean, cut, assumed), set(), external.FileFacts(disabled=frozenset({"helper"})))


def test_a_parameter_holds_a_tensor_only_where_a_caller_may_hand_one_in():
    """A parameter without a default is what same-file callers pass (facts._from_callers): a def that
    no text of the file calls by name (`forward`, reached through `module(x)`) gets nothing from them."""
    head = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x, mask):\n"
    body = "        return x[mask]\n"
    for extra, hot in (("", False), ("\n    def run(self, x: torch.Tensor):\n        return self.forward(x, x > 0)\n", True)):
        source = head + body + extra
        tree = ast.parse(source)
        forward = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "forward")
        nodes = [n for stmt in forward.body for n in ast.walk(stmt)]
        assert gate.FileGate(tree, source=source.encode()).may_report(forward, nodes) is hot
        assert [f.code for f in engine.check(source.encode(), S).findings] == (["GM905"] if hot else [])


CLASS = "\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        {init}\n{more}\n" \
        "    def forward(self, x, mask=None):\n"


@pytest.mark.parametrize("imports, init, more, body", [
    ("from torch.nn import Linear as L", "self.proj = L(4, 4)", "", "if self.proj(x) > 0:\n    x = x * 2\nreturn x"),
    ("from torch.nn import LSTM as R", "self.rnn = R(4, 4)", "", "return self.rnn(x)"),  # GM919
    ("from torch.compiler import disable as eager_only", "pass",
     "    @eager_only\n    def helper(self, x):\n        return x\n", "return self.helper(x)"),  # GM907
    ("from torch import is_grad_enabled as grad_on", "self.proj = nn.Linear(4, 4)", "",
     "if torch.compiler.is_compiling() and not grad_on():\n    return x\nelif mask:\n    x = self.proj(x)\nreturn x"),
])
def test_names_imported_under_another_name(imports, init, more, body):
    """A rule resolves `L(...)` to torch.nn.Linear through the imports; so does the gate."""
    head = "import torch\nfrom torch import nn\n" + imports + "\n" + CLASS.format(init=init, more=more)
    assert _hot(body, head)
