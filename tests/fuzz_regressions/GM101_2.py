"""Found by perf/fuzz.py (seed 7511), minimised by hand.

`h` is computed with autograd on, then updated in a one-sided `if` under `torch.no_grad()`. The
SAFE GM101 fix writes `h = torch.where((c > 0).all(), h + 0.25, h)`: under no_grad the result never
requires grad, so when the test is false the function now returns a detached `h` where the `if`
returned the autograd-tracked one: gradients to `x` and the Linear weights are lost.
Since issue #13 the fix is compile-only: eager runs the original, and the hazard shows in the
compiled run of the UNSAFE fix (aot_eager), which the regression test checks.
"""
UNSAFE_FIX_CHANGES_COMPILED = True

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.FloatTensor, c: torch.Tensor):
        h = self.proj(x)
        with torch.no_grad():
            if (c > 0).all():
                h = h + 0.25
        return h


def make():
    torch.manual_seed(0)
    return Model(), [(torch.randn(3, 4, requires_grad=True), torch.ones(3)),
                     (torch.randn(3, 4, requires_grad=True), -torch.ones(3))]
