"""Seed 259 of the compiled run, reduced: no graphmend-lint fix in it. The program is the
original with its LayerDrop test gone (what the p = 0.0 guard does under compile: the loop no
longer breaks). aot_eager gives `proj.weight` a zero gradient where eager gives None (the layer's
output is replaced by `torch.ones_like(h) * 3` on this input); the eager backend gives None. With
the break in the loop (the original program), aot_eager gives None too. So the difference is
torch.compile's (torch 2.13), exposed by a graph that no longer breaks; printed below.
Run: python perf/results/differential_fuzz/failures/seed_259_reduced.py
"""
import torch, sys
from torch import nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
    def forward(self, x, c0, c1, c2):
        h = self.proj(x)
        z = x * 1.0
        for _ in range(2):
            dropout_probability1 = torch.rand([])
            h = h * 0.5 + 1
        h = h - 1 if c0.sum().item() > 0 else h ** 2
        d2 = c0.detach()
        if d2.sum().item() > 0:
            h = h.abs()
        else:
            h = torch.ones_like(h) * 3
        z = z ** 2 if (torch.all(c0 >= 0)) and (c1.sum().item() > 0) else z - 1
        h = h ** 2
        h = h + z.mean()
        return h.clamp(min=-1, max=1), h
m = Model()
for mode in ("eager", "aot_eager", "eager_be"):
    torch._dynamo.reset()
    f = m if mode == "eager" else torch.compile(m, backend="aot_eager" if mode == "aot_eager" else "eager")
    x = torch.randn(3, 4, requires_grad=True); c0 = -torch.ones(3, 4); c1 = -torch.ones(3, 4); c2 = -torch.ones(3, 4)
    out = f(x, c0, c1, c2)
    g = torch.autograd.grad(sum(o.sum() for o in out), [x, m.proj.weight], allow_unused=True)
    print(mode, None if g[1] is None else g[1].abs().sum().item())
