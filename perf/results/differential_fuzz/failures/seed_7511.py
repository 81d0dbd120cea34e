# fuzz seed 7511: mismatch: input 0: gradients differ: [tensor([[-0.7184,  0.2035, -0.7786, -0.0513],         [-0.7184,  0.2035, -0.7786, -0.0513],         [-0.7184,  0.2035, -0.7786, -0.0513]]), tensor([[-0.8182, -0.4623, -2.3534,  0.9448],         [-0.8 vs []
import torch
import logging
import warnings
from warnings import warn

from torch import nn
import torch.nn.functional as F

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

    def forward(self, x: torch.FloatTensor, c0: torch.Tensor, c1: torch.Tensor, mask=None):
        h = self.proj(x)
        with torch.no_grad():
            if c0.isfinite().all():
                h = h.abs()
            else:
                pass
            n = 0
            while h.abs().max() > 4 and n < 5:
                h = h / 2
                n += 1
            if isinstance(h, torch.Tensor) and ((c0 > 0).all()):
                h = h + 0.25
            d1 = torch.clamp(c1, -100, 100)
            assert not (d1.sum() > 0), 'bad ' + 'input'
        return h


def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip(['pos', 'neg', 'nan', 'big'], ['torch.rand(3, 4, generator=g) * 0.4 + 0.6', '-(torch.rand(3, 4, generator=g) * 0.4 + 0.6)', "torch.where(torch.arange(12).reshape(3, 4) == 5, float('nan'), torch.rand(3, 4, generator=g) + 0.6)", 'torch.rand(3, 4, generator=g) * 10 + 20']))
    fn = Model()
    inputs = []
    for i, combo in enumerate(itertools.product(*[['nan', 'neg', 'pos'], ['neg', 'pos']])):
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
#     def forward(self, x: torch.FloatTensor, c0: torch.Tensor, c1: torch.Tensor, mask=None):
#         h = self.proj(x)
#         with torch.no_grad():
#             if c0.isfinite().all():
#                 h = h.abs()
#             else:
#                 pass
#             n = 0
#             while h.abs().max() > 4 and n < 5:
#                 h = h / 2
#                 n += 1
#             if isinstance(h, torch.Tensor):
#                 h = torch.where((c0 > 0).all(), h + 0.25, h)
#             d1 = torch.clamp(c1, -100, 100)
#             assert not (d1.sum() > 0), 'bad ' + 'input'
#         return h
