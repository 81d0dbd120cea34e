"""Found by perf/fuzz.py --compiled (seeds 4804 and 4980 of 4600..5399) after 60f8ada, minimised by hand.

A branch with a setup statement, `t1 = torch.sqrt(h)`, then `h = t1 + 1`; the other branch keeps `h`.
When the test is false, `torch.where` still runs the backward of the untaken `sqrt`, which is NaN at
negative `h`, where the `if` gave finite gradients. The fix waits for gradients off here because `t1`
is read in one branch only; 60f8ada, following names to what they were computed from, also followed
`h` in the other branch into this branch's own `h = t1 + 1` and found `t1` on both sides. A branch
reads the value a name had before the `if`: assignments inside the `if` are not followed, except a
branch's own setup names.
"""
CHECK_COMPILED = True

import torch


def step(x, c):
    h = x * 1.0
    if torch.isnan(c).any():
        t1 = torch.sqrt(h)
        h = t1 + 1
    else:
        h = h
    h = h * 2
    return h


compiled_step = torch.compile(step)


def make():
    g = torch.Generator().manual_seed(0)
    x = -(torch.rand(3, 4, generator=g) + 0.5)
    x.requires_grad_()
    nan = torch.full((3,), float("nan"))
    return step, [(x, nan), (x, torch.ones(3))]
