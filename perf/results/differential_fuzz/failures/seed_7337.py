# fuzz seed 7337: mismatch: input 18: stdout differ: 'value tensor([[-2.0857, -1.0113, -0.4361, -1.5461],\n        [-1.5868, -1.1270, -3.3865, -1.1069],\n        [ 0.0874, -1.5586, -0.6843,  0.5174]], grad_fn=<SubBackward0>)\n' vs 'value tensor([[-2.0857, -1.0113, -0.4361, -1.5461],\n        [-1.5868, -1.1270, -3.3865, -1.1069],\n        [ 0.0874, -1.5586, -0.6843,  0.5174]], grad_fn=<WhereBackward0>)\n'
import torch
import logging
import warnings
from warnings import warn

from torch import nn
import torch.nn.functional as F

log_ = logging.getLogger('fuzz')


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


@torch.compile
def step(x: torch.Tensor, c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, mask=None):
    h = x * 1.0
    z = x * 1.0
    d1 = c0 * 2.0
    if (c0.sum() > 0) and (d1.sum().item() > 0):
        if h.size(-1) == 4:  # fuzz:static
            if torch.any(c1 > 0):
                z = torch.sqrt(z)
            elif h.dim() == 2 and (not (c2 > 0).all()):
                z = torch.nan_to_num(z)
            else:
                z = torch.nan_to_num(z)
        if h.is_floating_point():  # fuzz:static
            h = h - 1 if c0.min() >= 0 else h.relu()
        print('value', h)
    else:
        d2 = c2 + 0.0
        z = z + 1.5 if d2.isfinite().all() else z - 1
        h = h + (torch.sqrt(h) if (c0 < 0).any() else h.relu())
    # a comment before the test
    if (c0 < 0).any():  # why
        # inside
        h = h * 0.5 + 1  # trailing
        
    else:
        h = h.sum(-1, keepdim=True)
    if torch.isnan(c1).any():
        z = torch.tanh(z)
    elif torch.all(c1 >= 0):
        z = z.relu()
    else:
        z = z * 2
    h = h + z.mean()
    d3 = c0 + 0.0
    if torch.any(d3 > 0):
        return h - 1
    elif torch.isnan(c0).any():
        return h * 2
    else:
        return h * 2


def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip(['pos', 'neg', 'nan', 'big'], ['torch.rand(3, 4, generator=g) * 0.4 + 0.6', '-(torch.rand(3, 4, generator=g) * 0.4 + 0.6)', "torch.where(torch.arange(12).reshape(3, 4) == 5, float('nan'), torch.rand(3, 4, generator=g) + 0.6)", 'torch.rand(3, 4, generator=g) * 10 + 20']))
    fn = getattr(step, '_torchdynamo_orig_callable', step)
    inputs = []
    for i, combo in enumerate(itertools.product(*[['nan', 'neg', 'pos'], ['nan', 'neg', 'pos'], ['nan', 'neg', 'pos']])):
        x = torch.randn(3, 4, generator=g).requires_grad_()
        controls = [eval(builders[s], {"torch": torch, "g": g}) for s in combo]
        mask = torch.rand(3, 4, generator=g) > 0.3 if i % 2 else None
        inputs.append((x, *controls, mask))
    return fn, inputs

# --- safe fix ---
# import torch
# import logging
# import warnings
# from warnings import warn
# 
# from torch import nn
# import torch.nn.functional as F
# 
# log_ = logging.getLogger('fuzz')
# 
# 
# class FuzzError(Exception):
#     pass
# 
# 
# def helper(h):
#     h = h * 0.75
#     return h
# 
# 
# def eager_util(x):  # fuzz:eager-begin
#     if x.sum() > 0:
#         print('eager', x)
#         x = x * 2 if x.mean() > 0 else x
#     return x  # fuzz:eager-end
# 
# 
# @torch.compile
# def step(x: torch.Tensor, c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, mask=None):
#     h = x * 1.0
#     z = x * 1.0
#     d1 = c0 * 2.0
#     if (c0.sum() > 0) and (d1.sum().item() > 0):
#         if h.size(-1) == 4:  # fuzz:static
#             if torch.any(c1 > 0):
#                 z = torch.sqrt(z)
#             elif h.dim() == 2 and (not (c2 > 0).all()):
#                 z = torch.nan_to_num(z)
#             else:
#                 z = torch.nan_to_num(z)
#         if h.is_floating_point():  # fuzz:static
#             h = torch.where(c0.min() >= 0, h - 1, h.relu())
#         if not torch.compiler.is_compiling():
#             print('value', h)
#     else:
#         d2 = c2 + 0.0
#         z = z + 1.5 if d2.isfinite().all() else z - 1
#         h = h + (torch.sqrt(h) if (c0 < 0).any() else h.relu())
#     # a comment before the test
#     if (c0 < 0).any():  # why
#         # inside
#         h = h * 0.5 + 1  # trailing
#         
#     else:
#         h = h.sum(-1, keepdim=True)
#     if torch.isnan(c1).any():
#         z = torch.tanh(z)
#     elif torch.all(c1 >= 0):
#         z = z.relu()
#     else:
#         z = z * 2
#     h = h + z.mean()
#     d3 = c0 + 0.0
#     if torch.any(d3 > 0):
#         return h - 1
#     elif torch.isnan(c0).any():
#         return h * 2
#     else:
#         return h * 2
