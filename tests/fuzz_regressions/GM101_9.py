"""Found by perf/fuzz.py --compiled: seed 7873 of 7000..8599, the generated program as it is.

`keep = h` before `if d2.min() >= 0: h = h * 2`, then `keep.mul_(1.0)`: where the test is false `h` is
`keep`, so the in-place op changes `h` too; torch.where makes a new tensor, which it does not reach.
The GM101 fix missed the alias (`after.aliases`) and was SAFE. Here `mul_(1.0)` keeps the values, and the
failure showed otherwise: on input 12 `keep` is relu's saved output, and with the break removed the
in-place op and the saved tensor share one graph, so AOTAutograd failed at compile time ("modified by
an inplace operation"), where eager (which needs no backward here) and the unfixed compiled code run.
The fix is UNSAFE now (an alias of a kept name modified in place later); GM101_10.py shows the values
it would change.
"""
CHECK_COMPILED = True

import torch as th
import logging
import warnings

from torch import nn
from torch.nn import functional as F

logger = logging.getLogger('fuzz')


class FuzzError(Exception):
    pass


def helper(h):
    h = h * 0.75
    return h


def eager_util(x):  # fuzz:eager-begin
    if x.sum() > 0:
        print('eager', x)
        x = x * 2 if x.mean() > 0 else x
    return x  # fuzz:eager-end


def step(x, c0, c1, c2, mask=None):
    h = x
    for w in (1.0, 2.0):
        h = h * 0.5
    if c0.min() >= 0:
        if th.any(c1 > 0):
            t1 = h
            h = t1 + 1
        else:
            h = h[:, :2]
    else:
        h = h.relu()
    d2 = c2 + 0.0
    keep = h
    if d2.min() >= 0:
        h = h * 2
    keep.mul_(1.0)
    h = h + keep
    h = h * 0.5 + 1 if not (c0.abs().max() < 5) else h.relu()
    if c1.max() > 15:
        h = h.clamp(min=-1, max=1)
        g = h + 1.5
    else:
        h = th.zeros_like(h)
        g = h.double()
    h = h + g
    d3 = th.clamp(c1, -100, 100)
    if (d3.mean() < 0) and (c2.norm() > 10):
        return h - h.amax(dim=-1, keepdim=True)
    elif c2.sum() > 0:
        return h
    else:
        return h[0]

compiled_step = th.compile(step)


def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip(['pos', 'neg', 'nan', 'big'], ['torch.rand(3, 4, generator=g) * 0.4 + 0.6', '-(torch.rand(3, 4, generator=g) * 0.4 + 0.6)', "torch.where(torch.arange(12).reshape(3, 4) == 5, float('nan'), torch.rand(3, 4, generator=g) + 0.6)", 'torch.rand(3, 4, generator=g) * 10 + 20']))
    fn = getattr(step, '_torchdynamo_orig_callable', step)
    inputs = []
    for i, combo in enumerate(itertools.product(*[['big', 'neg', 'pos'], ['big', 'neg', 'pos'], ['big', 'neg', 'pos']])):
        x = torch.randn(3, 4, generator=g).requires_grad_()
        controls = [eval(builders[s], {"torch": torch, "g": g}) for s in combo]
        mask = torch.rand(3, 4, generator=g) > 0.3 if i % 2 else None
        inputs.append((x, *controls, mask))
    return fn, inputs

