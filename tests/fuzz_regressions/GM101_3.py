"""Aliasing, the GM101 side of issue #8 (found by review of the fuzz failures GM101_1/GM102_1).

`if c.sum() > 0: y = h` makes `y` the very tensor `h` when that branch runs, so a later in-place
change of `h` (`h.add_(1)`) also changes `y`. `torch.where(c.sum() > 0, h, h * 2)` makes a new
tensor, which the change no longer reaches: the output differs when the test is true. The fix must
be UNSAFE (not applied by default).
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
        if c.sum() > 0:
            y = h
        else:
            y = h * 2
        h.add_(1)
        return y, h


def make():
    torch.manual_seed(0)
    return Model(), [(torch.randn(3, 4, requires_grad=True), torch.ones(3)),
                     (torch.randn(3, 4, requires_grad=True), -torch.ones(3))]
