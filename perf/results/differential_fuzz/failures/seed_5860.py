# fuzz seed 5860: mismatch: input 0: stdout differ: 'value tensor([[0.7973, 0.9719, 0.7388, 0.0697],\n        [0.6135, 0.9838, 0.6751, 0.0352],\n        [0.5659, 0.9875, 0.6655, 0.0477]], grad_fn=<SigmoidBackward0>)\n' vs 'value tensor([[0.7973, 0.9719, 0.7388, 0.0697],\n        [0.6135, 0.9838, 0.6751, 0.0352],\n        [0.5659, 0.9875, 0.6655, 0.0477]], grad_fn=<WhereBackward0>)\n'
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
        h = self.proj(x)
        for w in (1.0, 2.0):
            h = h + 1
        h = self.proj(h)
        h = h + 1; h = h * 1.0
        if (c0 < 0).any(): h = h * 2
        if not (torch.all(c0 >= 0)):
            h = torch.sigmoid(h)
        else:
            h = h * 2
        if self.flag:  # fuzz:static
            print('value', h)
        else:
            if h.is_floating_point():  # fuzz:static
                if c1.abs().max() < 5:
                    raise RuntimeError(f'bad input {h.shape}')
            else:
                h = h.relu() if c2.sum() > 0 else h * 2
        d1 = c1.detach()
        if d1.max() > 15:
            return torch.nan_to_num(h), h
        else:
            return helper(h), h


def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip(['pos', 'neg', 'nan', 'big'], ['torch.rand(3, 4, generator=g) * 0.4 + 0.6', '-(torch.rand(3, 4, generator=g) * 0.4 + 0.6)', "torch.where(torch.arange(12).reshape(3, 4) == 5, float('nan'), torch.rand(3, 4, generator=g) + 0.6)", 'torch.rand(3, 4, generator=g) * 10 + 20']))
    fn = Model()
    inputs = []
    for i, combo in enumerate(itertools.product(*[['neg', 'pos'], ['big', 'pos'], ['neg', 'pos']])):
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
#         h = self.proj(x)
#         for w in (1.0, 2.0):
#             h = h + 1
#         h = self.proj(h)
#         h = h + 1; h = h * 1.0
#         h = torch.where((c0 < 0).any(), h * 2, h)
#         h = torch.where(torch.logical_not(torch.all(c0 >= 0)), torch.sigmoid(h), h * 2)
#         if self.flag:  # fuzz:static
#             if not torch.compiler.is_compiling():
#                 print('value', h)
#         else:
#             if h.is_floating_point():  # fuzz:static
#                 if not torch.compiler.is_compiling():
#                     if c1.abs().max() < 5:
#                         raise RuntimeError(f'bad input {h.shape}')
#                 else:
#                     torch._assert_async(torch.logical_not(c1.abs().max() < 5), "bad input ")
#             else:
#                 h = torch.where(c2.sum() > 0, h.relu(), h * 2)
#         d1 = c1.detach()
#         if d1.max() > 15:
#             return torch.nan_to_num(h), h
#         else:
#             return helper(h), h
