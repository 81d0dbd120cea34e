"""Found by perf/fuzz.py --compiled (seed 4552 of 3800..4599), minimised by hand.

An `if` that returns early, with a last `return` whose value is made from `torch.zeros_like(h)`: it
reads `h`, but nothing differentiable. The `if`'s other branch returned `h ** 2`, so when the test
was false no parameter got a gradient (`.grad` stays None); `torch.where` returned a value that
depends on `h` in both cases and gave the Linear layer zero gradients instead. The check that a
name is read in both branches counted `h` because the function reads it before the `if` too; now
it follows what each branch value is computed from (constructors such as `zeros_like` read
nothing differentiable) and excuses only what the code after the `if` reads, so the fix waits for
gradients off.
"""
CHECK_COMPILED = True

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, c: torch.Tensor):
        h = self.proj(x)
        h = h + h.tanh()
        if (c < 0).any():
            return h ** 2
        t = torch.zeros_like(h)
        h = t * 0.5 + 1
        return torch.nan_to_num(h)


def make():
    torch.manual_seed(0)
    return Model(), [(torch.randn(3, 4, requires_grad=True), -torch.ones(3)),
                     (torch.randn(3, 4, requires_grad=True), torch.ones(3))]
