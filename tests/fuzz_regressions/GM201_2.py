"""Found by perf/fuzz.py (seed 100 of the issue #8 confirmation batch, "more breaks 3 -> 6"),
minimised by hand: a harness artefact.

Dynamo cannot resume after a graph break inside a `try` block: at the `print` it compiles up to
the previous resumable state and skips the rest of the function, which then runs in eager
("Encountered graph break that we cannot resume from ... skipping the rest of the function"), so
the tensor `if` after it is never traced and breaks nothing. The SAFE GM201 guard removes that
break; Dynamo now traces the rest and breaks at the `if` (its fix is refused: the branch calls a
module). More graphs, but far less eager code: tests/fuzzcheck.py no longer calls that more breaks.
"""
CHECK_BREAKS = True

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, c):
        h = self.proj(x) + 1  # compiled: the state before the `try` is resumable
        try:
            print("value", h)
        except ValueError:
            h = h * 0
        if c.sum() > 0:
            h = self.proj(h)
        return h * 2


def make():
    torch.manual_seed(0)
    return Model(), [(torch.randn(3, 4, requires_grad=True), torch.ones(3)),
                     (torch.randn(3, 4, requires_grad=True), -torch.ones(3))]
