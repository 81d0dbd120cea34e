"""Reduced from seed 7873 (GM101_9.py): an alias made before the `if`, modified in place after it.

Where the test is false the `if` keeps `h`, the very tensor `keep` is, so `keep.mul_(3.0)` triples `h`
too: eager returns 6 for ones. torch.where makes a new tensor, so the compiled fix returned 4. The fix
is UNSAFE (fixes/where/after.aliases); the UNSAFE fix, compiled, still shows the difference.
"""
CHECK_COMPILED = True
UNSAFE_FIX_CHANGES_COMPILED = True

import torch


def step(x: torch.Tensor, c: torch.Tensor):
    h = x * 1.0
    keep = h
    if c.min() >= 0:
        h = h * 2
    keep.mul_(3.0)
    return h + keep


compiled_step = torch.compile(step)


def make():
    x = torch.ones(2, 3)
    return step, [(x, torch.ones(2, 3)), (x, -torch.ones(2, 3))]
