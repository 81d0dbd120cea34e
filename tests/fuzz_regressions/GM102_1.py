"""The GM102 (ternary) twin of GM101_1.py (found by perf/fuzz.py, seed 5860).

The SAFE GM102 fix turns the ternary into `h = torch.where(c.sum() > 0, torch.sigmoid(h), h * 2)`.
Values and gradients are identical, but the tensor's `grad_fn` changes (SigmoidBackward0 or
MulBackward0 -> WhereBackward0), and printing the tensor in eager mode shows it:
    value tensor([[...]], grad_fn=<SigmoidBackward0>)   before
    value tensor([[...]], grad_fn=<WhereBackward0>)     after
Anything that prints, logs or reads `h.grad_fn` after the fix sees the difference.
Since issue #8 the GM102 fix is UNSAFE when the rebound name is observed later like this.
Since issue #13 the fix is compile-only (eager runs the line unchanged) and SAFE: under
torch.compile the printed value shows CompiledFunctionBackward either way. The oracle checks that
eager prints stay identical.
"""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.FloatTensor, c: torch.Tensor):
        h = self.proj(x)
        h = torch.sigmoid(h) if c.sum() > 0 else h * 2
        print("value", h)
        return h


def make():
    torch.manual_seed(0)
    return Model(), [(torch.randn(3, 4, requires_grad=True), torch.ones(3)),
                     (torch.randn(3, 4, requires_grad=True), -torch.ones(3))]
