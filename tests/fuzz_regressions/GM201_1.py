"""Found by perf/fuzz.py (seed 8500, "more breaks 2 -> 3"), minimised by hand: a harness artefact.

The tensor ternary in `inner1` breaks the graph (its fix is unsafe: `h` is not provably a tensor),
so Dynamo resumes `forward` in a new frame after `h = inner1(h)`. Before the fix, that frame stops
at once on `print` (a break, but no graph: no op was traced). After the SAFE GM201 guard the frame
runs to its end and compiles a graph with no op at all (input -> output). `explain()` counts
`graph_count - 1` breaks, so 3 graphs with ops + 1 empty graph read as one break more, though the
fix removed the `print` break. tests/fuzzcheck.py now counts only graphs that hold an op.
"""
CHECK_BREAKS = True

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, c):
        h = self.proj(x)

        def inner1(h):
            return h / 2 if c.isfinite().all() else h.clamp(min=-1, max=1)

        h = inner1(h)

        def inner2(h):
            print("value", h)
            return h

        return inner2(h)


def make():
    torch.manual_seed(0)
    return Model(), [(torch.randn(3, 4, requires_grad=True), torch.ones(3)),
                     (torch.randn(3, 4, requires_grad=True), torch.tensor([1.0, float("nan"), 1.0]))]
