# fuzz seed 8477: mismatch: input 0: stdout differ: 'value tensor([[ 0.9114,  0.5169,  0.3117,  0.8713],\n        [-0.2019,  0.0839, -1.2728,  0.6317],\n        [-0.7776, -0.3131, -0.6423,  0.1917]], grad_fn=<AddBackward0>)\n' vs 'value tensor([[ 0.9114,  0.5169,  0.3117,  0.8713],\n        [-0.2019,  0.0839, -1.2728,  0.6317],\n        [-0.7776, -0.3131, -0.6423,  0.1917]], grad_fn=<WhereBackward0>)\n'
import torch
import logging
import warnings
from warnings import warn

from torch import nn
import torch.nn.functional as F



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


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.flag = True
        self.calls = 0
        self.log = logging.getLogger('fuzz.self')

    def scale_up(self, h):
        return h * 3.0

    def forward(self, x, c0, c1, c2, mask=None):
        h = x * 1.0
        z = self.proj(x)
        n = 0
        while h.abs().max() > 4 and n < 5:
            h = h / 2
            n += 1
        if h.is_floating_point() and (not (c0.min() >= 0)):
            h = h + 0.25
        print('value', h)
        def inner1(h):
            h = h.sum(-1, keepdim=True) if c1.sum().item() > 0 else torch.sigmoid(h)
            return h
        h = inner1(h)
        def inner2(h):
            if h.shape[0] > 1 and ((c1.abs().max() < 5) and (not (c1 > 0).all())):
                h = self.scale_up(h)
            else:
                h = h * 1.0
            return h
        h = inner2(h)
        h = h + z.mean()
        d3 = c2 * 2.0
        if d3.abs().max() < 5:
            return h * 2
        else:
            return torch.nan_to_num(h)


def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip(['pos', 'neg', 'nan', 'big'], ['torch.rand(3, 4, generator=g) * 0.4 + 0.6', '-(torch.rand(3, 4, generator=g) * 0.4 + 0.6)', "torch.where(torch.arange(12).reshape(3, 4) == 5, float('nan'), torch.rand(3, 4, generator=g) + 0.6)", 'torch.rand(3, 4, generator=g) * 10 + 20']))
    fn = Model()
    inputs = []
    for i, combo in enumerate(itertools.product(*[['neg', 'pos'], ['big', 'neg', 'pos'], ['big', 'pos']])):
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
# class Model(nn.Module):
#     def __init__(self):
#         super().__init__()
#         self.proj = nn.Linear(4, 4)
#         self.flag = True
#         self.calls = 0
#         self.log = logging.getLogger('fuzz.self')
# 
#     def scale_up(self, h):
#         return h * 3.0
# 
#     def forward(self, x, c0, c1, c2, mask=None):
#         h = x * 1.0
#         z = self.proj(x)
#         n = 0
#         while h.abs().max() > 4 and n < 5:
#             h = h / 2
#             n += 1
#         if h.is_floating_point():
#             h = torch.where(torch.logical_not(c0.min() >= 0), h + 0.25, h)
#         if not torch.compiler.is_compiling():
#             print('value', h)
#         def inner1(h):
#             h = h.sum(-1, keepdim=True) if c1.sum().item() > 0 else torch.sigmoid(h)
#             return h
#         h = inner1(h)
#         def inner2(h):
#             if h.shape[0] > 1 and ((c1.abs().max() < 5) and (not (c1 > 0).all())):
#                 h = self.scale_up(h)
#             else:
#                 h = h * 1.0
#             return h
#         h = inner2(h)
#         h = h + z.mean()
#         d3 = c2 * 2.0
#         if d3.abs().max() < 5:
#             return h * 2
#         else:
#             return torch.nan_to_num(h)
