"""Found by perf/fuzz.py --compiled: seed 7160 of 7000..8599, the generated program as it is.

Its SAFE GM101 fixes (the `if c1.sum() > 0` and the `if m2.any()` in the `else` branch, either one)
made the compiled forward fail inside Dynamo (torch 2.13, Python 3.11 and 3.12): "exception table
entry start instruction has no offset". The function has a `try` statement (an exception table), and
Dynamo rewrites its bytecode after a graph break; for some layouts of the fixed code it loses an
entry's start. The unfixed function compiles, and so do near variants of the fixed one (reductions in
the commit that added this file: another `else`, two operands in the guard's `and`): a layout triggers
it, not a form a rule can foresee. So a SAFE GM1xx fix in a function with a `try` is UNSAFE now
(GraphMendRule._try_hazard), and the UNSAFE fixes, compiled, still show the failure.
"""
CHECK_COMPILED = True
UNSAFE_FIX_CHANGES_COMPILED = True

import torch
import logging
import warnings

from torch import nn
import torch.nn.functional as F



class FuzzError(Exception):
    pass


def helper(h):
    h = h * 0.75
    return h


def helper_body(h: torch.FloatTensor, c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, mask=None):
    h = h * 1.5
    assert not (c1.sum().item() > 0)
    for i in range(2):
        h = h * 0.5
    return h


def eager_util(x):  # fuzz:eager-begin
    if x.sum() > 0:
        print('eager', x)
        x = x * 2 if x.mean() > 0 else x
    return x  # fuzz:eager-end


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.flag = True
        self.calls = 0
        self.register_buffer('perm', torch.tensor([2, 0, 1]))
        self.register_buffer('far', torch.tensor([0, 7, 1]))  # out of range: raises if its branch runs
        self.layerdrop = 1.5
        self.log = logging.getLogger('fuzz.self')

    def scale_up(self, h):
        return h * 3.0

    def forward(self, x: torch.FloatTensor, c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, mask=None):
        h = x * 1.0
        with torch.no_grad():
            h = torch.relu(h * 2 if h.dim() == 2 and (c0.norm() > 10) else h)
            h = torch.sqrt(h)
            d1 = c0.clone()
            scale = 2.5 if d1.sum() > 0 else 1
            h = h * scale
            if c1.min() >= 0:
                logging.info('shape %s', h.shape)
                try:
                    if c2.sum().item() > 0:
                        h = h.exp()
                except (ValueError, AssertionError) as e:
                    h = h * 0
            else:
                if c1.sum() > 0:
                    h = torch.sqrt(h)
                else:
                    h = h - 1
                m2 = c1 > 0
                buf = torch.zeros_like(h.detach())
                if m2.any():
                    buf[1:][m2[1:]] = 1
                    buf.masked_fill_(m2, 0.5)
                h = h + buf
                def inner3(h):
                    h = self.proj(h)
                    return h
                h = inner3(h)
            for i in range(2):
                h = h + 1
        h = helper_body(h, c0, c1, c2, mask=mask)
        if not (not (c2 > 0).all()):
            return h[2]
        elif not (torch.all(c1 >= 0)):
            return h * 2
        else:
            return h - 1


def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip(['pos', 'neg', 'nan', 'big'], ['torch.rand(3, 4, generator=g) * 0.4 + 0.6', '-(torch.rand(3, 4, generator=g) * 0.4 + 0.6)', "torch.where(torch.arange(12).reshape(3, 4) == 5, float('nan'), torch.rand(3, 4, generator=g) + 0.6)", 'torch.rand(3, 4, generator=g) * 10 + 20']))
    fn = Model()
    inputs = []
    for i, combo in enumerate(itertools.product(*[['big', 'neg', 'pos'], ['neg', 'pos'], ['neg', 'pos']])):
        x = torch.randn(3, 4, generator=g).requires_grad_()
        controls = [eval(builders[s], {"torch": torch, "g": g}) for s in combo]
        mask = torch.rand(3, 4, generator=g) > 0.3 if i % 2 else None
        inputs.append((x, *controls, mask))
    return fn, inputs

