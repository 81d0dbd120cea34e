"""Found by perf/fuzz.py --compiled (seed 18034 of 17600..18199), kept as generated (a shorter copy did
not show it). torch.compile's,
exposed by the fix: the SAFE fix defers the logging call (no break), the remaining `.item()` break
inside the same `no_grad` block then splits the graph after the view `h = h[0]`, and under aot_eager
the gradient of `h * 2` (the `not isfinite` return) reaches `x` ([2., 2., 2., 2.] in its first row) where eager gives none. The
same difference shows with no fix at all when a break (a `print`) comes first in the block and the
`.item()` one after it (test_fuzz.py); unfixed, this program's first break lies in the `try` and the
compiled run matches eager. The fix itself is exact: eager runs the logging call verbatim, and the
compiled path only hands it to a deferred helper; no rewrite of ours can keep torch.compile from
splitting the graph where the user's own `.item()` breaks it.
"""
CHECK_COMPILED = True
KNOWN_FAILURE = "torch.compile gives x a gradient through a view made under no_grad (seed 18034)"

import torch as th
import logging
import warnings
from warnings import warn

from torch import nn
from torch.nn import functional as F



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


def step(x: th.Tensor, c0: th.Tensor, mask=None):
    h = x * 1.0
    with th.no_grad():
        try:
            logging.info('shape %s', h.shape)
        except (ValueError, AssertionError) as e:
            h = h * 0
        # a comment before the test
        d1 = c0.detach()
        if (d1 < 0).any():  # why
            # inside
            h = h ** 2  # trailing
            
        else:
            h = h[0]
        def inner2(h):
            d3 = th.clamp(c0, -100, 100)
            if (c0.sum().item() > 0) or (d3.norm() > 10):
                h = h.clamp(min=-1, max=1)
            else:
                h = h
            return h
        h = inner2(h)
    d4 = c0 * 2.0
    if not (d4.isfinite().all()):
        return h * 2
    t5 = h / 2
    h = t5 * 0.5 + 1
    return -h

compiled_step = th.compile(step)


def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip(['pos', 'neg', 'nan', 'big'], ['torch.rand(3, 4, generator=g) * 0.4 + 0.6', '-(torch.rand(3, 4, generator=g) * 0.4 + 0.6)', "torch.where(torch.arange(12).reshape(3, 4) == 5, float('nan'), torch.rand(3, 4, generator=g) + 0.6)", 'torch.rand(3, 4, generator=g) * 10 + 20']))
    fn = getattr(step, '_torchdynamo_orig_callable', step)
    inputs = []
    for i, combo in enumerate(itertools.product(*[['big', 'nan', 'neg', 'pos']])):
        x = torch.randn(3, 4, generator=g).requires_grad_()
        controls = [eval(builders[s], {"torch": torch, "g": g}) for s in combo]
        mask = torch.rand(3, 4, generator=g) > 0.3 if i % 2 else None
        inputs.append((x, *controls, mask))
    return fn, inputs
