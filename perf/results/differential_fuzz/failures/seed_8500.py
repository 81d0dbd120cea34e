# fuzz seed 8500: more-breaks: graph breaks 2 -> 3
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


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.flag = True
        self.calls = 0
        self.log = logging.getLogger('fuzz.self')

    def scale_up(self, h):
        return h * 3.0

    def forward(self, x, c0, mask=None):
        h = self.proj(x)
        h = h + 1
        def inner1(h):
            h = th.relu(h / 2 if h.dtype == th.float32 and (c0.isfinite().all()) else h.clamp(min=-1, max=1))
            return h
        h = inner1(h)
        def inner2(h):
            print('value', h)
            return h
        h = inner2(h)
        logger.warning('careful')
        return h


def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip(['pos', 'neg', 'nan', 'big'], ['torch.rand(3, 4, generator=g) * 0.4 + 0.6', '-(torch.rand(3, 4, generator=g) * 0.4 + 0.6)', "torch.where(torch.arange(12).reshape(3, 4) == 5, float('nan'), torch.rand(3, 4, generator=g) + 0.6)", 'torch.rand(3, 4, generator=g) * 10 + 20']))
    fn = Model()
    inputs = []
    for i, combo in enumerate(itertools.product(*[['nan', 'pos']])):
        x = torch.randn(3, 4, generator=g).requires_grad_()
        controls = [eval(builders[s], {"torch": torch, "g": g}) for s in combo]
        mask = torch.rand(3, 4, generator=g) > 0.3 if i % 2 else None
        inputs.append((x, *controls, mask))
    return fn, inputs

# --- safe fix ---
# import torch as th
# import logging
# import warnings
# 
# from torch import nn
# from torch.nn import functional as F
# 
# logger = logging.getLogger('fuzz')
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
#     def forward(self, x, c0, mask=None):
#         h = self.proj(x)
#         h = h + 1
#         def inner1(h):
#             h = th.relu(h / 2 if h.dtype == th.float32 and (c0.isfinite().all()) else h.clamp(min=-1, max=1))
#             return h
#         h = inner1(h)
#         def inner2(h):
#             if not th.compiler.is_compiling():
#                 print('value', h)
#             return h
#         h = inner2(h)
#         if not th.compiler.is_compiling():
#             logger.warning('careful')
#         return h
