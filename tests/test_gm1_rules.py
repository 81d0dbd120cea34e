"""GM101-GM104: the proof engine on small snippets."""
from __future__ import annotations

import textwrap

import pytest

from graphmend_lint import engine
from graphmend_lint.rules import ALL_RULES
from graphmend_lint.settings import Settings

GM1 = [r for r in ALL_RULES if r.CODE.startswith("GM1")]  # their VALID/INVALID run in test_fixit_rules.py


def test_gm1_rules_are_collected():
    assert [r.CODE for r in GM1] == ["GM101", "GM102", "GM103", "GM104"]


HEAD = """
import logging
import warnings

import torch
import torch.nn.functional as F
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, mask=None):
        h = self.proj(x)
"""


def findings(body: str, code: str = "GM101"):
    src = HEAD + textwrap.indent(textwrap.dedent(body), " " * 8)
    return [f for f in engine.check(src.encode(), Settings(unsafe_fixes=True)).findings if f.code == code]


@pytest.mark.parametrize("body,safety,words", [
    # accepted shapes
    ("if h.sum() > 0:\n    y = h * 2\nelse:\n    y = h - 1\nreturn y\n", "safe", "fix: torch.where"),
    # `return` after the `if` is its else: the compiled path returns torch.where, eager keeps both
    ("if h.sum() > 0:\n    return torch.tanh(h)\nreturn h\n", "safe", "under torch.compile only"),
    # ... also after assignments (#23): the compiled path computes them first; a name they rebind
    # that the test or the early return reads gets a fresh name there
    ("if h.sum() > 0:\n    return torch.tanh(h)\nh = h + 1\nreturn h\n", "safe", "under torch.compile only"),
    ("if h.sum() > 0:\n    return h * 2\ny = h + 1\nz = y.relu()\nreturn z * 3\n", "safe", "under torch.compile only"),
    # ... an infinite derivative there, or a name read only there (a leaf: zero gradient vs none),
    # waits for gradients off
    ("if h.sum() > 0:\n    return h * 2\ny = h.abs().sqrt()\nreturn y\n", "safe", "`sqrt` has an infinite derivative"),
    ("if h.sum() > 0:\n    return h * 2\nreturn h * self.proj.bias\n", "safe", "`self.proj.bias` is read in one branch only"),
    ("if h.sum() > 0:\n    return h * 2\ny = h * self.proj.bias\nreturn y + 1\n", "safe", "`self.proj.bias` is read in one"),
    # ... but not what may raise, nor inside a `try` (its handlers would see the names bound)
    ("if h.sum() > 0:\n    return h * 2\ny = h @ x\nreturn y\n", "none", "may raise"),
    # fsmt's make_padding_mask: a None arm (said as such, not as a number)
    ("m = h.eq(1)\nif not m.any():\n    m = None\nreturn m\n", "none", "a branch value is None, which torch.where"),
    ("try:\n    if h.sum() > 0:\n        return h\n    y = h + 1\n    return y\nfinally:\n    pass\n", "none",
     "inside a `try`"),
    # ... but not a call there (GM202 defers a log call to after the graph: a compiled path returning
    # before it would drop it), nor an `if` or a loop
    ("if h.sum() > 0:\n    return h * 2\nprint(h)\nreturn h\n", "none", "`return` in some branches only"),
    ("if h.sum() > 0:\n    return h * 2\nself.tap(h)\ny = h + 1\nreturn y\n", "none", "`return` in some branches only"),
    ("if h.sum() > 0:\n    return h * 2\ny = h + 1\nif self.training:\n    y = y * 2\nreturn y\n", "none",
     "`return` in some branches only"),
    ("if h.sum() > 0:\n    return h * 2\nfor i in range(2):\n    h = h + 1\nreturn h\n", "none",
     "`return` in some branches only"),
    # a *_like constructor of a tensor cannot raise
    ("if h.sum() > 0:\n    y = torch.zeros_like(h)\nelse:\n    y = h\nreturn y\n", "safe", "fix: torch.where"),
    ("if h.sum() > 0:\n    y = torch.full_like(x, 0.5)\nelse:\n    y = h\nreturn y\n", "safe", "`isinstance(x, torch.Tensor)`"),
    ("if h.sum() > 0:\n    y = torch.zeros_like(h, dtype=h.dtype)\nelse:\n    y = h\nreturn y\n", "unsafe", "may raise on arguments"),
    # `dtype=torch.long`: an int tensor against a float one, which torch.where would promote
    ("if h.sum() > 0:\n    y = torch.zeros_like(h, dtype=torch.long)\nelse:\n    y = h\nreturn y\n", "none", "different dtypes"),
    # a value with no autograd history against one with it: the `if` gave a tensor without grad
    ("if h.sum() > 0:\n    y = (h > 0).float()\nelse:\n    y = h * 2\nreturn y\n", "safe", "has no autograd history"),
    ("if h.sum() > 0:\n    return torch.zeros_like(h)\nreturn h - 1\n", "safe", "has no autograd history"),
    # softmax keeps the shape; a dim other than -1 or 0 may be out of range where not taken
    ("if h.sum() > 0:\n    h = torch.softmax(h, dim=-1)\nreturn h\n", "safe", "fix: torch.where"),
    ("if h.sum() > 0:\n    h = F.softplus(h) - 1\nreturn h\n", "safe", "fix: torch.where"),
    ("if h.sum() > 0:\n    h = h.softmax(2)\nreturn h\n", "none", "dim out of range"),
    # indexing in a branch value: checked while tracing, a tensor index is 0 where not taken
    ("if h.sum() > 0:\n    return h * 2\nreturn h[5]\n", "safe", "`h.dim() >= 1 and h.shape[0] > 5`"),
    # basic indexing (#23): `None` and `...` take no dim; the dims are checked first
    ("if h.sum() > 0:\n    return h * 2\nreturn h[None, ..., :2]\n", "safe", "`h.dim() >= 1`"),
    ("if h.sum() > 0:\n    return h * 2\nreturn h[:, None, 0]\n", "safe", "`h.dim() >= 2 and h.shape[1] > 0`"),
    ("if h.sum() > 0:\n    return h * 2\nreturn h[..., 0]\n", "none", "indexing"),
    ("if h.sum() > 0:\n    y = h[mask]\nelse:\n    y = h\nreturn y\n", "safe", "mask.dtype == torch.long"),
    ("if h.sum() > 0:\n    y = h[:, -1:]\nelse:\n    y = h\nreturn y\n", "safe", "under torch.compile only"),
    ("if h.sum() > 0:\n    y = h[..., mask]\nelse:\n    y = h\nreturn y\n", "none", "indexing"),
    ("if h.sum() > 0:\n    y = h[mask.long()]\nelse:\n    y = h\nreturn y\n", "none", "indexing"),
    ("if h.sum() > 0:\n    z = h[mask]\n    y = z * 2\nelse:\n    y = h\nreturn y\n", "none", "indexing"),
    # basic indexing is a view: a later in-place change of `h` reached `y` through the branch
    ("if h.sum() > 0:\n    y = h[:2]\nelse:\n    y = h * 2\nh.add_(1)\nreturn y\n", "unsafe", "modified in place"),
    ("if h.max() > 1:\n    h = h / 2\nreturn h\n", "safe", ""),
    # the caller's own tensor handed back where the branch is not taken (vLLM's cast_overflow_tensors)
    ("if x.dtype == torch.float16 and torch.isinf(x).any():\n    x = torch.clamp(x, min=-1.0, max=1.0)\nreturn x\n",
     "unsafe", "may be the very tensor the caller passed as `x`"),
    ("if x.dtype == torch.float16 and torch.isinf(x).any():\n    x = torch.clamp(x, min=-1.0, max=1.0)\nreturn x * 2\n",
     "safe", ""),
    ("if h.mean() > 0:\n    a = h * 2\n    b = h * 3\nelse:\n    a = h\n    b = h\nreturn a + b\n", "safe", ""),
    # refusals and missing proofs
    ("if h.sum() > 0:\n    y = h * 2\nelif self.training:\n    y = h\nelse:\n    y = -h\nreturn y\n", "none",
     "static test among tensor tests"),
    ("if h.sum() > 0 and self.training:\n    h = h * 2\nreturn h\n", "none", "static test after a tensor test"),
    ("if h.sum() > 0:\n    t = h * 2\n    h = t\nreturn h, t\n", "none", "reads another name"),
    ("if h.sum() > 0:\n    t = h * 2\n    h = t\nelse:\n    t = h\nreturn h\n", "none", "cannot be hoisted"),
    ("if h.sum() > 0:\n    t = 2.0\n    h = h * t\nreturn h\n", "safe", ""),
    ("if h.sum() > 0:\n    y = h * 2\n    z = y + 1\nelse:\n    y = h\n    z = h\nreturn y + z\n", "none",
     "reads another name"),
    ("if h.sum() > 0:\n    y = h * 2\nreturn y\n", "none", "not provably bound"),
    ("if h.sum() > 0:\n    y = 1.0\nelse:\n    y = h\nreturn y\n", "none", "Python value"),
    ("if h.sum() > 0:\n    y = None\nelse:\n    y = h\nreturn y\n", "none", "a branch value is None"),
    ("if h.sum() > 0:\n    y = h / mask.sum()\nelse:\n    y = h\nreturn y\n", "safe", "`mask` is read in one branch only"),
    # compile-only forms: eager keeps the `if`, the compiled path checks shapes/dtypes while tracing
    ("if h.sum() > 0:\n    y = h.mean(0, keepdim=True)\nelse:\n    y = h\nreturn y\n", "safe",
     "under torch.compile only"),
    # `x` is read in one branch only, but also before the `if` (its gradient flows there too)
    ("if x.sum() > 0:\n    h = torch.clamp(x, min=-1.0, max=1.0)\nreturn h\n", "safe", "under torch.compile only"),
    ("d = torch.rand([])\nif self.training and d < self.p:\n    h = h * 0\nreturn h\n", "safe", "draw of torch.rand"),
    ("d = torch.rand([])\nif d <= self.p:\n    h = h * 0\nreturn h\n", "none", "not provably 0-d"),
    ("if mask is None:\n    if h.sum() > 0:\n        mask = h > 0\nreturn h, mask\n", "none", "is None here"),
    ("if h.sum() > 0:\n    h = torch.exp(h)\nreturn h\n", "safe", "double where"),
    ("if h.sum() > 0:\n    h = torch.exp(h)\nelif h.sum() < -1:\n    h = h * 2\nreturn h\n", "safe",
     "double where: exact gradients"),
    ("if h.sum() > 0:\n    h = torch.exp(h)\nelif h.sum() < -1:\n    h = h * x\nreturn h\n", "unsafe",
     "`exp`, `h * x` has an infinite derivative"),
    # h comes from outside the no_grad block: the untaken `if` keeps its autograd history, where() does not
    ("with torch.no_grad():\n    if h.sum() > 0:\n        h = torch.exp(h)\nreturn h\n", "unsafe", "detaches"),
    ("with torch.no_grad():\n    g = h * 3\n    if g.sum() > 0:\n        g = torch.exp(g)\nreturn g\n", "safe", ""),
    ("if h.sum() > 0:\n    h = h.detach()\nreturn h\n", "safe", "`detach`"),
    # masked_fill raises on a mask that is not bool or does not broadcast, a value its dtype cannot
    # hold: checked while tracing (#23); its mask is bool, never differentiable: no one-sided read
    ("if h.sum() > 0:\n    h = h.masked_fill(mask, 0.0)\nreturn h\n", "safe",
     "`isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and mask.dim() <= h.dim() and all("),
    ("if mask.any():\n    h = h.masked_fill(mask[:, None], -1e9)\nreturn h\n", "safe", "and h.dtype != torch.float16`"),
    ("if mask.any():\n    h = h.masked_fill(mask[..., None] == 0, float('-inf'))\nreturn h\n", "safe", "mask[..., None].dim() <= h.dim()"),
    ("if mask.any():\n    h = h.masked_fill(mask, torch.finfo(h.dtype).min)\nreturn h\n", "safe", "mask.dtype == torch.bool"),
    ("if mask.any():\n    h = h.masked_fill(mask, torch.finfo(torch.float32).min)\nreturn h\n", "unsafe", "the value fits"),
    ("if mask.any():\n    h = h.masked_fill(mask, self.fill)\nreturn h\n", "unsafe", "the value fits"),
    ("if h.sum() > 0 or h[0].sum() > 0:\n    h = h * 2\nreturn h\n", "none", "indexing"),
    # a reduction that raises on an empty tensor (warns on one element) where `if` may not run it:
    # the element count is a shape, checked while tracing
    ("if h.sum() > 0 or h.std() > 1:\n    h = h * 2\nreturn h\n", "safe", "`h.numel() > 1`"),
    ("if h.sum() > 0 or h.amax() > 1:\n    h = h * 2\nreturn h\n", "safe", "`h.numel() > 0`"),
    ("if h.sum() > 0:\n    h = h - x.amax(dim=-1, keepdim=True)\nreturn h\n", "safe", "and x.numel() > 0`"),
    # ... but a reduction over one dim warns on a size-1 dim, which the count does not show
    ("if h.sum() > 0 or h.std(dim=-1).mean() > 1:\n    h = h * 2\nreturn h\n", "none", "warns"),
    # ... and a value set in the branch cannot be checked before it
    ("if h.sum() > 0:\n    z = h[1:] * 2\n    h = h - z.amax()\nreturn h\n", "none", "indexing"),
    ("if h.amax() > 1 or h.sum() > 0:\n    h = h * 2\nreturn h\n", "safe", ""),
    # the test already ran `h.amax()`: in the branch it cannot raise on an empty tensor
    ("if h.amax() > 1:\n    h = h - h.amax()\nreturn h\n", "safe", "under torch.compile only"),
    # ... but dividing by it has an infinite derivative where it is 0 (NaN gradients through torch.where):
    # the double where guards `h`, the one tensor the value reads; with another tensor, gradients off
    ("if h.amax() > 1:\n    h = h / h.amax()\nreturn h\n", "safe", "double where: exact gradients"),
    ("if h.amax() > 1:\n    h = h / x.amax()\nreturn h\n", "safe", "`/ x.amax()`, `amax` has an infinite derivative"),
    # ... and so do ops whose derivative depends on the input, where it is NaN or infinite (a NaN from
    # another branch, -inf attention scores): found by the differential fuzzer under torch.compile.
    # One condition: the double where guards the input (exact); else gradients off.
    ("if h.sum() > 0:\n    h = h ** 2\nreturn h\n", "safe", "double where: exact gradients"),
    ("if h.sum() > 0:\n    h = torch.tanh(h)\nreturn h\n", "safe", "double where: exact gradients"),
    ("if h.sum() > 0:\n    h = h * 2 + 1\nreturn h\n", "safe", "compile only (eager runs the `if` unchanged)"),
    ("if h.sum() > 0:\n    h = h.clamp(-1, 1)\nreturn h\n", "safe", "compile only (eager runs the `if` unchanged)"),
    ("if h.sum() > 0:\n    h = h * x\nreturn h\n", "safe",
     "`h * x` has an infinite derivative somewhere, or one that is NaN at a NaN or infinite input"),
    ("if h.sum() > 0:\n    h = h.norm() * h\nreturn h\n", "safe", "double where: exact gradients"),
    ("if h.sum() > 0:\n    h = x.norm() * h\nreturn h\n", "safe", "`x.norm() * h`, `norm` has an infinite"),
    ("if torch.equal(h, x):\n    h = h * 2\nreturn h\n", "none", "Python value from tensor data"),
    ("if h.sum() > 0:\n    h = h * 2\nh += 1\nreturn h\n", "unsafe", "modified in place"),
    ("if h.sum() > 0:\n    h = h * 2\nh[0] = 1\nreturn h\n", "unsafe", "modified in place"),
    # finfo raises on an integer dtype: the compile-only form checks it while tracing
    ("if h.sum() > 0:\n    h = torch.clamp(h, min=torch.finfo(x.dtype).min)\nreturn h\n", "safe", "`x.is_floating_point()`"),
    # a setup name reused by later code is judged by its own branch's value (liveness, not text)
    ("if h.dtype == torch.float16 and torch.isinf(h).any():\n    c = torch.finfo(h.dtype).max - 1000\n"
     "    h = torch.clamp(h, min=-c, max=c)\nif mask is None:\n    c = 2.0\n    h = h / c\nreturn h\n", "safe", ""),
    ("if (\n    mask is not None\n    and h.sum() > 0\n):\n    h = h * 2\nreturn h\n", "safe", ""),
    ("if h.sum() > 0:\n    self.proj.weight.data.zero_()\nreturn h\n", "none", "side effects"),
    # a branch that only logs: skipped under compile (fixes compose with the GM2xx guard)
    ("if h.sum() > 0:\n    print(h)\nreturn h\n", "safe", "skipped under torch.compile"),
    ("if h.sum() > 0:\n    if not torch.compiler.is_compiling():\n        print(h)\nreturn h\n", "safe",
     "skipped under torch.compile"),
    ("if h.sum() > 0:\n    if not torch.compiler.is_compiling():\n        print(h)\n    h = h * 2\nreturn h\n",
     "safe", "runs in eager only"),
    ("if h.amax() > 0:\n    print(h)\nreturn h\n", "safe", "`h.numel() > 0`"),
    ("if h.sum() > 0:\n    print(h)\nelse:\n    print(h)\nreturn h\n", "none", "GM2xx guards"),
    # a logger method on an object not proven a logger (nemo's `from nemo.utils import logging`, any
    # `self.x.warning(...)`) may do anything, and GM202 does not guard it: it is a side effect
    ("if h.sum() > 0:\n    logging.warning('big')\nreturn h\n", "safe", "skipped under torch.compile"),
    ("if h.sum() > 0:\n    self.monitor.warning('big')\nreturn h\n", "none", "side effects"),
    ("if h.sum() > 0:\n    self.monitor.error('big')\n    h = h * 2\nreturn h\n", "none", "side effects"),
    # a print or warning in a branch is left out of the compiled form (GM2xx guards it the same way)
    ("if h.sum() > 0:\n    print('big')\n    h = h * 2\nreturn h\n", "safe", "`print(...)` runs in eager only"),
    ("if h.sum() > 0:\n    warnings.warn('big')\n    h = h * 2\nreturn h\n", "safe", "`warnings.warn(...)` runs"),
    # ... but real state is not: torch.where would run the update on both sides
    ("if h.sum() > 0:\n    self.count += 1\n    h = h * 2\nreturn h\n", "none", "side effects"),
    ("if h.sum() > 0:\n    print(str(h))\n    self.n = 1\n    h = h * 2\nreturn h\n", "none", "side effects"),
    # a guard that only skips a no-op masked update (#23): where no element of the bool mask is True,
    # none of a basic-indexed view of it is; the update alone runs under compile, checked while tracing
    ("if mask.any():\n    x[mask[:, None]] = 0\nreturn h\n", "safe", "mask.dtype == torch.bool and mask[:, None].dim() <= x.dim()"),
    ("if mask.sum() > 0:\n    x.masked_fill_(mask[..., None], -2.5)\nreturn h\n", "safe", "x.is_floating_point() and not x.requires_grad"),
    ("if (x == 0).any():\n    x[x == 0] = 1\nreturn h\n", "safe", "checked while tracing (`isinstance(x, torch.Tensor) and not x.requires_grad and not torch.is_grad_enabled() "
     "and x.is_contiguous()`)"),  # x is a parameter: the caller may have saved it for backward
    ("if (x == 0).any():\n    x[(x == 0)[0]] = 1\nreturn h\n", "none", "side effects"),  # only a name's mask is indexed
    ("if mask.any():\n    x[mask[idx]] = 0\nreturn h\n", "none", "side effects"),  # advanced indexing
    ("if mask.any():\n    x[mask[:, None]] = 1e40\nreturn h\n", "none", "side effects"),  # no dtype holds it
    # torch_geometric's visnet: a bool mask's result shape depends on the data, so no form exists (the integer
    # index form's `m.dtype == torch.long` check could never hold: dead code), said as such
    ("m = h[0] != h[1]\nif not m.all():\n    h = h[:, m]\nreturn h\n", "none",
     "`h[:, m]` indexes by the bool mask `m`: its shape depends on the data"),
    ("idx = x.argmax(-1)\nif not h.all():\n    h = h[idx]\nreturn h\n", "safe", "idx.dtype == torch.long"),
])
def test_gm101_proofs(body, safety, words):
    (f,) = findings(body)
    assert f.safety.value == safety, f.message
    assert words in f.message


@pytest.mark.parametrize("body", [
    "if self.training and x.dim() == 3:\n    h = h * 2\nreturn h\n",
    "if x.shape[0] > 1 or mask is None:\n    h = h * 2\nreturn h\n",
    "if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool:\n    h = h * 2\nreturn h\n",
    "if self.config.use_cache and len(x) > 2:\n    h = h * 2\nreturn h\n",
    "if x.size(-1) == 4 and x.numel() > 0 and x.is_floating_point():\n    h = h * 2\nreturn h\n",
    "if torch.compiler.is_compiling():\n    h = h * 2\nreturn h\n",
    "if not torch.compiler.is_compiling():\n    if h.sum() > 0:\n        h = h * 2\nreturn h\n",
    "if h.sum() > 0:\n    raise ValueError('positive')\nreturn h\n",
    # a Python bool computed earlier broke the graph where it was computed (.item(), GM901)
    "flag = h.any().item()\nif flag and mask is None:\n    h = h * 2\nreturn h\n",
])
def test_static_and_foreign_tests_are_not_flagged(body):
    assert findings(body) == []


def test_fix_spells_torch_as_the_file_does():
    src = "import torch as th\n\n@th.compile\ndef f(x):\n    y = x.float()\n    return y * 2 if y.sum() > 0 else y - 1\n"
    out = engine.check(src.encode(), Settings(), fix=True).source.decode()
    assert "return th.where(y.sum() > 0, y * 2, y - 1)" in out
    assert "import torch\n" not in out


def test_ifexp_and_while_and_loops():
    assert findings("return h * 2 if h.sum() > 0 else h\n", "GM102")[0].safety.value == "safe"
    assert findings("return 2.0 if h.sum() > 0 else 1.0\n", "GM102")[0].safety.value == "none"
    assert findings("while h.sum() > 0:\n    h = h - 1\nreturn h\n", "GM103")
    loop = "for i in range(3):\n    if h.sum() > 0:\n        h = h * 2\nreturn h\n"
    assert findings(loop, "GM104") and not findings(loop, "GM101")
    (f,) = findings(loop, "GM104")
    assert "skip the whole function `forward`" in f.message and f.safety.value == "safe"  # torch.where per iteration


def test_fix_keeps_comments_with_the_eager_code():
    src = HEAD + textwrap.indent(textwrap.dedent("""\
        # pick a scale
        if h.sum() > 0:  # positive
            # double it
            y = h * 2
        else:
            y = h - 1  # shift
        return y
        """), " " * 8)
    out = engine.check(src.encode(), Settings(), fix=True).source.decode()
    # the fix is compile-only (eager keeps the `if`): the comments stay with the eager code, each once
    kept = ("        elif h.sum() > 0:  # positive\n            # double it\n            y = h * 2\n"
            "        else:\n            y = h - 1  # shift\n")
    assert kept in out
    assert "        # pick a scale\n        if torch.compiler.is_compiling():\n" in out
    for comment in ("# pick a scale", "# positive", "# double it", "# shift"):
        assert out.count(comment) == 1
    assert out.index("y = torch.where(h.sum() > 0, h * 2, h - 1)") < out.index("# positive")


OBSERVED_HEAD = "import logging\nimport warnings\n\nlogger = logging.getLogger(__name__)\n" + HEAD
IF = "if h.sum() > 0:\n    h = torch.tanh(h)\nelse:\n    h = h * 2\n"
IFEXP = "h = torch.tanh(h) if h.sum() > 0 else h * 2\n"


@pytest.mark.parametrize("branch", [IF, IFEXP], ids=["GM101", "GM102"])
@pytest.mark.parametrize("later,safety,words", [
    # the rebound name shown later: its grad_fn would read WhereBackward0 in eager (tests/fuzz_regressions/
    # GM101_1.py), so the fix is compile-only: under compile a value handed across the print's break
    # shows CompiledFunctionBackward either way (measured, aot_eager and inductor)
    ("print('value', h)\n", "safe", "under torch.compile only"),
    ("logger.info('h %s', h)\n", "safe", "under torch.compile only"),
    ("logging.warning('h %s', (h, x))\n", "safe", "under torch.compile only"),
    ("warnings.warn(f'h={h}')\n", "safe", "under torch.compile only"),
    ("s = str(h)\n", "safe", "under torch.compile only"),
    ("s = 'h={}'.format(h)\n", "safe", "under torch.compile only"),
    ("s = f'{h!r}'\n", "safe", "under torch.compile only"),
    ("g = h.grad_fn\n", "unsafe", "`h.grad_fn`"),
    # what is shown is the same either way
    ("print('value', h.shape, h.dtype, h.sum(), f'{h.shape}')\n", "safe", ""),
    ("print('value', x)\n", "safe", ""),
    ("h2 = h.log()\n", "safe", ""),
])
def test_observed_after_the_fix(branch, later, safety, words):
    src = OBSERVED_HEAD + textwrap.indent(branch + later + "return h\n", " " * 8)
    code = "GM101" if branch is IF else "GM102"
    (f,) = [f for f in engine.check(src.encode(), Settings(unsafe_fixes=True)).findings if f.code == code]
    assert f.safety.value == safety, f.message
    assert words in f.message
    if safety == "unsafe":
        assert "WhereBackward0" in f.message or "grad_fn" in f.message


@pytest.mark.parametrize("code,body", [
    ("GM101", "if h.sum() > 0:\n    y = h\nelse:\n    y = h * 2\n"),
    ("GM101", "if h.sum() > 0:\n    y = h.contiguous()\nelse:\n    y = h * 2\n"),
    ("GM102", "y = h if h.sum() > 0 else h * 2\n"),
])
@pytest.mark.parametrize("later,safety", [
    ("h.add_(1)\n", "unsafe"), ("h[0] = 0\n", "unsafe"), ("h += 1\n", "unsafe"),
    ("torch.tanh(x, out=h)\n", "unsafe"), ("y.mul_(2)\n", "unsafe"), ("z = h + 1\n", "safe"),
])
def test_pass_through_alias_mutated_later(code, body, later, safety):
    """`y` is the tensor `h` itself when that branch runs: a later in-place change of either reaches
    the other; torch.where's new tensor it does not (tests/fuzz_regressions/GM101_3.py, GM102_2.py)."""
    (f,) = findings(body + later + "return y, h\n", code)
    assert f.safety.value == safety, f.message
    if safety == "unsafe":
        assert "modified in place later" in f.message


def test_ifexp_shown_directly():
    ternary = "(torch.tanh(h) if h.sum() > 0 else h * 2)"
    shown = findings(f"print('v', {ternary})\ns = f'{{{ternary}}}'\nreturn h\n", "GM102")
    assert [f.safety.value for f in shown] == ["unsafe", "unsafe"]
    assert "printed" in shown[0].message and "f-string" in shown[1].message
    (f,) = findings(f"return torch.relu{ternary}\n", "GM102")
    assert f.safety.value == "safe", f.message


@pytest.mark.parametrize("body,safety,words", [
    # compile-only, the ternary replaced where it stands (`x` is not provably a floating tensor)
    ("y = self.proj(x) + (x if x.norm() > 1 else x * 0.5)\nreturn y\n", "safe", "eager runs the line unchanged"),
    ("return x * (x if x.max() > 0 else -x), h\n", "safe", "eager runs the line unchanged"),
    ("y = torch.cat([h, x if x.sum() > 0 else x.neg()], dim=-1)\nreturn y\n", "safe", "x.is_floating_point()"),
    ("y = h + 1\ny += x if x.sum() > 0 else x * 2\nreturn y\n", "safe", "eager runs the line unchanged"),
    ("y = (x * 2 if x.sum() > 0 else -x).sum(1)\nreturn y\n", "safe", "eager runs the line unchanged"),
    # the branch values bound to compare their shapes: what runs before the ternary is bound first
    ("y = self.proj(h) + (x if x.sum() > 0 else h)\nreturn y\n", "safe",
     "`self.proj(h)` evaluated first, in order"),
    ("y = h * 2 + (x if x.sum() > 0 else h)\nreturn y\n", "safe", "equal shapes and dtypes"),
    # a test that may change state (a module call): the pure `self.buf * 2` before it is bound too
    ("y = self.buf * 2 + (x if self.tick(h).sum() > 0 else h)\nreturn y\n", "safe",
     "`self.buf * 2` evaluated first, in order"),
    # refused: the in-place torch.where stays, unsafe
    ("y = mask and (x if x.sum() > 0 else -x)\nreturn y\n", "unsafe", "`and`/`or` operand"),
    ("y = (x * 2 if x.sum() > 0 else -x) if h.mean() > 0 else h\nreturn y\n", "unsafe",
     "another conditional expression"),
    ("f = lambda: x * 2 if x.sum() > 0 else -x\nreturn f()\n", "unsafe", "lambda"),
    ("y = h < (x if x.sum() > 0 else -x) < 3\nreturn y\n", "unsafe", "chained comparison"),
    ("if (x * 2 if x.sum() > 0 else -x).sum() > 0:\n    h = h + 1\nreturn h\n", "unsafe", "`if`/`while` test"),
    ("y = self.proj(x if x.sum() > 0 else x * 2)\nreturn y\n", "unsafe", "`x` itself is passed to `self.proj(...)`"),
    ("y = [x if x.sum() > 0 else -x, h]\nreturn y\n", "unsafe", "assigned in a container"),
    ("y = (x if x.sum() > 0 else -x).view(-1)\nreturn y\n", "unsafe", "`.view` is taken of `x` itself"),
    ("y = (x * 2 if x.sum() > 0 else -x).add_(1)\nreturn y\n", "unsafe", "in-place method"),
    ("y = torch.add(h, 1, out=(x * 2 if x.sum() > 0 else -x))\nreturn y\n", "unsafe", "`out=` argument"),
    ("y = h + (x * 2 if x.sum() > 0 else -x) + (x * 3 if h.sum() > 0 else -x)\nreturn y\n", "unsafe",
     "another conditional expression"),
    ("y = h + (k := (x * 2 if x.sum() > 0 else -x))\nreturn y + k\n", "unsafe", "walrus"),
    ("y = self.proj(h) + (h * 2 if h.sum() > self.limit else -h)\nreturn y\n", "unsafe",
     "a trace-time check reads an attribute that a call before the ternary could change"),
])
def test_gm102_nested_ternary(body, safety, words):
    """GM102 inside a larger expression: the compile-only form, or why it is refused."""
    hits = [f for f in findings(body, "GM102") if words in f.message]
    assert hits, [f.message for f in findings(body, "GM102")]
    assert hits[0].safety.value == safety, hits[0].message


LOOP = """
import torch
from torch import nn

class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))
        self.layerdrop = 0.0

    def forward(self, h, synced=False):
        for layer in self.layers:
            skip = self.training and torch.rand([]) < self.layerdrop
"""


@pytest.mark.parametrize("tail,safeties", [
    # the binding decides every test of it: one fix, at the binding
    ("if not skip or synced:\n    h = layer(h)\nif skip:\n    h = h * 1.0\nreturn h\n", ["safe", "none"]),
    # read as a value too: under compile it would be False, not a 0-d tensor
    ("if not skip:\n    h = layer(h)\nreturn h, skip\n", ["none"]),
    # another tensor test beside it: the break stays either way
    ("if not skip and h.sum() > 0:\n    h = layer(h)\nreturn h\n", ["none"]),
])
def test_gm104_layerdrop_binding(tail, safeties):
    src = LOOP + textwrap.indent(tail, " " * 12).replace("            return", "        return")
    got = [f for f in engine.check(src.encode(), Settings()).findings if f.code == "GM104"]
    assert [f.safety.value for f in got] == safeties, [f.message for f in got]


@pytest.mark.parametrize("body,reported", [
    # a tensor on some paths, a Python bool on the others: the test breaks where it is a tensor
    ("m = False\nif self.training:\n    m = h.sum() > 0\nif m:\n    h = h * 2\nreturn h\n", True),
    ("m = False\nif self.training:\n    m = h.sum() > 0\nif not m or mask is None:\n    h = h * 2\nreturn h\n", True),
    ("n = 0\nif mask is not None:\n    n = mask.sum()\nif n > 3:\n    h = h * 2\nreturn h\n", True),
    # a test that never reads the tensor's value (identity, None)
    ("m = None\nif self.training:\n    m = h > 0\nif m is not None:\n    h = h * 2\nreturn h\n", False),
    # Python values only on every path (a shape, a Python value from tensor data)
    ("m = False\nif self.training:\n    m = h.dim() == 3\nif m:\n    h = h * 2\nreturn h\n", False),
    ("m = False\nif self.training:\n    m = h.sum().item() > 0\nif m:\n    h = h * 2\nreturn h\n", False),
])
def test_name_that_is_a_tensor_on_some_paths(body, reported):
    """A name bound to a tensor on some paths and to a trace-time Python value on others (#23's
    speecht5 LayerDrop): its test is reported, with no torch.where fix (it is no tensor everywhere)."""
    got = findings(body)
    assert bool(got) == reported, [f.message for f in got]
    assert all(f.replacement is None and "a tensor on some paths and a Python value on others" in f.message
               for f in got), [f.message for f in got]


LOOP_FALSE_FIRST = """
import torch
from torch import nn

class Enc(nn.Module):
    def __init__(self, layerdrop):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))
        self.layerdrop = layerdrop

    def forward(self, h, synced=False):
        for layer in self.layers:
            skip = False
            if self.training{gate}:
                draw = torch.rand([])
                skip = draw {op} self.layerdrop
{tail}        return h
"""


@pytest.mark.parametrize("gate,tail,safeties", [
    # p not known: the guard at the binding decides every test of the name (speecht5, 4.x and 5.x)
    ("", "            if skip and not synced:\n                continue\n            h = layer(h)\n", ["safe"]),
    ("", "            if not skip or synced:\n                h = layer(h)\n            if skip:\n                h = h * 1.0\n",
     ["safe", "none"]),
    # p > 0.0 shown: the unsafe torch.cond form where the loop ends with the layer call (wav2vec2 5.x)
    (" and self.layerdrop > 0.0", "            if not skip or synced:\n                h = layer(h)\n", ["unsafe"]),
    # ... not when something follows the call (speecht5's encoder), or the `or` operand is a call
    (" and self.layerdrop > 0.0", "            if not skip or synced:\n                h = layer(h)\n            h = h + 1\n",
     ["none"]),
    (" and self.layerdrop > 0.0", "            if not skip or self.synced():\n                h = layer(h)\n", ["none"]),
])
def test_gm104_layerdrop_false_first(gate, tail, safeties):
    src = LOOP_FALSE_FIRST.format(gate=gate, tail=tail, op="<")
    got = [f for f in engine.check(src.encode(), Settings(unsafe_fixes=True)).findings if f.code == "GM104"]
    assert [f.safety.value for f in got] == safeties, [f.message for f in got]


@pytest.mark.parametrize("gate,safety,words", [
    # `draw <= p` (wav2vec2-bert): a draw of 0.0 is kept, so no p <= 0.0 guard; with p > 0.0 shown,
    # the torch.cond form keeps the comparison as written
    (" and self.layerdrop > 0.0", "unsafe", "torch.cond"),
    ("", "none", "`<=` keeps a draw of exactly 0.0"),
])
def test_gm104_layerdrop_inclusive(gate, safety, words):
    tail = "            if not skip:\n                h = layer(h)\n"
    src = LOOP_FALSE_FIRST.format(gate=gate, tail=tail, op="<=")
    result = engine.check(src.encode(), Settings(unsafe_fixes=True), fix=True)
    (f,) = [f for f in engine.check(src.encode(), Settings(unsafe_fixes=True)).findings if f.code == "GM104"]
    assert f.safety.value == safety and words in f.message, f.message
    assert ("draw <= self.layerdrop," in result.source.decode()) == (safety == "unsafe")


@pytest.mark.parametrize("test,reported", [
    ("torch.rand(1) >= self.p", True),  # torchvision v2: fixed with the guard joined by `or`
    ("(torch.compiler.is_compiling() and self.p <= 0.0 and torch._assert_async(torch.rand(1) < 1.0, 'k') "
     "is None) or torch.rand(1) >= self.p", False),  # that fix, linted again
    ("(torch.compiler.is_compiling() and self.fast) or x.sum() > 0", True),  # a user's own test: still a break
])
def test_draw_at_least_guard_and_what_counts_as_it(test, reported):
    src = (f"import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
           f"        if {test}:\n            return x\n        return x.roll(1, -1)\n")
    found = [f for f in engine.check(src.encode(), Settings()).findings if f.code == "GM101"]
    assert bool(found) is reported
    if found and "rand" in test:
        assert found[0].safety.value == "safe" and "decides the test, True" in found[0].message


# issue 24, eager verbatim: a proved-exact torch.where is still compile-only (the short form, eager
# too, was slower in eager in every case perf/eager_short_form.py measured)
PROVED_IF = "if h.sum() > 0:\n    y = h * 2\nelse:\n    y = h - 1\nreturn y\n"


def test_proved_if_keeps_eager_code_verbatim():
    (f,) = findings(PROVED_IF)
    assert f.safety.value == "safe" and "under torch.compile only (eager runs the `if` unchanged)" in f.message
    src = HEAD + textwrap.indent(PROVED_IF, " " * 8)
    out = engine.check(src.encode(), Settings(), fix=True).source.decode()
    assert out.endswith(
        "        if torch.compiler.is_compiling():\n"
        "            y = torch.where(h.sum() > 0, h * 2, h - 1)\n"
        "        elif h.sum() > 0:\n            y = h * 2\n        else:\n            y = h - 1\n        return y\n")


@pytest.mark.parametrize("body", [
    "y = h * 2 if h.sum() > 0 else -h\nreturn y\n",
    "return h * 2 if h.sum() > 0 else -h\n",
    "y = torch.cat([h, h * 2 if h.sum() > 0 else -h])\nreturn y\n",
])
def test_proved_ternary_keeps_eager_line_verbatim(body):
    (f,) = findings(body, "GM102")
    assert f.safety.value == "safe" and "eager runs the line unchanged" in f.message
    src = HEAD + textwrap.indent(body, " " * 8)
    out = engine.check(src.encode(), Settings(), fix=True).source.decode()
    line = body.splitlines()[0]
    assert f"        else:\n            {line}\n" in out and "if torch.compiler.is_compiling():" in out


@pytest.mark.parametrize("body", [
    "torch.sigmoid_(h * 2 if h.sum() > 0 else -h)\nreturn h\n",
    "z = h.sum() > 0 and (h * 2 if h.sum() > 0 else -h)\nreturn z\n",
])
def test_proved_ternary_without_compile_only_form_is_unsafe(body):
    """Every proof is made, but no compile-only form fits: torch.where in place would change eager
    code (and slow it), so the fix is only offered as unsafe."""
    (f,) = findings(body, "GM102")
    assert f.safety.value == "unsafe"
    assert "replaces the ternary in eager too" in f.message and "no compile-only form" in f.message
    src = HEAD + textwrap.indent(body, " " * 8)
    assert engine.check(src.encode(), Settings(), fix=True).source.decode() == src  # --fix leaves it


def test_elif_arms_guard_each_their_own_tensor():
    """Arms that read different tensors (`h`, `k`): each arm's double where guards its own, not the
    tensor of the last arm proved."""
    src = ("import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
           "    def forward(self, x: torch.Tensor, g: torch.Tensor):\n"
           "        h = x * 3\n        k = g * 2\n        m = x.mean()\n"
           "        if m > 1:\n            y = torch.ones(4)\n"
           "        elif m < -1:\n            y = torch.sqrt(h) - h.amax()\n"
           "        else:\n            y = torch.tanh(k) - k.amax()\n        return y\n")
    out = engine.check(src.encode(), Settings(unsafe_fixes=True), fix=True).source.decode()
    assert "torch.sqrt(torch.where(m > 1, 1.0, torch.where(m < -1, h, 1.0)))" in out, out
    assert "torch.tanh(torch.where(m > 1, 1.0, torch.where(m < -1, 1.0, k)))" in out, out


def test_ternary_of_one_tensor_gets_the_double_where():
    """GM102 shares the proofs: `h / h.abs().amax()` reads `h` only, so the double where guards it and
    the compile-only form needs no gradients-off check; with a second tensor it does."""
    (f,) = findings("y = h / h.abs().amax() if h.abs().amax() > 1 else h * 2\nreturn y\n", "GM102")
    assert f.safety.value == "safe" and "double where: exact gradients" in f.message, f.message
    assert "is_grad_enabled" not in f.message
    (g,) = findings("y = h / x.abs().amax() if h.abs().amax() > 1 else h * 2\nreturn y\n", "GM102")
    assert "not torch.is_grad_enabled()" in g.message, g.message


@pytest.mark.parametrize("value,grad_off", [
    ("h.masked_fill(h > 1, torch.finfo(h.dtype).min) + 1", False),  # finfo is a number, masked_fill masks
    ("h.sum() * 2 + h.mean() + h", False),  # sums and arithmetic with numbers
    ("(h * x).clamp(-1, 1)", True),  # each factor's gradient is the other: NaN where it is NaN or inf
    ("h.amax(-1, keepdim=True) + x", True),  # amax's backward divides by the count of maxima: NaN at NaN
    ("h.amax(-1, keepdim=True) + h", False),  # ... but `h` is the one tensor read: the double where guards it
])
def test_untaken_branch_gradient_stays_zero(value, grad_off):
    """Ops that route, sum or mask the gradient keep torch.where's zero exact at NaN and +-inf; others
    make the compiled form wait for gradients off, unless the values read one tensor only (the double
    where guards it)."""
    (f,) = findings(f"if h.sum() > 0:\n    y = {value}\nelse:\n    y = h - 1\nreturn y\n")
    assert f.safety.value == "safe", f.message
    assert ("not torch.is_grad_enabled()" in f.message) == grad_off, f.message


PASS_THROUGH = """
import torch
from torch import nn


class P(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(3, 3))

    def project(self, Q, eps: float = 0.9):
        norm = torch.linalg.norm(Q, ord="fro")
        if torch.isfinite(norm) and norm > eps:
            Q = Q * (eps / (norm + 1e-12))
        return Q

    def forward(self, x):
        return x @ self.project(self.weight)
"""


def test_gradients_off_form_checks_what_the_if_hands_on():
    """peft's psoft `_project_Q`: the compiled form that waits for gradients off gave a new tensor
    where the `if` handed on `Q` itself; called under no_grad with a parameter, the result no longer
    required grad and a later backward failed. It now also checks `not Q.requires_grad` while tracing."""
    import torch

    out = engine.check(PASS_THROUGH.encode(), Settings(unsafe_fixes=True), fix=True)  # unsafe: Q is handed back
    fixed = out.source.decode()
    assert "not torch.is_grad_enabled()" in fixed and "not Q.requires_grad" in fixed, fixed
    spaces = []
    for src in (PASS_THROUGH, fixed):
        ns: dict = {}
        exec(compile(src, "<pass-through>", "exec"), ns)
        spaces.append(ns)
    for value in (0.01, 2.0):  # the branch not taken, taken
        got = []
        for ns, compiled in ((spaces[0], False), (spaces[1], True)):
            torch._dynamo.reset()
            project = ns["P"]().project
            project = torch.compile(project, backend="aot_eager") if compiled else project
            param = torch.nn.Parameter(torch.full((3, 3), value))
            with torch.no_grad():
                res = project(param)
            if res.requires_grad:
                res.sum().backward()
            got.append((res.detach(), res.requires_grad, param.grad))
        (a, ra, ga), (b, rb, gb) = got
        assert torch.equal(a, b) and ra == rb, (value, ra, rb)
        assert (ga is None) == (gb is None) and (ga is None or torch.equal(ga, gb))
        torch._dynamo.reset()
        with torch.no_grad():  # a tensor that needs no grad takes the torch.where form: no break
            explained = torch._dynamo.explain(spaces[1]["P"]().project)(torch.full((3, 3), value))
        assert explained.graph_break_count == 0


MASKED_INPUT = """
import torch
from torch import nn


class M(nn.Module):
    def forward(self, y, m):
        if m.any():
            y.masked_fill_(m, 0.0)
        return y * 2
"""


def test_masked_update_of_an_expanded_input_keeps_the_if():
    """An audit of the no-op guard form: run alone under compile, `y.masked_fill_(m, 0.0)` on an
    `expand`ed input raised (its elements share memory) where the `if` selected nothing and never
    ran it. The form now also checks `y.is_contiguous()` while tracing: an expanded `y` keeps the `if`.
    (Gradients off: `y` is a parameter, so the form also needs them off.)"""
    import torch

    fixed = engine.check(MASKED_INPUT.encode(), Settings(), fix=True).source.decode()
    assert "y.is_contiguous()" in fixed, fixed
    ns: dict = {}
    exec(compile(fixed, "<masked-input>", "exec"), ns)
    model = ns["M"]()
    none = torch.zeros(3, 4, dtype=torch.bool)
    for y, breaks in ((torch.randn(1, 4).expand(3, 4), 1), (torch.randn(3, 4), 0)):
        want = MODEL_RUN(y, none)
        torch._dynamo.reset()
        with torch.no_grad():
            got = torch.compile(model, backend="aot_eager")(y, none)
            assert torch.equal(got, want)
            torch._dynamo.reset()
            assert torch._dynamo.explain(model)(y, none).graph_break_count == breaks
    torch._dynamo.reset()


def MODEL_RUN(y, m):  # the original's eager forward
    if m.any():
        y.masked_fill_(m, 0.0)
    return y * 2


@pytest.mark.parametrize("default,reported", [
    ("False", False),  # fastspeech2_conformer: `output_attentions: torch.Tensor | None = False`, a flag
    ("0.5", False),
    ("None", True),  # the usual Optional: the annotation is trusted
    ("", True),
])
def test_tensor_annotation_with_a_flag_default(default, reported):
    """An annotation that says Tensor, contradicted by a bool or number default, proves nothing."""
    src = HEAD.replace("def forward(self, x, mask=None):",
                       f"def forward(self, x, flag: torch.Tensor | None{' = ' + default if default else ''}):")
    src += "        if not flag:\n            h = h * 2\n        return h\n"
    got = [f for f in engine.check(src.encode(), Settings()).findings if f.code == "GM101"]
    assert bool(got) == reported, [f.message for f in got]


def test_gm104_in_a_generator_names_the_function_that_iterates_it():
    """fairseq's LayerDropModuleList.__iter__: the generator is traced where `for layer in self.layers`
    iterates it, so the frame Dynamo skips is that caller's (measured by the fairseq audit)."""
    src = b'''import torch
from torch import nn


class LayerDrop(nn.ModuleList):
    def __iter__(self):
        probs = torch.rand(len(self))
        for i, m in enumerate(super().__iter__()):
            if probs[i] > 0.5:
                yield m


class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = LayerDrop([nn.Linear(4, 4)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
'''
    (finding,) = engine.check(src, Settings()).findings
    assert finding.code == "GM104" and "of the generator `__iter__`" in finding.message
    assert "skip the whole function that iterates it" in finding.message
