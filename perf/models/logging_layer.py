"""Feed-forward layer that reports on itself from forward: print, logger.warning and warnings.warn."""
import logging
import warnings

import torch
from torch import nn

logger = logging.getLogger(__name__)
D, LAYERS = 128, 4


class NoisyLayer(nn.Module):
    def __init__(self, idx):
        super().__init__()
        self.idx = idx
        self.norm = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, 2 * D)
        self.fc2 = nn.Linear(2 * D, D)

    def forward(self, x):
        print(f"layer {self.idx}: input shape {tuple(x.shape)}")
        h = self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))
        logger.warning("layer %d ran in %s", self.idx, x.dtype)
        if x.shape[-1] != D:
            warnings.warn("unexpected hidden size")
        warnings.warn("NoisyLayer is deprecated", DeprecationWarning)
        return x + h


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(NoisyLayer(i) for i in range(LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def make():
    logging.getLogger(__name__).setLevel(logging.ERROR)  # keep the run quiet; the call still breaks graphs
    model = Stack().eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, 64, D, generator=g)
    return model, [(x,), (x * 2,)]
