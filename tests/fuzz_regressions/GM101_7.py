"""Found by perf/fuzz.py --compiled (seed 6589 of 5400..6999), minimised by hand. torch.compile's, not the fix's.

A view taken under `no_grad` (`h = h[0]`) of a tensor that requires grad inherits `requires_grad=True`
in eager, with no `grad_fn`: what is computed from it "requires grad" but no input gets a gradient
(pytorch/pytorch#11390, #173926). Here a graph break inside the `no_grad` block (the first `if`, which
GM101 does not fix: `h[0]` may raise when its branch is not taken) makes Dynamo resume there; in the resumed frame's
graph AOTAutograd treats the view as not requiring grad. Unfixed, the second `if` breaks too, the view
leaves the graph as an output and gets eager's flag back; the SAFE fix of the second `if` keeps it in
the graph, so the compiled output does not require grad. Outputs are equal and no input gets a gradient
either way: the oracle counts "[None] vs []" as the same gradients (fuzzcheck._no_gradient_either_way).
The same difference shows with no fix at all when nothing breaks after the block (test_fuzz.py).
"""
CHECK_COMPILED = True

import torch


def step(x, c0, c1):
    h = x * 1.0
    with torch.no_grad():
        if torch.any(c0 > 0):
            h = torch.sqrt(h)
        elif torch.any(c1 > 0) and c1.max() > 15:
            h = torch.sigmoid(h)
        else:
            h = h[0]
    if torch.any(c1 > 0):
        h = h * 2
    return h - 1


compiled_step = torch.compile(step)


def make():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(3, 4, generator=g) + 0.5
    x.requires_grad_()
    neg, pos = -torch.ones(3, 4), torch.ones(3, 4)
    return step, [(x, pos, pos), (x, pos, neg), (x, neg, pos), (x, neg, neg)]
