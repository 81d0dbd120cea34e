"""Transformer-style block with all three patterns: an activation rescale guard, a logging call, a validation trap."""
import logging

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)
D, HEADS, LAYERS = 96, 4, 6
EXPECT_RAISE = [2]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, 4 * D)
        self.fc2 = nn.Linear(4 * D, D)

    def forward(self, x, mask):
        if not torch.all(mask.sum(-1) > 0):
            raise ValueError("every row needs at least one visible position")
        if x.abs().max() > 1e4:
            x = x * 1e-4
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])
        x = x + self.out(attn.transpose(1, 2).reshape(b, s, D))
        logger.info("block output computed")
        h = self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x + h


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))

    def forward(self, x, mask):
        for block in self.blocks:
            x = block(x, mask)
        return x


def make():
    model = Model().eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, 32, D, generator=g)
    mask = torch.ones(8, 32, dtype=torch.bool)
    mask[:, 28:] = False
    big = x.clone()
    big[0, 0, 0] = 1e7  # large activations: the rescale branch is taken (in the first block)
    empty = mask.clone()
    empty[2] = False  # a fully masked row: the validation guard raises
    return model, [(x, mask), (big, mask), (x, empty)]
