"""Aliasing, the GM102 twin of GM101_3.py.

`y = h if c.sum() > 0 else h * 2` makes `y` the very tensor `h` when the test is true, so a later
in-place change of `h` (`h[0] = 0`) also changes `y`; `torch.where` makes a new tensor that the
change does not reach. The fix must be UNSAFE (not applied by default).
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
        y = h if c.sum() > 0 else h * 2
        h[0] = 0
        return y, h


def make():
    torch.manual_seed(0)
    return Model(), [(torch.randn(3, 4, requires_grad=True), torch.ones(3)),
                     (torch.randn(3, 4, requires_grad=True), -torch.ones(3))]
