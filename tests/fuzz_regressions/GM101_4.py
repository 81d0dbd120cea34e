"""NaN gradients through the untaken branch (found by the differential fuzzer under torch.compile,
seeds 347, 593, 607, 675, 695, 817 of 300..899; all six reduced to this shape).

`h` holds a NaN (in the fuzzer: `sqrt` of a negative number, spread by a `mean`). The `if` takes the
`clamp` branch, whose gradient at NaN is 0. `torch.where(c, h ** 2, h.clamp(-1, 1))` also runs the backward
of the untaken `h ** 2`: 0 * 2h, which is NaN where h is NaN, so the compiled gradients were NaN
everywhere the `if` gave 0. A derivative that depends on the input (`** 2`, `tanh`, `gelu`,
`softmax`, `amax`, a product of tensors) now counts like `sqrt`: with one condition the double
where guards its input (`torch.where(c, h, 1.0) ** 2`, exact), else gradients must be off.
"""
CHECK_COMPILED = True

import torch


def step(x, c):
    h = x * 1.0
    return h ** 2 if c.norm() > 10 else h.clamp(min=-1, max=1)


compiled_step = torch.compile(step)


def make():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=g)
    x[1, 2] = float("nan")
    x.requires_grad_()
    return step, [(x, torch.full((3, 4), 0.5)), (x, torch.full((3, 4), 20.0))]
