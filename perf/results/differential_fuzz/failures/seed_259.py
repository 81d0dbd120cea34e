# fuzz seed 259: compiled-mismatch: input 0: compiled gradients differ: [tensor([[1., 1., 1., 1.],         [1., 1., 1., 1.],         [1., 1., 1., 1.]]), None, None] vs [tensor([[1., 1., 1., 1.],         [1., 1., 1., 1.],         [1., 1., 1., 1.]]), tensor([[0., 0., 0., 0.],         [0., 0., 0., 0.],         [0., 0., 0., 0.],         [0., 0., 0., 0.]]), tensor([0., 0
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
        self.register_buffer('perm', torch.tensor([2, 0, 1]))
        self.register_buffer('far', torch.tensor([0, 7, 1]))  # out of range: raises if its branch runs
        self.layerdrop = 0.0
        self.log = logging.getLogger('fuzz.self')

    def scale_up(self, h):
        return h * 3.0

    def forward(self, x: torch.FloatTensor, c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, mask=None):
        h = self.proj(x)
        z = x * 1.0
        for _ in range(2):
            dropout_probability1 = torch.rand([])
            if self.training and (dropout_probability1 < self.layerdrop):
                continue
            h = h * 0.5 + 1
        h = h - 1 if c0.sum().item() > 0 else h ** 2
        # a comment before the test
        d2 = c0.detach()
        if d2.sum().item() > 0:  # why
            # inside
            h = h.abs()  # trailing
            
        else:
            h = torch.ones_like(h) * 3
        z = z ** 2 if (torch.all(c0 >= 0)) and (c1.sum().item() > 0) else z - 1
        h = h ** 2
        h = h + z.mean()
        if ((c1 > 0).all()) or (torch.all(c2 >= 0)):
            return torch.nan_to_num(h), h
        else:
            return h.clamp(min=-1, max=1), h

compiled_model = torch.compile(Model())


def make():
    import itertools
    import torch
    g = torch.Generator().manual_seed(1)
    builders = dict(zip(['pos', 'neg', 'nan', 'big'], ['torch.rand(3, 4, generator=g) * 0.4 + 0.6', '-(torch.rand(3, 4, generator=g) * 0.4 + 0.6)', "torch.where(torch.arange(12).reshape(3, 4) == 5, float('nan'), torch.rand(3, 4, generator=g) + 0.6)", 'torch.rand(3, 4, generator=g) * 10 + 20']))
    fn = Model()
    inputs = []
    for i, combo in enumerate(itertools.product(*[['neg', 'pos'], ['neg', 'pos'], ['neg', 'pos']])):
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
#         self.register_buffer('perm', torch.tensor([2, 0, 1]))
#         self.register_buffer('far', torch.tensor([0, 7, 1]))  # out of range: raises if its branch runs
#         self.layerdrop = 0.0
#         self.log = logging.getLogger('fuzz.self')
# 
#     def scale_up(self, h):
#         return h * 3.0
# 
#     def forward(self, x: torch.FloatTensor, c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, mask=None):
#         h = self.proj(x)
#         z = x * 1.0
#         for _ in range(2):
#             dropout_probability1 = torch.rand([])
#             if (
#                 self.training
#                 and not (
#                     torch.compiler.is_compiling()
#                     and self.layerdrop <= 0.0
#                     and torch._assert_async(
#                         dropout_probability1 < 1.0, "keeps the draw of torch.rand"
#                     )
#                     is None
#                 )
#                 and (dropout_probability1 < self.layerdrop)
#             ):
#                 continue
#             h = h * 0.5 + 1
#         h = h - 1 if c0.sum().item() > 0 else h ** 2
#         # a comment before the test
#         d2 = c0.detach()
#         if d2.sum().item() > 0:  # why
#             # inside
#             h = h.abs()  # trailing
#             
#         else:
#             h = torch.ones_like(h) * 3
#         z = z ** 2 if (torch.all(c0 >= 0)) and (c1.sum().item() > 0) else z - 1
#         h = h ** 2
#         h = h + z.mean()
#         if torch.compiler.is_compiling() and h.is_floating_point():
#             return torch.where(torch.logical_or((c1 > 0).all(), torch.all(c2 >= 0)), torch.nan_to_num(h), h.clamp(min=-1, max=1)), torch.where(torch.logical_or((c1 > 0).all(), torch.all(c2 >= 0)), h, h)
#         elif ((c1 > 0).all()) or (torch.all(c2 >= 0)):
#             return torch.nan_to_num(h), h
#         else:
#             return h.clamp(min=-1, max=1), h
# 
# compiled_model = torch.compile(Model())
