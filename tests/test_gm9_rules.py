"""GM9xx precision: values measured on torch 2.13 not to break get no finding.

(The rules' own VALID/INVALID cases run in tests/test_fixit_rules.py.)"""
from __future__ import annotations

import textwrap

import pytest
from graphmend_lint import engine
from graphmend_lint.rules import ALL_RULES
from graphmend_lint.settings import Settings

def codes(src: str) -> list[str]:
    return [f.code for f in engine.check(textwrap.dedent(src).encode(), Settings()).findings]


HEAD = "import copy, random, time\nimport numpy as np\nimport torch\nfrom torch import nn\n"


@pytest.mark.parametrize("body", [
    "n = x.size(0)\n        return x * n",  # static sizes
    "return x[: x.shape[0] // 2]",  # static slice bound
    "return x * int(x.shape[0])",  # int() of a shape
    "if x.sum().item() > 0:\n            return x\n        return -x",  # GM1xx's (inside an if test)
    "return x * float(self.config.scale)",  # config value
    "a = x.numpy() * 2\n        return torch.from_numpy(a)",  # traced NumPy
    "return x.cpu() + 1",  # .cpu() alone
    "return x * random.randint(0, 3)",  # traced by Dynamo
    "return x + torch.as_tensor(np.random.rand(4, 8))",  # NumPy draw with a size
    "return copy.deepcopy([1, 2])[0] * x",  # deepcopy of Python data
    "ptrs = {'x': x.data_ptr()}\n        return x, ptrs",  # pointer only stored
])
def test_no_gm9_finding_on_values_that_do_not_break(body):
    src = f"{HEAD}\nclass M(nn.Module):\n    def forward(self, x: torch.Tensor):\n        {body}\n"
    assert [c for c in codes(src) if c.startswith("GM9")] == []


def test_no_finding_outside_compiled_code():
    src = HEAD + "\ndef helper(x: torch.Tensor):\n    return x.sum().item(), x.tolist(), time.time(), x[x > 0]\n"
    assert codes(src) == []


def test_guarded_by_is_compiling_is_not_reported():
    src = HEAD + textwrap.dedent("""
        class M(nn.Module):
            def forward(self, x: torch.Tensor):
                if not torch.compiler.is_compiling():
                    self.seen = x.sum().item()
                    self.t = time.perf_counter()
                return x
    """)
    assert codes(src) == []


EXAMPLE_HEAD = "import copy, random, time\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.CODE.startswith("GM9")], ids=lambda r: r.CODE)
def test_page_example_is_reported_by_its_rule(rule):
    doc = textwrap.dedent(rule.__doc__)
    example = doc.split("## Example", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert rule.CODE in codes(EXAMPLE_HEAD + textwrap.dedent(example))
